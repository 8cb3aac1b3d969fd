package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/pool"
)

// bodies holds the pooled buffers of Readers and Writers, by power-of-two
// size class.
var bodies pool.SizedPool

// Memory policy of a Reader (see "Memory" in the package doc).
const (
	// smallSize is the Reader's inline buffer: a read that starts with
	// nothing buffered (between frames) goes there, so a Reader blocked
	// waiting for a peer holds no pooled buffer. Frames that fit it (most
	// RPC requests and answers) are returned from it without touching a
	// pool.
	smallSize = 512

	// minChunk is the first pooled buffer a Reader takes when its buffer is
	// full and more bytes are needed: 4 KiB.
	minChunk = 4 << 10

	// growFactor: a full buffer is replaced by one at most growFactor times
	// as large (before rounding to the pool's power-of-two class), so the
	// memory a Reader holds follows the bytes it received.
	growFactor = 4

	// creditFactor: a frame no longer than the previous frame above
	// smallSize (the credit) takes a buffer for all of it at once (its
	// length rounded up to the pool's power-of-two class: less than twice
	// that) when that length is at most the read-ahead limit, or less than
	// creditFactor times the bytes of it the Reader holds: so the credit
	// speeds a large frame's buffer up but never lets it run ahead of the
	// bytes received by more than twice that factor (rounding included),
	// however long ago it was earned.
	// 256: the first 512 bytes of a frame (a full inline buffer) bring a
	// frame of up to 128 KiB, twice the default read-ahead limit, into its
	// own buffer at once (a 64 KiB payload's frame is 5 bytes over the
	// limit), and a larger one after at most 1/256 of it was moved, in
	// the steps of growFactor.
	creditFactor = 256
)

// Reader reads length-prefixed frames from a stream. Create it with
// NewReader. A Reader must not be copied and is not safe for concurrent
// use; one goroutine (a connection's read loop) calls Next.
//
// Errors come in two classes. A protocol error (ErrFrameTooLarge,
// ErrEmptyFrame), the end of the stream (io.EOF, io.ErrUnexpectedEOF) or
// an underlying reader that returns a count outside 0..len(p) breaks the
// Reader: every later Next returns the same error (but for a frame over
// the maximum on a Reader set with DiscardTooLarge, refused alone). An error of
// the underlying reader (a read deadline, a reset connection) is returned
// as is and loses nothing: the next call to Next resumes where the stream
// stopped, even inside a large body, so a read loop may retry after
// os.ErrDeadlineExceeded. Reset makes any Reader usable on a new stream.
//
// Memory: a Reader holds a pooled buffer only while bytes it has read wait
// in it (read ahead, or part of a frame); see "Memory" in the package doc
// for the exact rules.
type Reader struct {
	_ noCopy

	src     io.Reader
	raw     *rawSource   // readiness-first reads of a TCP or Unix socket; nil for other readers
	buf     []byte       // small[:], or big.B[:cap(big.B)]
	big     *pool.Buffer // pooled backing of buf; nil while buf is small
	r, w    int          // buf[r:w] was read and not yet returned by Next
	payload []byte       // the last payload returned, kept only while poisoning is on
	bodies  *pool.SizedPool
	max     int  // largest accepted length prefix
	rsize   int  // read-ahead limit and large-frame threshold (WithBufferSize)
	http    bool // big-endian length, no kind byte
	// fast is max while the one-compare fast path of Next, TryNext and
	// Ready applies (the canonical framing, no sticky error), else 0: a
	// length prefix n is one the fast path takes exactly when n-1 <
	// fast as a uint32 (a length of 0 wraps around to the largest
	// value). Set by NewReader and Reset, cleared by fail.
	fast   uint32
	off    int  // offset of the payload in a frame: 5 canonical, 4 HTTP
	full   bool // the last read filled all the space it was offered
	raCap  int  // largest read-ahead buffer used so far (<= rsize)
	credit int  // length of the last completed frame larger than smallSize
	rerr   error
	err    error  // sticky error
	start  uint64 // received at the last Reset: where the stream began

	// Reading past frames over the maximum (DiscardTooLarge): head is
	// how many bytes of such a frame's envelope Next returns, 0 when the
	// mode is off; skip is how many bytes of the frame Next refused are
	// still to be read and dropped, skipped how many were read so far
	// (its header included, for Buffered).
	head    int
	skip    int
	skipped int

	received atomic.Uint64 // bytes read from src, for Received
	// framed is the number of bytes of the stream up to the end of the
	// last frame Next returned, as of the latest read from src, for
	// Framed: set as a read begins (received less the bytes buffered past
	// that frame), so that Next does no work for it per frame.
	framed atomic.Uint64

	small [smallSize]byte
}

