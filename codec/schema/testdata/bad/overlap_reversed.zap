struct A {
    Late u16 @8
    Early u64 @2
}
