// Package pool hands out reusable byte buffers for frames: [SizedPool]
// keeps them by power-of-two capacity class. Package frame keeps its read
// and write buffers here.
//
// # Ownership
//
// [SizedPool.Get] hands the caller a buffer that nobody else references;
// the caller owns it until it calls [SizedPool.Put], and after Put the
// buffer is gone: neither the *Buffer nor any slice taken from its B field
// may be read or written again, because the next Get (in any goroutine) may
// hand the same memory to someone else. Put exactly once; never Put a
// buffer that came from somewhere other than Get.
//
// Package frame follows these rules internally: a payload that Reader.Next
// returned in a pooled buffer may be Put by the next call to Next, Wait or
// Reset, which is why such a payload is valid only until then.
//
// # Why not one bytebufferpool.Pool
//
// [Buffer] is github.com/valyala/bytebufferpool's ByteBuffer, but a
// SizedPool does not keep buffers in a bytebufferpool.Pool. That pool is
// designed for one kind of use: it counts the lengths given back to it,
// and after every 42,000 Puts it calibrates, taking the most common length
// for new buffers and dropping returned buffers above the 95th percentile.
// For frame buffers that is the wrong trade: a stream of small frames with
// a rare large one would allocate the large buffer afresh every time, and
// a small Get could be handed a large buffer. BenchmarkSizedPoolMixed
// (one 300 KiB buffer per 32 Gets of 5,000 bytes) shows it: 0 B/op with
// SizedPool, while BenchmarkBytebufferpoolMixed, the same work on one
// calibrated bytebufferpool.Pool, reports about 10,000 B/op: the 300 KiB
// buffer allocated afresh every 32 Gets. Inside one size class
// calibration has nothing to learn (the capacities of a class are within
// a factor of two of each other), so each class is a plain sync.Pool, not
// a bytebufferpool.Pool that would count every Put for nothing. Like any
// sync.Pool, a class gives its idle buffers up to the garbage collector, so
// a process that stops using large frames stops holding them.
//
// # Catching use after Put
//
// Reading memory after it was returned is the classic bug of pooled
// libraries: it passes tests and corrupts data in production. Build with
// the tag zapdebug (go test -tags zapdebug ./...) and Put overwrites the
// whole capacity of a returned buffer with 0xDB bytes before pooling it,
// and package frame overwrites a payload when it becomes invalid, so a
// late reader sees 0xDB bytes instead of plausible data. The tag also
// makes Put panic on a second Put of a buffer that no Get took back since
// (which would hand the same memory to two later Gets), found by the
// poison itself: Get marks the buffers it hands out, and a Put that finds
// a whole capacity of 0xDB bytes has a buffer that is still in the pool.
// (A caller that filled a whole buffer with 0xDB bytes would be taken for
// one.) Without the tag it costs one atomic load per Put.
package pool
