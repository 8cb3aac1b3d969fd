struct A
    X bytes_fixed[4
