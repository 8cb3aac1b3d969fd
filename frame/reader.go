package frame

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/zapcodec/zapcodec/pool"
)

// bodies holds the buffers of payloads too large for a Reader's bufio
// buffer, by power-of-two size class, apart from the small message buffers
// of the default pool. New buffers are capped at the maximum frame size.
var bodies pool.SizedPool

// Reader reads length-prefixed frames from a stream. Create it with
// NewReader. A Reader must not be copied and is not safe for concurrent
// use; one goroutine (a connection's read loop) calls Next.
//
// Errors come in two classes. A protocol error (ErrFrameTooLarge,
// ErrEmptyFrame) or the end of the stream (io.EOF, io.ErrUnexpectedEOF)
// breaks the Reader: every later Next returns the same error. An error of
// the underlying reader (a read deadline, a reset connection) is returned
// as is and loses nothing: the next call to Next resumes where the stream
// stopped, even inside a large body, so a read loop may retry after
// os.ErrDeadlineExceeded. Reset makes any Reader usable on a new stream.
type Reader struct {
	_ noCopy

	br      *bufio.Reader
	max     int  // largest accepted length prefix
	http    bool // big-endian length, no kind byte
	hdrLen  int  // 5 canonical, 4 HTTP
	pending int  // bytes of the current frame still in br, discarded by the next Next
	payload []byte
	bodies  *pool.SizedPool
	big     *pool.Buffer // pooled body of the current (or interrupted) frame
	got     int          // bytes of big.B read; < len(big.B) while interrupted
	kind    byte         // kind of the frame in big
	err     error        // sticky error
}

// NewReader returns a Reader of frames from r, with a bufio buffer of the
// size WithBufferSize sets (default 64 KiB). If r is already a
// *bufio.Reader at least that large, it is used as is. Options:
// WithMaxFrameSize, WithBufferSize, WithHTTPFraming.
func NewReader(r io.Reader, opts ...Option) *Reader {
	o := buildOptions(opts)
	fr := &Reader{
		br:     bufio.NewReaderSize(r, o.bufferSize),
		max:    o.maxFrameSize,
		http:   o.http,
		hdrLen: 5,
		bodies: &bodies,
	}
	if o.http {
		fr.hdrLen = 4
	}
	return fr
}

// Reset releases the current payload, drops buffered bytes and an
// interrupted frame, clears a sticky error and makes fr read from r,
// keeping its buffers and options.
func (fr *Reader) Reset(r io.Reader) {
	fr.release()
	fr.br.Reset(r)
	fr.err = nil
}

// Buffered returns the number of bytes taken from the stream that no Next
// has returned yet: bytes read ahead into the buffer, plus the header and
// the body read so far of a large frame interrupted by an error. Zero means
// the Reader stands exactly between two frames with nothing read ahead. A
// server can use Buffered() == 0 after handling a frame as the moment to
// flush its Writer: no further request is already waiting.
func (fr *Reader) Buffered() int {
	n := fr.br.Buffered() - fr.pending
	if fr.interrupted() {
		n += fr.hdrLen + fr.got
	}
	return n
}

// Ready reports whether the next call to Next returns without reading from
// the stream: a whole frame (or a protocol error, or the sticky error) is
// already buffered. A server that runs handlers in its read loop can use
// !Ready() as the moment to flush: Next is about to block.
func (fr *Reader) Ready() bool {
	if fr.err != nil {
		return true
	}
	if fr.interrupted() {
		return false
	}
	hl := fr.hdrLen
	avail := fr.br.Buffered() - fr.pending
	if avail < hl {
		return false
	}
	b, err := fr.br.Peek(fr.pending + hl) // buffered: never reads
	if err != nil {
		return false
	}
	hdr := b[fr.pending:]
	var n, body int
	if fr.http {
		n = int(binary.BigEndian.Uint32(hdr))
		body = n
	} else {
		n = int(binary.LittleEndian.Uint32(hdr))
		if n == 0 {
			return true
		}
		body = n - 1 // the kind byte is in the header
	}
	if n > fr.max {
		return true
	}
	return avail >= hl+body
}

func (fr *Reader) interrupted() bool { return fr.big != nil && fr.got < len(fr.big.B) }

