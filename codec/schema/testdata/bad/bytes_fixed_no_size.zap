struct A
    X bytes_fixed
