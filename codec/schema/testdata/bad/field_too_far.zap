struct A
    X u8 @16777216
