package p
struct A
    X nope
