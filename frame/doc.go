// Package frame reads and writes length-prefixed frames over an
// io.Reader / io.Writer: the transport frames of ZAP RPC (WIRE.md §6).
//
// # Layout
//
// The canonical transport frame (the default):
//
//	+----------------+------+----------------------+
//	| u32 LE length  | kind | envelope             |
//	+----------------+------+----------------------+
//	   4 bytes         1      length-1 bytes
//
// length counts the kind byte, so 0 is a protocol error ([ErrEmptyFrame])
// and 1 is a kind with an empty envelope. The ZAP-over-HTTP framing
// ([WithHTTPFraming]) is a big-endian u32 length followed by the message,
// with no kind byte.
//
// # Limits
//
// A length prefix above the maximum frame size ([WithMaxFrameSize], default
// 16 MiB) fails with [ErrFrameTooLarge], and a canonical length of 0 with
// [ErrEmptyFrame], as soon as the 4 length bytes are in: no further byte
// is awaited or read, and no buffer is taken for the body.
//
// # Memory
//
// Memory follows the bytes received, never a declared length, and buffers
// come from pools (package pool, one power-of-two size class per pool)
// while data flows and go back when it stops, as fasthttp does.
//
// Reader. A Reader has an inline 512-byte buffer (part of the Reader,
// about 700 bytes in all). Whenever Next starts with nothing buffered
// (between frames: every frame returned, nothing read ahead), it first
// gives its pooled buffer back, then reads into the inline buffer, so a
// Reader blocked waiting for its peer holds no pooled buffer, however
// large the last frame was. A frame that arrives whole in the inline
// buffer (a typical RPC request or answer) is returned from it without
// touching a pool. A pooled buffer is taken only when the buffer in use
// is full and more bytes are needed: at first 4 KiB, then at most 4 times
// what it holds (or the whole frame when that is at most twice as much),
// up to the frame's length; the read-ahead of a busy stream (a stream
// whose reads fill the buffer) grows the same way up to [WithBufferSize].
// Each growth copies the bytes held once; the sizes grow by 4 and the
// last step is at least 2, so the copies add up to less than two thirds
// of the frame (one extra copy at most, as the ×2 growth of append would
// cost). A frame larger than a quarter of the read-ahead limit (16 KiB by
// default) is read exactly (nothing of the next frame with it), so the
// next header lands in the inline buffer again and the read-ahead start
// of a large frame is never moved.
//
// So a peer that declares 16 MiB and sends one byte costs no heap beyond
// the Reader itself; a frame in progress holds at most max(32 KiB, 32
// times the bytes received) (the factor includes the pool's power-of-two
// rounding), and never more than the larger of the read-ahead limit and
// the maximum frame size. One exception keeps steady streams of large
// frames at a single copy: a frame no longer than the previous frame
// above 512 bytes gets a buffer of its whole length at once (that peer has
// just sent that much).
//
// On a *net.TCPConn or *net.UnixConn (on unix), a drained Reader that has
// lately seen frames above 512 bytes (or read ahead on a busy stream)
// reads through the socket's readiness (syscall.RawConn): it takes a
// pooled buffer of that size only once the socket is readable, and gives
// it back if the socket turns out not to be, so such frames still arrive
// in one read and the waiting Reader still holds nothing. Read deadlines
// and Close work as with Read; errors come wrapped in *net.OpError. Other
// readers (TLS, net.Pipe, wrappers) read the inline buffer first.
//
// Writer. A Writer holds a pooled buffer only while frames are pending: it
// takes one when a frame is added to an empty Writer and gives it back
// whenever a write leaves nothing pending, so an idle Writer is its
// struct alone (about 200 bytes). See [Writer] for the sizes it asks for.
//
// Neither needs a call to give memory back: a connection's read loop that
// calls Next again and a writer that flushes are enough. [Reader.Held]
// and [Writer.Held] report the pooled capacity held, for tests and
// metrics.
//
// # Defaults
//
// 512 bytes inline: large enough for the frames of small calls (a call
// with a 64-byte argument is about 100 bytes on the wire), so that
// ping-pong traffic of small calls never touches a pool; small enough that
// an idle Reader and Writer together stay under 1 KiB. 4 KiB first pooled
// buffer: 256 peers that each stall in a large frame after filling the
// inline buffer cost 1 MiB. 64 KiB read-ahead and coalescing limit
// ([DefaultBufferSize]): one read or write syscall per 64 KiB keeps the
// syscall cost of a busy stream small beside copying the bytes (the
// fixed buffers of earlier versions had that size too); since buffers are
// pooled only while data flows, idle connections do not pay for it, and a
// busy one reaches it only by growth from 4 KiB. 64 KiB writev threshold
// and 16 MiB maximum frame: see [DefaultWritevThreshold] and
// [DefaultMaxFrameSize].
//
// # Validity of a payload
//
// [Reader.Next] returns a payload that aliases the buffer its frame was
// read into, never a copy: the Reader's inline buffer or a pooled buffer
// from package pool. Either way the payload is valid only until the next
// call to Next (or Reset): then its bytes may be overwritten by the bytes
// that follow, or the pooled buffer goes back to its pool. Copy what must
// live longer. Build with -tags zapdebug (or call pool.SetPoison(true) in
// a test) and an expired payload is overwritten with 0xDB bytes, so a use
// after Next shows up in tests.
//
// # Writing
//
// [Writer] coalesces frames in one buffer that leaves in a single Write per
// [Writer.Flush]; a payload of at least the writev threshold goes out with
// its header through net.Buffers without being copied. [Writer.Begin] and
// [Writer.End] let an encoder append a payload straight into the output
// buffer; the length is patched in place. Neither Reader nor Writer is safe
// for concurrent use.
//
// # Benchmarks
//
// Measured on the project machine (2 cores, shared with other jobs: load
// average 6 to 13 throughout, so figures are noisy; each cell is the best of
// 9 samples from three invocations of):
//
//	go test -run x -bench . -benchtime 200ms -count 3 ./frame
//
// Time per frame and throughput in MB/s (G: GB/s), payload size in
// columns; 0 allocs/op in every cell. "mem" replays an in-memory stream or writes to io.Discard; "tcp" is
// a loopback TCP connection. FloorCopy is io.CopyBuffer of the same bytes
// with no framing; FloorHand is the 5-byte header and io.ReadFull by hand
// over a bufio.Reader of the same size (for writes: header and payload
// appended to a slice by hand). Write mem at 64 KiB and up is a writev to
// io.Discard, so it measures only the call.
//
//	ns/op (MB/s)                       64B            512B            4KiB           64KiB            1MiB
//	Read mem                   28ns (2483)     53ns (9803)   201ns (20.4G)    7.6µs (8650)  90.9µs (11.5G)
//	ReadFloorCopy mem          30ns (2333)    32ns (16.3G)   290ns (14.2G)   2.7µs (24.0G)  61.0µs (17.2G)
//	ReadFloorHand mem          20ns (3517)    37ns (14.0G)   378ns (10.8G)    7.0µs (9371)  82.0µs (12.8G)
//	Write mem                  11ns (6238)    16ns (32.9G)    61ns (67.7G)        16ns (-)        16ns (-)
//	WriteBeginEnd mem           9ns (7429)    15ns (34.8G)    76ns (54.1G)   1.8µs (37.1G)  49.5µs (21.2G)
//	WriteFloorCopy mem         22ns (3127)    24ns (21.6G)   217ns (18.9G)   2.8µs (23.6G)  62.3µs (16.8G)
//	WriteFloorHand mem         5ns (13.9G)     9ns (55.1G)    55ns (74.2G)   1.5µs (42.4G)  56.2µs (18.7G)
//	Read tcp                    70ns (992)    287ns (1801)    1.5µs (2776)   28.0µs (2343)  623.8µs (1681)
//	ReadFloorCopy tcp          444ns (155)     655ns (789)    2.3µs (1817)   31.0µs (2114)  474.3µs (2211)
//	ReadFloorHand tcp          50ns (1379)    281ns (1840)    2.7µs (1516)   41.5µs (1580)  497.4µs (2108)
//	Write tcp                  29ns (2381)    275ns (1882)    2.2µs (1879)   33.4µs (1961)  475.5µs (2205)
//	WriteBeginEnd tcp          39ns (1772)    255ns (2030)    2.1µs (1914)   35.0µs (1870)  596.9µs (1757)
//	WriteFloorCopy tcp          974ns (71)     1.0µs (508)    2.7µs (1508)   43.4µs (1509)  688.0µs (1524)
//	WriteFloorHand tcp         41ns (1673)    252ns (2049)    2.2µs (1865)   37.0µs (1772)  629.3µs (1666)
//
// Read mem of 64-byte frames: 36 M frames/s (Read tcp: 14 M frames/s). A
// frame larger than the read buffer (64 KiB and up with the default
// buffer) costs two copies of the bytes bufio read ahead (stream to buffer,
// buffer to the pooled body), hence Read mem at 64 KiB trailing the
// single-copy io.Copy floor in memory; over TCP it matches the floors.
// WithBufferSize above the frame size keeps such frames on the zero-copy
// path.
package frame
