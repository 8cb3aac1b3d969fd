struct R {}
interface S {
    get(req: list<R>)
}
