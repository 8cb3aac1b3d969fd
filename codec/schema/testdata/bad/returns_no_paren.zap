struct R {}
interface S {
    ping() returns R
}