// NewReader returns a Reader of frames from r. Options: WithMaxFrameSize,
// WithBufferSize (the read-ahead limit, default 64 KiB), WithHTTPFraming.
// It allocates only the Reader (about 700 bytes, its inline buffer
// included; on a *net.TCPConn or *net.UnixConn about 150 bytes more for
// readiness-first reads, see "Memory" in the package doc); buffers come
// from pools as bytes arrive. The Reader does its own buffering: do not
// wrap r in a bufio.Reader (it would work, but copy every byte once
// more).
func NewReader(r io.Reader, opts ...Option) *Reader {
	o := buildOptions(opts)
	fr := &Reader{
		src:    r,
		max:    o.maxFrameSize,
		rsize:  o.bufferSize,
		http:   o.http,
		off:    5,
		bodies: &bodies,
	}
	if o.http {
		fr.off = 4
	}
	fr.fast = fr.fastLimit()
	fr.buf = fr.small[:]
	fr.raw = newRawSource(fr, r)
	return fr
}

// Reset releases the current payload, gives back the pooled buffer,
// drops buffered bytes and an interrupted frame, clears a sticky error and
// makes fr read from r, keeping its options.
func (fr *Reader) Reset(r io.Reader) {
	fr.release()
	fr.dropBig()
	fr.src = r
	if fr.raw == nil || fr.raw.src != r {
		fr.raw = newRawSource(fr, r)
	}
	fr.r, fr.w = 0, 0
	fr.full, fr.raCap, fr.credit = false, 0, 0
	fr.rerr, fr.err = nil, nil
	fr.skip, fr.skipped = 0, 0
	fr.fast = fr.fastLimit()
	fr.start = fr.received.Load()
}

// fastLimit is what fast holds while the Reader is not broken: max in
// the canonical framing, 0 (no fast path) in the HTTP framing, whose
// length is big-endian and whose frames have no kind byte.
func (fr *Reader) fastLimit() uint32 {
	if fr.http {
		return 0
	}
	return uint32(fr.max) // at most maxSize, 2^32-1
}

// Buffered returns the number of bytes taken from the stream that no Next
// has returned yet: bytes read ahead, or the part read so far of a frame
// interrupted by an error; while the Reader reads past a frame over the
// maximum frame size (see [Reader.DiscardTooLarge]), the bytes of that
// frame read so far, its header included. Zero means the Reader stands
// exactly between two frames with nothing read ahead. A server can use
// Buffered() == 0 after handling a frame as the moment to flush its
// Writer: no further request is already waiting; and Buffered() != 0 as
// the sign that a frame has begun and not ended (to bound its time).
func (fr *Reader) Buffered() int { return fr.w - fr.r + fr.skipped }

// Held returns the capacity of the pooled buffer the Reader holds now, 0
// when it holds none (its inline 512-byte buffer is not counted). The
// current payload may alias it. Between frames with nothing buffered, the
// next Next gives the buffer back before it reads, so a Reader blocked in
// Next waiting for a new frame holds none. For tests and metrics.
func (fr *Reader) Held() int {
	if fr.big == nil {
		return 0
	}
	return cap(fr.big.B)
}

// Ready reports whether the next call to Next returns without reading from
// the stream: a whole frame (or a protocol error, or the sticky error) is
// already buffered. A server that runs handlers in its read loop can use
// !Ready() as the moment to flush: Next is about to block. (TryNext
// takes such a frame in the same look at its header.)
func (fr *Reader) Ready() bool {
	// The common case inline (a read loop asks after every frame): a
	// canonical length within the limit, as Next decides it, on a Reader
	// that is not broken (see fast).
	if b := fr.buf[fr.r:fr.w]; len(b) >= 4 {
		if n := binary.LittleEndian.Uint32(b); n-1 < fr.fast {
			return int(n) <= len(b)-4
		}
	}
	return fr.ready()
}

// PeekKind returns the kind byte of the next frame when that frame is
// buffered whole (Next would return it without reading), in the
// canonical framing; ok is false otherwise (nothing or part of a frame
// buffered, a length Next would refuse, the Reader broken, or the HTTP
// framing). It reads nothing and leaves the payload of the last Next
// valid. A read loop that answers a run of small frames (pings, say)
// uses it to queue the answers of the frames already buffered and write
// them once, not once each.
func (fr *Reader) PeekKind() (kind byte, ok bool) {
	if b := fr.buf[fr.r:fr.w]; len(b) >= 5 {
		if n := binary.LittleEndian.Uint32(b); n-1 < fr.fast && int(n) <= len(b)-4 {
			return b[4], true
		}
	}
	return 0, false
}

