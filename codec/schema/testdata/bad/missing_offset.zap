struct A {
    X u8 @
}
