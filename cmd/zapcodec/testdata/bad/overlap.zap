package p
struct A {
    X u32 @0
    Y u16 @2
}
