struct A
    X list<list<u8>>