// TryNext is Next for a frame that is already buffered whole: when Next
// would return a frame without reading from the stream, TryNext returns
// that frame, with the same payload rules (valid until the next Next,
// TryNext that returns one, Wait or Reset), and ok true. Otherwise it
// returns ok false and changes nothing, the payload of the last frame
// included: nothing or part of a frame is buffered (Next would read),
// or Next would fail (the Reader is broken, or the next length is one
// Next refuses: then Ready is true), or the HTTP framing, which it
// leaves to Next. A read loop calls it first and, when it returns
// false, does what it does before a read that may block (flush what it
// owes, see Ready) and calls Next: one look at the frame's header
// instead of Ready's and then Next's.
func (fr *Reader) TryNext() (kind byte, payload []byte, ok bool) {
	// Next's first lines, with ok for the fallback.
	r := fr.r // kept: fr.r is loaded once
	if b := fr.buf[r:fr.w]; len(b) >= 5 {
		if n := binary.LittleEndian.Uint32(b); n-1 < fr.fast && int(n) <= len(b)-4 {
			fr.release()
			t := int(n) + 4
			fr.r = r + t
			if t > smallSize {
				fr.credit = t
			}
			payload = b[5:t:t]
			if poison.Enabled() {
				fr.payload = payload // for release to poison
			}
			return b[4], payload, true
		}
	}
	return 0, nil, false
}

// ready is Ready for every case.
func (fr *Reader) ready() bool {
	if fr.err != nil {
		return true
	}
	avail := fr.w - fr.r
	if avail < 4 {
		return false
	}
	t, err := fr.total(fr.buf[fr.r:fr.w])
	if err != nil && fr.head != 0 && fr.pastable(err) {
		// A frame over the maximum to read past: Next returns at once
		// once its head is in (see tooLarge), and reads until then.
		return avail >= fr.off+min(fr.envLen(), fr.head)
	}
	return err != nil || avail >= t
}

// Wait returns once at least one byte of the next frame is buffered,
// reading once from the stream when none is, without waiting for the
// rest of the frame. It returns at once when bytes are already buffered
// (then Buffered() > 0) or the Reader is broken (the sticky error). A
// read loop calls it between frames to learn when a frame begins: it can
// then wait for a new frame with a long (idle) deadline, and give the
// frame, once it has begun, a short one for its remaining bytes.
//
// Like Next, Wait ends the payload the last Next returned (its memory
// may be reused by the read). Its errors are Next's: io.EOF when the
// stream ends cleanly (sticky, as is a protocol error), or the error of
// the underlying reader, after which Wait or Next may be called again;
// nothing is lost.
func (fr *Reader) Wait() error {
	if fr.err != nil {
		return fr.err
	}
	if fr.w > fr.r {
		return nil
	}
	fr.release()
	if fr.skip != 0 {
		// The rest of a frame over the maximum first: it is no new frame.
		if err := fr.discard(); err != nil {
			return err
		}
	}
	if err := fr.fill(4); err != nil {
		if err == io.EOF {
			_, _, err = fr.fail(io.EOF)
		}
		return err
	}
	return nil
}

// total returns the length of the frame whose header starts h (at least 4
// bytes): the 4-byte length prefix plus the length it announces. It fails
// on a length of 0 (canonical framing) or one above the maximum, decided
// on the 4 length bytes alone.
func (fr *Reader) total(h []byte) (int, error) {
	var n uint32
	if fr.http {
		n = binary.BigEndian.Uint32(h)
	} else {
		n = binary.LittleEndian.Uint32(h)
		if n == 0 {
			return 0, ErrEmptyFrame
		}
	}
	// Compared as unsigned: where an int has 32 bits, a length of 2^31 or
	// more is negative as an int. The maximum is at most maxSize, so 4+n
	// fits in an int.
	if uint64(n) > uint64(fr.max) {
		return 0, fr.foreign(fmt.Errorf("%w (len:%d max:%d)", ErrFrameTooLarge, n, fr.max))
	}
	return 4 + int(n), nil
}

