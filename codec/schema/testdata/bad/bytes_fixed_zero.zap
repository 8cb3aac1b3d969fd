struct A
    X bytes_fixed[0]
