// Package frame reads and writes length-prefixed frames over an
// io.Reader / io.Writer: the transport frames of ZAP RPC (docs/wire.md §7).
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
// next header lands in the inline buffer again: in a stream of large
// frames, at most the 512 inline bytes of each are moved.
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
// On a *net.TCPConn or *net.UnixConn (on unix), a drained Reader whose
// last frame above 512 bytes was at most the read-ahead limit (or that
// read ahead on a busy stream) reads through the socket's readiness
// (syscall.RawConn): it takes a pooled buffer of that size (the credit
// above, or the read-ahead size it grew to) only once the socket is
// readable, and gives it back if the socket turns out not to be, so such
// frames still arrive in one read and the waiting Reader still holds
// nothing. Read deadlines
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
// live longer. Build with -tags zapdebug and an expired payload is
// overwritten with 0xDB bytes, so a use after Next shows up in tests.
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
// average 3 to 7 during the runs, so single figures are noisy). Each cell
// is the median of 5 rounds; a round runs every benchmark once, so a
// benchmark and its floor are measured close together, and the ratios are
// medians of the per-round ratios:
//
//	for i in 1 2 3 4 5; do go test -run '^$' -bench /mem/ -benchtime 150ms -count 1 -benchmem ./frame; done
//
// Time per frame and throughput in GB/s (frame bytes: payload + 5),
// payload size in columns; 0 allocs/op in every cell. "mem" replays an
// in-memory stream (a reader that fills every read) or writes to
// io.Discard. FloorCopy is io.CopyBuffer of the same bytes through a 64
// KiB buffer with no framing (the io.Copy floor); FloorHand is the 5-byte
// header and io.ReadFull by hand over a bufio.Reader of 64 KiB into a
// preallocated body (for writes: header and payload appended to a slice
// by hand). Write mem at 64 KiB and up is a writev to io.Discard, so it
// measures only the call.
//
//	                      64B            512B           4KiB           16KiB          64KiB          1MiB
//	Read mem              8ns (8.1G)     19ns (26.9G)   94ns (43.5G)   400ns (41.0G)  1.4µs (45.3G)  24.8µs (42.2G)
//	ReadFloorCopy mem     16ns (4.2G)    24ns (21.5G)   70ns (58.9G)   326ns (50.3G)  1.3µs (48.8G)  23.1µs (45.4G)
//	ReadFloorHand mem     17ns (4.1G)    32ns (16.3G)   145ns (28.3G)  608ns (27.0G)  2.5µs (25.8G)  23.5µs (44.7G)
//	Write mem             8ns (8.4G)     13ns (39.9G)   59ns (69.4G)   263ns (62.3G)  33ns (-)       33ns (-)
//	WriteBeginEnd mem     10ns (7.1G)    14ns (36.1G)   62ns (66.4G)   297ns (55.2G)  1.3µs (48.9G)  28.3µs (37.1G)
//	WriteFloorCopy mem    19ns (3.6G)    24ns (21.2G)   79ns (51.8G)   423ns (38.7G)  1.4µs (46.4G)  29.0µs (36.1G)
//	WriteFloorHand mem    4ns (17.6G)    10ns (49.4G)   63ns (65.1G)   236ns (69.3G)  1.3µs (51.8G)  25.2µs (41.6G)
//
//	ratio to FloorCopy    64B   512B  4KiB  16KiB 64KiB 1MiB
//	Read mem              0.52  0.79  1.35  1.23  1.08  1.09
//	Write mem             0.42  0.53  0.75  0.63  -     -
//	WriteBeginEnd mem     0.53  0.59  0.81  0.70  0.95  1.02
//
// Read mem at 64 KiB was 2.8 times the io.Copy floor with the former
// bufio-based Reader (1.82 in the same rounds on this machine): the bytes
// went stream → bufio → pooled body. Now a frame is read once, into the
// buffer whose slice Next returns (1.08). Frames of 4 and 16 KiB are read
// ahead into a 64 KiB buffer and returned in place; what they lose to the
// floor is the part of a frame cut by the end of the buffer, moved to its
// start before the next read, and a destination four times the size of
// the floor's (the floor copies each frame into the same warm 4 KiB). A
// small frame costs less than the floor's Read call.
//
// BenchmarkPingPong (a frame to an echo server over loopback TCP and back,
// one at a time, as a unary call's frames) measures the idle/active cycle:
// both Readers start every frame drained, so they give their buffers back
// and take them again each time.
package frame