// Next reads the next frame and returns its kind byte and payload (the
// envelope; in HTTP framing, kind is 0 and the payload is the message).
//
// Errors: io.EOF when the stream ends cleanly between frames;
// io.ErrUnexpectedEOF when it ends inside a header or a body;
// ErrFrameTooLarge (wrapped, naming the length) when the length prefix
// exceeds the maximum frame size (with [Reader.DiscardTooLarge], a
// [*TooLargeError] with the frame's kind and first bytes, and the Reader
// goes on), and ErrEmptyFrame for a canonical
// length of 0: both are reported as soon as the 4 length bytes are in,
// before any further byte is read or any buffer is taken for the body.
// When the first frame of a stream fails so (or is cut short by the end
// of the stream) and its bytes are those of an HTTP request or response,
// the HTTP/2 preface or a TLS handshake or alert record, the error (still
// wrapping the one above) says that the peer sent that instead of ZAP
// frames: a plaintext endpoint reached by another protocol, or by TLS.
// A TLS ClientHello too short to fail so (under 256 bytes, read as a
// length within the limit) fails with [ErrForeignProtocol], so named, as
// soon as its first 11 bytes are in, rather than after a wait for the
// rest of a frame that its client, waiting for an answer, never sends.
// io.ErrNoProgress when the underlying reader returned no bytes and no
// error 100 times in a row (io.Reader discourages that; a reader that
// goes on may give bytes to a later Next); otherwise the error of the
// underlying reader, after which Next may be called again (see [Reader]).
//
// The payload aliases the buffer the frame was read into, never a copy
// made for the caller: the Reader's inline 512-byte buffer (a frame that
// arrived whole while nothing was buffered) or a pooled buffer (a larger
// frame, or frames read ahead on a busy stream). Either way it is valid
// only until the next call to Next, Wait or Reset, or a TryNext that
// returns a frame: they may overwrite that memory (moving the unread
// bytes that follow, or reading the next frame into it) or give the
// pooled buffer back to the pool. Copy what must live longer. With pool poisoning on (-tags zapdebug) an expired
// payload reads as 0xDB bytes. Its capacity equals its length, so
// appending to it copies.
func (fr *Reader) Next() (kind byte, payload []byte, err error) {
	// The common case without a call (TryNext's, which has the same
	// lines): a frame buffered whole, with a canonical length within the
	// limit, on a Reader that is not broken (see fast). b[4] and b[5:t]
	// are the kind byte and the payload: n >= 1, so t >= 5.
	r := fr.r // kept: fr.r is loaded once
	if b := fr.buf[r:fr.w]; len(b) >= 5 {
		if n := binary.LittleEndian.Uint32(b); n-1 < fr.fast && int(n) <= len(b)-4 {
			fr.release()
			t := int(n) + 4
			fr.r = r + t
			if t > smallSize {
				fr.credit = t
			}
			payload = b[5:t:t]
			if poison.Enabled() {
				fr.payload = payload // for release to poison
			}
			return b[4], payload, nil
		}
	}
	return fr.next()
}

// next is Next for every case: a Reader that is broken or must read, a
// length it refuses, the HTTP framing.
func (fr *Reader) next() (kind byte, payload []byte, err error) {
	if fr.err != nil {
		return 0, nil, fr.err
	}
	fr.release()
	if fr.skip != 0 {
		if err := fr.discard(); err != nil {
			return 0, nil, err // nothing lost: the next call resumes
		}
	}
	for {
		avail := fr.w - fr.r
		need := 4
		if avail >= 4 {
			// The common case without a call: a canonical length within
			// the limit (t > 0: where an int has 32 bits, a length of 2^31
			// or more is negative). total decides every other case.
			t := int(binary.LittleEndian.Uint32(fr.buf[fr.r:fr.w]))
			if t-1 < fr.max && t > 0 && !fr.http {
				t += 4
			} else if t, err = fr.total(fr.buf[fr.r:fr.w]); err != nil {
				if fr.head != 0 && fr.pastable(err) {
					return fr.tooLarge(err)
				}
				return fr.fail(err)
			}
			if avail >= t {
				start := fr.r
				fr.r += t
				if t > smallSize {
					fr.credit = t
				}
				if !fr.http {
					kind = fr.buf[start+4]
				}
				payload = fr.buf[start+fr.off : start+t : start+t]
				if poison.Enabled() {
					fr.payload = payload // for release to poison
				}
				return kind, payload, nil
			}
			need = t
			if fr.buf[fr.r] == 0x16 && avail >= tlsHelloHeader {
				// Perhaps a short TLS ClientHello, whose client waits
				// for our answer rather than for the frame's rest.
				if err := fr.foreignHello(); err != nil {
					return fr.fail(err)
				}
			}
		}
		if err := fr.fill(need); err != nil {
			if err == io.EOF {
				if fr.w == fr.r {
					return fr.fail(io.EOF)
				}
				return fr.fail(fr.foreign(io.ErrUnexpectedEOF))
			}
			return 0, nil, err // nothing lost: the next call resumes
		}
	}
}

