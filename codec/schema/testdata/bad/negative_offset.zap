struct A {
    X u8 @-4
}
