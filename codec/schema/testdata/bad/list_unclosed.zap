struct A
    X list<u8
