# The payload of the rpc.json fixture envelopes: a root object holding one u64.
struct Num
    N u64

interface T {
    first(req: Num) returns (resp: Num)
}
