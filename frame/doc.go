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
// is awaited or read, and no buffer is taken for the body. Either breaks
// the Reader; a protocol that can refuse one frame alone (package rpc
// answers such a request with an error status) sets
// [Reader.DiscardTooLarge]: Next then returns the first bytes of a frame
// over the maximum with a [*TooLargeError], reads the rest of it through
// its buffer and drops it, and goes on with the next frame, up to a
// length of [DiscardLimit] (64 MiB, or four times the maximum if more),
// beyond which it breaks as before. A stream whose
// first bytes are a TLS ClientHello under 256 bytes, whose length prefix
// is within the limit, fails with [ErrForeignProtocol] as soon as 11 of
// them are in.
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
// rounding), and a buffer it takes new is never larger than the larger of
// the read-ahead limit and the maximum frame size (one the pool hands
// back, given up earlier by another Reader or Writer, can be up to four
// times the size asked for: that memory was already there). Two exceptions,
// each sized by what the same peer sent before, keep busy streams at a
// single copy, or close to it: a frame no longer than the previous frame
// above 512 bytes (that peer has sent that much before) gets a buffer for
// all of it at once when its length is at most the read-ahead limit, or
// less than 256 times the bytes of the frame received so far (its first
// 512 bytes, for a frame of up to 128 KiB; a larger frame grows as any
// does until 1/256 of it is in, then takes its buffer); that buffer is
// the frame's length rounded up to the pool's power-of-two class, so less
// than twice the length (and, for a frame above the read-ahead limit,
// less than 512 times the bytes received: after a frame with a 1 MiB
// payload, a like frame takes 2 MiB once 4,097 bytes of it are in); and
// a Reader that read ahead on a busy stream goes straight back to the
// read-ahead size it reached there (never above the read-ahead limit) as
// soon as a read fills its buffer again, even the inline buffer of a
// drained Reader: after a busy period at the default limit, the first
// 512 bytes of a new frame may hold 64 KiB. Neither decays, since neither
// needs to: what each lets a frame hold is bounded by the read-ahead
// limit or by that frame's own bytes, not by how much the peer sent once,
// so a peer that sent one 16 MiB frame cannot, hours later, make the
// Reader take 16 MiB for the header of another.
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
// [Reader.Next] (and [Reader.TryNext]) returns a payload that aliases the
// buffer its frame was read into, never a copy: the Reader's inline buffer
// or a pooled buffer from package pool. Either way the payload is valid
// only until the next call to Next, Wait or Reset, or a TryNext that
// returns a frame: then its bytes may be overwritten by the
// bytes that follow, or the pooled buffer goes back to its pool. Copy what must
// live longer. Build with -tags zapdebug and an expired payload is
// overwritten with 0xDB bytes, so a use after Next shows up in tests.
//
// # Writing
//
// [Writer] coalesces frames in one buffer that leaves in a single Write per
// [Writer.Flush]; a payload of at least the writev threshold goes out with
// its header without being copied (one writev on a TCP or Unix socket). [Writer.Begin] and
// [Writer.End] let an encoder append a payload straight into the output
// buffer; the length is patched in place. Neither Reader nor Writer is safe
// for concurrent use.
//
// # Benchmarks
//
// In memory, on the project machine (2 cores shared with other jobs, load
// average 10 to 14 during the run). Time is CPU time per frame: the
// task-clock (perf stat) of a test binary run with -test.benchtime Nx
// minus that of a 1x run, the benchmarks of one size interleaved, 7
// rounds, medians; ratios are medians of the per-round ratios. Throughput
// counts frame bytes (payload + 5) per CPU second. 0 allocs/op in every
// cell.
//
//	go test -c -o frame.test ./frame
//	perf stat -e task-clock ./frame.test -test.run '^$' -test.benchtime 1000000x \
//		-test.bench '^BenchmarkRead$/^mem$/^4KiB$'   # and the same with 1x
//
// Read is Reader.Next of a replayed in-memory stream; Write is
// Writer.WriteFrame to io.Discard, flushed every 32 KiB; WriteBeginEnd
// appends the payload between Begin and End. FloorCopy is io.CopyBuffer of
// the same bytes, one frame per call, through a 64 KiB buffer (the io.Copy
// floor); ReadFloorCopyAhead copies as many whole frames per call as fit
// in that buffer, as any reader that reads ahead must. The C++ frame
// codec's figures, which users compare against, come from another machine
// and are context, not a pass line (one figure was given for 64 B).
//
//	GB/s (ns per frame)     64 B          512 B          4 KiB          16 KiB         64 KiB
//	decode: Read            9.7 (7.1)     30.6 (16.9)    41.8 (98.2)    42.3 (388)     44.2 (1482)
//	  ReadFloorCopy         4.1 (16.7)    21.4 (24.2)    54.0 (76.0)    46.4 (353)     45.2 (1450)
//	  ReadFloorCopyAhead    35.7 (1.9)    39.8 (13.0)    44.0 (93.2)    44.8 (366)     42.5 (1541)
//	encode: Write           7.7 (8.9)     39.3 (13.1)    63.5 (64.6)    58.2 (281)     - (writev)
//	encode: WriteBeginEnd   7.1 (9.7)     31.8 (16.2)    60.3 (68.0)    61.4 (267)     48.9 (1340)
//	  WriteFloorCopy        3.7 (18.8)    20.0 (25.8)    53.0 (77.3)    47.0 (349)     44.8 (1464)
//	C++ frame codec encode  4.95          31.3           128            -              -
//	C++ frame codec decode  4.95          14.8           71.1           -              -
//
//	time ÷ FloorCopy        64 B   512 B  4 KiB  16 KiB  64 KiB
//	Read                    0.43   0.72   1.31   1.15    1.00
//	Read ÷ FloorCopyAhead   3.25   1.45   1.06   1.13    0.97
//	Write                   0.47   0.52   0.81   0.81    -
//	WriteBeginEnd           0.51   0.64   0.79   0.74    0.88
//
// Write at 64 KiB and up does not copy the payload (a writev on a socket;
// to io.Discard, two Writes since io.Discard is no socket) and measures
// only the call. Read at 4 KiB swings with the machine's load: seven runs within
// the hour, on this code or on the code before the session's two changes
// to Next (which moved only the small sizes), gave medians from 1.12 to
// 1.42 times FloorCopy; once the load fell to 3, 11 interleaved rounds
// gave 1.23 (96 ns against 78), and the Reader as it was at the start of
// that hour 1.33 in the same rounds. The Reader reads 4 and 16 KiB
// frames ahead into a 64 KiB buffer and returns them in place;
// ReadFloorCopyAhead shows what that costs by itself: a frame copied among
// its neighbours into a 64 KiB buffer, instead of alone into the same warm
// 4 KiB, costs a fifth more (1.18 in those quiet rounds).
// What the Reader adds to that floor is the frame cut by the end of the
// buffer, moved to its start before the next read (3 % of the bytes at 4
// KiB), and a few ns per frame. A frame larger than a quarter of the
// read-ahead limit (the 64 KiB frames here) is read once, straight into
// the buffer Next returns (1.00; with the former bufio-based Reader it was
// 2.8). A small frame costs less than the floor's Read call.
//
// BenchmarkPingPong (a frame to an echo server over loopback TCP and back,
// one at a time, as a unary call's frames) measures the idle/active cycle:
// both Readers start every frame drained, so they give their buffers back
// and take them again each time.
package frame
