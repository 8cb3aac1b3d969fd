type A = u8
struct A
    X u8
