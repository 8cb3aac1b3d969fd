struct R {}
interface S {
    get(a: R, b: R)
}
