struct A
    X struct
