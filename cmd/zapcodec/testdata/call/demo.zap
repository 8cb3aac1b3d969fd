# The schema of zapcodec call's tests (call_test.go serves it).
package demo

struct Req
    Name text
    N    u32

struct Reply
    Message text
    N       u32
    Data    bytes

interface Demo {
    hello(req: Req) returns (resp: Reply)
    count(req: Req) returns (stream Reply)
    fail(req: Req) returns (resp: Reply)
    ping()
    upload(stream Req) returns (resp: Reply)
    chat(stream Req) returns (stream Reply)
    garbage() returns (resp: Reply)
    hang(req: Req) returns (resp: Reply)
}

interface Admin {
    ping()
    stop(req: Req)
}
