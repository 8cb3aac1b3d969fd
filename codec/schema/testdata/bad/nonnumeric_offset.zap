struct A {
    X u8 @four
}
