struct A
    X list<bytes_fixed[4]>
