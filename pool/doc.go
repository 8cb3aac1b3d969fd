// Package pool hands out reusable memory for frames and messages: byte
// buffers backed by github.com/valyala/bytebufferpool and reusable
// codec.Builders.
//
// # Ownership
//
// Get hands the caller a buffer that nobody else references; the caller owns
// it until it calls Put, and after Put the buffer is gone: neither the
// *Buffer nor any slice taken from its B field may be read or written again,
// because the next Get (in any goroutine) may hand the same memory to someone
// else. Put exactly once; never Put a buffer that came from somewhere other
// than Get. The same rules hold for builders (GetBuilder / PutBuilder).
//
// Package frame follows these rules internally: a payload that Reader.Next
// returned in a pooled buffer is Put by the next call to Next, which is why
// such a payload is valid only until then.
//
// # Catching use after Put
//
// Reading memory after it was returned is the classic bug of pooled
// libraries: it passes tests and corrupts data in production. With poisoning
// on, Put overwrites the whole capacity of a returned buffer with
// [PoisonByte] before pooling it, and package frame overwrites a payload
// when it becomes invalid, so a late reader sees 0xDB bytes instead of
// plausible data. Turn it on for a whole test binary with the build tag
// zapdebug (go test -tags zapdebug ./...), or from a test with
// [SetPoison]. It costs one atomic load per Put when off.
package pool
