struct R {}
interface S {
    call(req: R)
    call()
}