// Next reads the next frame and returns its kind byte and payload (the
// envelope; in HTTP framing, kind is 0 and the payload is the message).
//
// Errors: io.EOF when the stream ends cleanly between frames;
// io.ErrUnexpectedEOF when it ends inside a header or a body;
// ErrFrameTooLarge (wrapped, naming the length) when the length prefix
// exceeds the maximum frame size, reported before any of the body is read
// or allocated; ErrEmptyFrame for a canonical frame of length 0; otherwise
// the error of the underlying reader, after which Next may be called again
// (see [Reader]).
//
// The payload aliases the reader's buffer (a frame that fits the bufio
// buffer) or a pooled buffer (a larger frame) and is valid only until the
// next call to Next or Reset; copy it to keep it. Its capacity equals its
// length, so appending to it copies.
func (fr *Reader) Next() (kind byte, payload []byte, err error) {
	if fr.err != nil {
		return 0, nil, fr.err
	}
	if fr.interrupted() {
		return fr.readBody()
	}
	fr.release()

	hl := fr.hdrLen
	hdr, err := fr.br.Peek(hl)
	if err != nil {
		switch {
		case !fr.http && len(hdr) >= 4 && binary.LittleEndian.Uint32(hdr) == 0:
			// An empty frame is only 4 bytes long: report it as such
			// even when the stream ends right after it.
			return fr.fail(ErrEmptyFrame)
		case err == io.EOF && len(hdr) > 0:
			return fr.fail(io.ErrUnexpectedEOF)
		case err == io.EOF:
			return fr.fail(io.EOF)
		}
		return 0, nil, err // nothing consumed: retry reads the header again
	}
	var n int
	if fr.http {
		n = int(binary.BigEndian.Uint32(hdr))
	} else {
		n = int(binary.LittleEndian.Uint32(hdr))
		if n == 0 {
			return fr.fail(ErrEmptyFrame)
		}
		kind = hdr[4]
	}
	if n > fr.max {
		return fr.fail(fmt.Errorf("%w (len:%d max:%d)", ErrFrameTooLarge, n, fr.max))
	}
	// The header counts the kind byte in n; the body is what follows hdr.
	body := n
	if !fr.http {
		body = n - 1
	}
	total := hl + body

	if total <= fr.br.Size() {
		// Small frame: return a view into the bufio buffer, discarded by
		// the next call.
		b, err := fr.br.Peek(total)
		if err != nil {
			if err == io.EOF {
				return fr.fail(io.ErrUnexpectedEOF)
			}
			return 0, nil, err // nothing consumed: retry peeks again
		}
		fr.pending = total
		fr.payload = b[hl:total:total]
		return kind, fr.payload, nil
	}

	// Large frame: read the body into a pooled buffer. Discarding the
	// header never touches the stream: Peek buffered it.
	if _, err := fr.br.Discard(hl); err != nil {
		return fr.fail(fmt.Errorf("BUG: frame: discard of peeked header: %w", err))
	}
	fr.big = fr.bodies.Get(body, fr.max)
	fr.got = 0
	fr.kind = kind
	return fr.readBody()
}

// readBody reads (the rest of) a large body into fr.big. On an error of the
// underlying reader it keeps what it got, for the next call to resume.
func (fr *Reader) readBody() (byte, []byte, error) {
	b := fr.big.B
	n, err := io.ReadFull(fr.br, b[fr.got:])
	fr.got += n
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fr.fail(io.ErrUnexpectedEOF)
		}
		return 0, nil, err
	}
	fr.payload = b[:len(b):len(b)]
	return fr.kind, fr.payload, nil
}

// release gives up the current payload: poisons it when pool poisoning is
// on, discards it from the bufio buffer or returns its pooled buffer (also
// the buffer of an interrupted frame).
func (fr *Reader) release() {
	if fr.payload != nil && pool.Poisoning() {
		pool.Poison(fr.payload)
	}
	fr.payload = nil
	if fr.pending > 0 {
		// At most Buffered() bytes: never reads from the stream.
		fr.br.Discard(fr.pending)
		fr.pending = 0
	}
	if fr.big != nil {
		fr.bodies.Put(fr.big)
		fr.big = nil
		fr.got = 0
	}
}

// fail breaks the Reader with a protocol or end-of-stream error.
func (fr *Reader) fail(err error) (byte, []byte, error) {
	fr.err = err
	fr.release()
	return 0, nil, err
}
