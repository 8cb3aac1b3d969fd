interface S {
    ping()
struct A
    X u8
