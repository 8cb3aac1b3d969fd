package p
struct A
    name text
    Name text
