package p
struct A
    X u8
    Y Missing
