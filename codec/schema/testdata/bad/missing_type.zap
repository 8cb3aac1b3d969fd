struct A
    X
