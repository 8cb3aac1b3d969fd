struct A {
    X u8
    X u16
}
