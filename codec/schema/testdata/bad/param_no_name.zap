struct R {}
interface S {
    get(R)
}
