struct A {
    X u8 @0x10
}
