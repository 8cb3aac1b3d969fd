struct A
    X u32
    Y u8 @2
