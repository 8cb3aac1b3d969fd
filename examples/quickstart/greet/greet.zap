# The README's quick start: a service with one method.
package greet

struct HelloRequest
    Name text

struct HelloReply
    Message text

interface Greeter {
    hello(req: HelloRequest) returns (resp: HelloReply)
}
