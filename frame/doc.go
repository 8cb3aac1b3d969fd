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
// Memory follows the bytes received, never a declared length. A Reader
// reads into an inline 512-byte buffer whenever it starts with nothing
// buffered (between frames), so a Reader blocked waiting for its peer
// holds no pooled buffer. A pooled buffer is taken only when the buffer in
// use is full and more bytes are needed: at first 4 KiB, then at most 4
// times the bytes it holds (or the whole frame when that is at most twice
// as much), up to the frame's length; a busy stream's read-ahead grows the
// same way up to [WithBufferSize]. So a peer that declares 16 MiB and
// sends one byte costs nothing beyond the Reader itself, and in general a
// Reader holds at most max(32 KiB, 32 times the bytes received), bounded
// by the larger of the read-ahead limit and the maximum frame size (the
// factor includes the pool's power-of-two rounding). One exception, to
// keep steady streams of large frames at one copy: a frame no longer than
// the previous frame above 512 bytes gets its whole buffer at once (the
// peer has just sent that much). The pooled buffer goes back to the pool
// when the Reader is drained (at the next Next).
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
