struct A {
    X u64 @0
    Y u32 @4
}
