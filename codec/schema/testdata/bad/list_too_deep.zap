struct A
    X list<list<list<list<list<list<list<list<list<u8>>>>>>>>>
