type bs = list<u8>
struct A
    X list<bs>
