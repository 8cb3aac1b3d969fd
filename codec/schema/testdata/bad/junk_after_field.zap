struct A {
    X u8 @0 extra
}
