struct A
    X list
