type hash = bytes_fixed[32]
struct R {}
interface S {
    get(req: R) returns (resp: hash)
}