// fill makes room for a frame of need bytes starting at buf[r] (need is 4
// while its header is not in yet) and reads once.
func (fr *Reader) fill(need int) error {
	// What Framed reports, stored before a read that may block: the
	// bytes buffered past r are those of frames not yet returned.
	fr.framed.Store(fr.received.Load() - uint64(fr.w-fr.r))
	if fr.r == fr.w {
		// Between frames with nothing buffered: the next read may block,
		// so hold no pooled buffer while it does (the peer may go idle
		// here for hours). Back to the inline buffer.
		fr.r, fr.w = 0, 0
		fr.full = false
		if fr.big != nil && !fr.keepForRaw() {
			fr.dropBig()
		}
	}
	if n, ahead := fr.target(need); n > len(fr.buf) {
		if ahead {
			fr.raCap = max(fr.raCap, n)
		}
		fr.grow(n)
	} else if need > len(fr.buf)-fr.r && fr.r > 0 {
		// The frame does not fit where it starts: move it to the front.
		fr.w = copy(fr.buf, fr.buf[fr.r:fr.w])
		fr.r = 0
	}
	if fr.raw != nil && fr.w == 0 && fr.r == 0 && fr.credit <= fr.rsize {
		// Drained, on a socket: when frames above the inline buffer's
		// size came lately (or a busy stream read ahead), read straight
		// into a pooled buffer of that size, taken only once the socket
		// is readable. (After a frame above the read-ahead limit, the
		// inline buffer reads the next header: a large frame is then
		// read exactly into its own buffer, without a copy.)
		if pre := max(fr.raCap, fr.credit); pre > smallSize {
			return fr.raw.read(pre)
		}
	}
	end := len(fr.buf)
	if need > fr.rsize/4 && fr.r+need < end {
		// A large frame (above a quarter of the read-ahead limit) is read
		// exactly, so that the next one starts in the inline buffer and
		// the start of a large frame is never read ahead and moved.
		end = fr.r + need
	}
	return fr.read(fr.buf[fr.w:end])
}

// keepForRaw reports whether a drained Reader may keep its pooled buffer
// into the readiness-first read (see fill): it is the size that read
// would take. That read gives it back before waiting if the socket is not
// readable, so a waiting Reader still holds nothing; a frame that is
// already there costs no trip to the pool.
func (fr *Reader) keepForRaw() bool {
	if fr.raw == nil || fr.credit > fr.rsize {
		return false
	}
	pre := max(fr.raCap, fr.credit)
	c := cap(fr.big.B)
	return pre > smallSize && c >= pre && c <= 2*pre
}

// target returns the length the buffer should have for the next read:
// len(fr.buf), or more when it must or may grow; ahead reports a larger
// buffer for reading ahead (remembered in raCap). It grows only
//   - when the last read filled all the space offered (a busy stream, or
//     the buffer full of one frame), to at most growFactor times its
//     current length (at least minChunk) for reading ahead, up to the
//     read-ahead limit; or, for a frame that does not fit, to the frame's
//     length when that is at most twice as much, else to that much;
//   - or to a frame's length when the previous frame larger than the
//     inline buffer was at least as long (credit: the peer sent that much
//     before) and that length is at most the read-ahead limit or
//     creditFactor times the bytes of the frame held.
//
// So what a Reader holds follows the bytes it received, never a length
// prefix alone, nor a credit earned long before.
func (fr *Reader) target(need int) (n int, ahead bool) {
	n = len(fr.buf)
	if fr.full && n < fr.rsize {
		n = min(fr.rsize, max(minChunk, growFactor*n, fr.raCap))
		ahead = true
	}
	if need <= n {
		return n, ahead
	}
	if need <= fr.credit && (need <= fr.rsize || need/creditFactor < fr.w-fr.r) {
		return need, false
	}
	if fr.w-fr.r < len(fr.buf) {
		// Room left: read into it first.
		return n, ahead
	}
	allowed := max(minChunk, growFactor*len(fr.buf))
	if need <= 2*allowed {
		return need, false
	}
	return max(n, allowed), false
}

// grow moves the unread bytes to a pooled buffer of at least n bytes.
func (fr *Reader) grow(n int) {
	limit := 4 + fr.max // the largest frame
	if n <= fr.rsize {
		limit = max(limit, fr.rsize)
	}
	nb := fr.bodies.Get(n, limit)
	nb.B = nb.B[:cap(nb.B)]
	fr.w = copy(nb.B, fr.buf[fr.r:fr.w])
	fr.r = 0
	fr.dropBig()
	fr.big = nb
	fr.buf = nb.B
}

