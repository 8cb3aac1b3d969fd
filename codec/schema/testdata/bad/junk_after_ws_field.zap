struct A
    X u8 extra
