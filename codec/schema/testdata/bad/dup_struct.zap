struct A
    X u8
struct A
    Y u8