// read reads once into p (at the end of buf[:w]), retrying a few times on
// (0, nil). Bytes that come with an error are kept and the error is
// returned by the next read.
func (fr *Reader) read(p []byte) error {
	if err := fr.rerr; err != nil {
		fr.rerr = nil
		return err
	}
	for range 100 {
		n, err := fr.src.Read(p)
		if n < 0 || n > len(p) {
			return fr.brk(errors.New("frame: underlying reader returned an invalid count"))
		}
		fr.w += n
		fr.full = n == len(p)
		if n > 0 {
			fr.received.Add(uint64(n))
			fr.rerr = err
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// Received returns the number of bytes read from the stream since the
// Reader was created. Unlike every other method it may be called from any
// goroutine while another calls Next (it is one atomic load): a watchdog
// uses it to tell a peer that is still sending, slowly, from one that went
// quiet.
func (fr *Reader) Received() uint64 { return fr.received.Load() }

// Framed returns the number of bytes of the stream up to the end of the
// last frame Next has returned, as of the latest read from the stream (it
// is brought up to date each time the Reader begins to read, not at every
// frame): while the Reader waits for the stream, the bytes of every frame
// returned before. It grows when, and only when, a frame was completed
// and returned (and once after a Reset, which drops what was buffered).
// Like Received it may be called from any goroutine while
// another calls Next (one atomic load): beside Received, it tells a peer
// that sends whole frames from one that trickles the bytes of one.
func (fr *Reader) Framed() uint64 { return fr.framed.Load() }

// foreign names the protocol the peer speaks instead when the bytes at
// the start of the stream, which failed as a first frame (err), are those
// of an HTTP/1 request or response, the HTTP/2 preface, or a TLS
// handshake or alert record: a plaintext ZAP endpoint talked to by
// something else. The error wraps err. Other errors, or any frame but the
// first, are returned as they are. Called only on a failing frame, so it
// costs nothing per frame.
func (fr *Reader) foreign(err error) error {
	if fr.http || fr.received.Load()-uint64(fr.w-fr.r) != fr.start {
		return err
	}
	if what := foreignProtocol(fr.buf[fr.r:fr.w]); what != "" {
		return fmt.Errorf("%w: the peer sent %s, not ZAP frames: it speaks another protocol (or TLS) to a plaintext ZAP endpoint", err, what)
	}
	return err
}

// foreignHelloText is the naming of foreign for the TLS handshake that
// foreignHello refuses.
const foreignHelloText = ": the peer sent a TLS handshake, not ZAP frames: it speaks another protocol (or TLS) to a plaintext ZAP endpoint"

// tlsHelloHeader is how many bytes of a TLS record tell a ClientHello
// (see isClientHello).
const tlsHelloHeader = 11

// foreignHello returns ErrForeignProtocol, naming a TLS handshake, when the
// stream's first frame, not all there yet, begins with a TLS ClientHello
// (see [ErrForeignProtocol]); nil otherwise. Called only before a read
// for the rest of a frame that begins with 0x16, so it costs nothing per
// frame.
func (fr *Reader) foreignHello() error {
	if fr.http || fr.received.Load()-uint64(fr.w-fr.r) != fr.start || !isClientHello(fr.buf[fr.r:fr.w]) {
		return nil
	}
	return fmt.Errorf("%w%s", ErrForeignProtocol, foreignHelloText)
}

// isClientHello reports whether h, at least tlsHelloHeader bytes, begins a
// TLS handshake record (type 22, version 3.0 to 3.4) that holds a
// ClientHello (handshake type 1) of a legacy version 3.0 to 3.4, whose
// length is at least that of the smallest ClientHello and fills the
// record (or goes on past it, in the records that follow). A frame can
// begin with those 11 bytes too: one of 790 + 65,536·n bytes (n from 0
// to 4; its kind byte is then the record length's low byte) whose body
// begins 01, three bytes worth 41 or more, then 03 and 00 to 04. No
// first frame an rpc peer writes does (a request or a stream open
// begins with "ZAP\0", a ping holds at most 8 bytes), but another
// protocol on package frame could write one, and a Reader refuses it
// when it is the stream's first frame and not all read yet.
func isClientHello(h []byte) bool {
	if h[0] != 0x16 || h[1] != 0x03 || h[2] > 0x04 || h[5] != 0x01 || h[9] != 0x03 || h[10] > 0x04 {
		return false
	}
	record := int(h[3])<<8 | int(h[4])
	hello := int(h[6])<<16 | int(h[7])<<8 | int(h[8])
	// A ClientHello holds at least its version (2), random (32), empty
	// session id (1), one cipher suite (2+2) and one compression method
	// (1+1): 41 bytes.
	return hello >= 41 && hello+4 >= record
}

// foreignProtocol names what the first bytes of a stream, h, are when they
// are another protocol's opening rather than a ZAP frame; "" otherwise.
func foreignProtocol(h []byte) string {
	if len(h) < 4 {
		return ""
	}
	if h[0] == 0x16 || h[0] == 0x15 {
		// A TLS record: content type 22 (handshake) or 21 (alert), then
		// the version's major byte 3 and minor 0 to 4 (SSL 3.0 to TLS
		// 1.3's record version).
		if h[1] == 0x03 && h[2] <= 0x04 {
			if h[0] == 0x16 {
				return "a TLS handshake"
			}
			return "a TLS alert"
		}
		return ""
	}
	switch string(h[:4]) {
	case "GET ", "POST", "PUT ", "HEAD", "DELE", "OPTI", "PATC", "CONN", "TRAC":
		return "an HTTP request"
	case "PRI ":
		return "an HTTP/2 connection preface"
	case "HTTP":
		return "an HTTP response"
	}
	return ""
}

// brk makes err sticky (a broken underlying reader) and returns it.
func (fr *Reader) brk(err error) error {
	fr.fail(err)
	return err
}

// release ends the current payload: poisons it when pool poisoning is on.
// Its bytes stay where they are until Next overwrites them or gives the
// buffer back.
func (fr *Reader) release() {
	if fr.payload != nil {
		if poison.Enabled() {
			poison.Fill(fr.payload)
		}
		fr.payload = nil
	}
}

// dropBig gives the pooled buffer back and returns to the inline buffer.
// Unread bytes must have been moved out first.
func (fr *Reader) dropBig() {
	if fr.big != nil {
		fr.bodies.Put(fr.big)
		fr.big = nil
	}
	fr.buf = fr.small[:]
}

// fail breaks the Reader with a protocol or end-of-stream error and gives
// its buffer back.
func (fr *Reader) fail(err error) (byte, []byte, error) {
	fr.err, fr.fast = err, 0
	fr.release()
	fr.dropBig()
	fr.r, fr.w = 0, 0
	fr.skip, fr.skipped = 0, 0
	return 0, nil, err
}

// MaxFrameSize returns the largest length prefix fr accepts
// ([WithMaxFrameSize] as given, or its default). A protocol that writes
// frames of its own (package rpc queues its frames itself) uses it to hold
// what it sends to the same limit it reads with.
func (fr *Reader) MaxFrameSize() int { return fr.max }

// DiscardLimit is the least length prefix a Reader set to read past
// frames over its maximum ([Reader.DiscardTooLarge]) still breaks on: 64
// MiB, the canonical runtime's own limit, or four times the maximum frame
// size when that is more. A peer whose limit is a few times ours (a
// client configured apart from its server, a canonical peer) gets its
// frame refused alone, at the cost of reading at most a few times the
// bytes of a frame we accept; a length beyond it (up to 4 GiB in a u32)
// is no frame any such peer sends, and reading it would keep the Reader,
// at the slowest rate a read timeout allows, for days.
const DiscardLimit = 64 << 20

// discardLimit is the largest frame length fr reads past: DiscardLimit
// or four times the maximum, whichever is more.
func (fr *Reader) discardLimit() uint64 {
	return max(DiscardLimit, 4*uint64(fr.max))
}

// DiscardTooLarge makes fr read past a frame whose length prefix exceeds
// its maximum frame size instead of breaking on it, for a protocol that
// refuses such a frame alone (package rpc answers a request so with an
// error status): Next returns the frame's kind, the first head bytes of
// its envelope (fewer when the frame has fewer; head is capped at 256),
// and a [*TooLargeError], which matches ErrFrameTooLarge; the Reader is
// not broken, and the next Next (or Wait) reads the rest of the frame and
// drops it before it reads the next frame. The head is valid as a payload
// is. Memory follows bytes received as for any frame: the rest is read
// through the Reader's buffer, never held whole (at most the read-ahead
// limit, [WithBufferSize], taken as a busy stream's read-ahead is), and
// the read deadlines and errors of the underlying reader work as inside
// any frame: an error leaves the rest to a later Next; Buffered counts
// the bytes of the frame read so far. Not read past, and breaking the
// Reader with ErrFrameTooLarge as before: a length above [DiscardLimit]
// (or four times the maximum, if more), and the first frame of a stream
// whose bytes name another protocol (see Next). head 0 turns the mode
// off (the default). Reset keeps the setting.
func (fr *Reader) DiscardTooLarge(head int) {
	fr.head = min(max(head, 0), maxDiscardHead)
}

// Discarding reports whether fr has yet to read past the rest of a frame
// over the maximum whose head Next returned (see [Reader.DiscardTooLarge]):
// the next Next or Wait reads it first, and Buffered counts its bytes
// read so far. A read loop that bounds each frame's time calls Wait
// then, which returns once that frame has ended and the next one begun,
// to give the next frame a clock of its own.
func (fr *Reader) Discarding() bool { return fr.skip != 0 }

// maxDiscardHead caps DiscardTooLarge's head: it fits the inline buffer
// with the frame's header.
const maxDiscardHead = 256

// TooLargeError is the error of Next for a frame over the maximum frame
// size that a Reader set with [Reader.DiscardTooLarge] reads past: it
// matches [ErrFrameTooLarge] (errors.Is), and the Reader goes on with the
// next frame.
type TooLargeError struct {
	Kind byte   // the frame's kind byte (0 in the HTTP framing)
	Len  uint32 // the frame's length prefix
	Max  int    // the Reader's maximum frame size
}

// Error returns ErrFrameTooLarge's text with the length and the maximum,
// as the error that breaks a Reader says them, and that the frame is
// read past.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s (len:%d max:%d), read past", ErrFrameTooLarge.Error(), e.Len, e.Max)
}

// Unwrap returns ErrFrameTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrFrameTooLarge }

// length returns the length prefix of the frame at buf[r] (4 bytes in).
func (fr *Reader) length() uint32 {
	if fr.http {
		return binary.BigEndian.Uint32(fr.buf[fr.r:])
	}
	return binary.LittleEndian.Uint32(fr.buf[fr.r:])
}

// envLen returns the length of the envelope of the frame at buf[r] (4
// bytes in), one over the maximum: its length prefix less the kind byte
// (there: the length is above the maximum, at least 1).
func (fr *Reader) envLen() int {
	if fr.http {
		return int(fr.length())
	}
	return int(fr.length()) - 1
}

// pastable reports whether the frame at buf[r], which total refused with
// err, is one to read past: over the maximum, within the discard limit,
// and not the first frame of a stream that names another protocol.
func (fr *Reader) pastable(err error) bool {
	if !errors.Is(err, ErrFrameTooLarge) || uint64(fr.length()) > fr.discardLimit() {
		return false
	}
	first := !fr.http && fr.received.Load()-uint64(fr.w-fr.r) == fr.start
	return !first || foreignProtocol(fr.buf[fr.r:fr.w]) == ""
}

// tooLarge reads the head of the frame at buf[r], over the maximum, and
// returns its kind, the head and a *TooLargeError, leaving the rest of
// the frame to discard (see DiscardTooLarge). An error of the underlying
// reader while the head is not all in is returned as is: the next call
// begins again with the frame's header, which stays buffered.
func (fr *Reader) tooLarge(err error) (byte, []byte, error) {
	n := fr.length()
	h := min(fr.envLen(), fr.head)
	need := fr.off + h
	for fr.w-fr.r < need {
		if err := fr.fill(need); err != nil {
			if err == io.EOF {
				return fr.fail(fr.foreign(io.ErrUnexpectedEOF))
			}
			return 0, nil, err
		}
	}
	start := fr.r
	total := 4 + int(n)
	take := min(fr.w-fr.r, total)
	fr.r += take
	if take < total {
		fr.skip, fr.skipped = total-take, take
		fr.fast = 0 // Next's and TryNext's one compare would read the frame's bytes as a header
	}
	var kind byte
	if !fr.http {
		kind = fr.buf[start+4]
	}
	head := fr.buf[start+fr.off : start+need : start+need]
	if poison.Enabled() {
		fr.payload = head // for release to poison
	}
	return kind, head, &TooLargeError{Kind: kind, Len: n, Max: fr.max}
}

// discard reads the rest of a frame tooLarge returned the head of, and
// drops it: through the inline buffer, then, while reads fill the
// buffer, a pooled one up to the read-ahead limit, as a busy stream's
// read-ahead grows (never more than is left of the frame). It reads no
// byte past the frame. An error of the underlying reader is returned and
// the rest stays to discard; the end of the stream breaks the Reader
// with io.ErrUnexpectedEOF.
func (fr *Reader) discard() error {
	for fr.skip > 0 {
		fr.r, fr.w = 0, 0
		if fr.full && len(fr.buf) < fr.rsize && len(fr.buf) < fr.skip {
			fr.grow(min(fr.rsize, max(minChunk, growFactor*len(fr.buf))))
		}
		p := fr.buf
		if len(p) > fr.skip {
			p = p[:fr.skip]
		}
		err := fr.read(p)
		fr.skip -= fr.w
		fr.skipped += fr.w
		fr.w = 0
		if err != nil {
			if err == io.EOF {
				fr.fail(io.ErrUnexpectedEOF)
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	fr.skipped = 0
	fr.fast = fr.fastLimit()
	return nil
}
