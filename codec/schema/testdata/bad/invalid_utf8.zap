struct A
    X u8 # ok
    ÿ
