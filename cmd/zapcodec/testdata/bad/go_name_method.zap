package p
struct A {}
interface S {
    getA(req: A)
    GetA(req: A)
}
