struct A
    X list<>
