package frame

import (
	"bufio"
	"encoding/binary"
	"errors"
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
// After Next returns an error, the Reader is broken: every later call
// returns the same error (the stream position is unknown). Reset makes it
// usable on a new stream.
type Reader struct {
	_ noCopy

	br      *bufio.Reader
	max     int  // largest accepted length prefix
	http    bool // big-endian length, no kind byte
	hdrLen  int  // 5 canonical, 4 HTTP
	pending int  // bytes of the current frame still in br, discarded by the next Next
	payload []byte
	big     *pool.Buffer // pooled body of the current frame, Put by the next Next
	bodies  *pool.SizedPool
	err     error // sticky error
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

// Reset releases the current payload and makes fr read from r, keeping its
// buffers and options, and clears a sticky error.
func (fr *Reader) Reset(r io.Reader) {
	fr.release()
	fr.br.Reset(r)
	fr.err = nil
}

// Buffered returns the number of bytes read from the stream but not yet
// returned by Next (the current payload excluded when it is still in the
// buffer).
func (fr *Reader) Buffered() int { return fr.br.Buffered() - fr.pending }

// Next reads the next frame and returns its kind byte and payload (the
// envelope; in HTTP framing, kind is 0 and the payload is the message).
//
// Errors: io.EOF when the stream ends cleanly between frames;
// io.ErrUnexpectedEOF when it ends inside a header or a body;
// ErrFrameTooLarge (wrapped, naming the length) when the length prefix
// exceeds the maximum frame size, reported before any of the body is read
// or allocated; ErrEmptyFrame for a canonical frame of length 0; otherwise
// the error of the underlying reader.
//
// The payload aliases the reader's buffer (a frame that fits the bufio
// buffer) or a pooled buffer (a larger frame) and is valid only until the
// next call to Next or Reset; copy it to keep it. Its capacity equals its
// length, so appending to it copies.
func (fr *Reader) Next() (kind byte, payload []byte, err error) {
	if fr.err != nil {
		return 0, nil, fr.err
	}
	fr.release()

	hl := fr.hdrLen
	hdr, err := fr.br.Peek(hl)
	if err != nil {
		if !fr.http && len(hdr) >= 4 && binary.LittleEndian.Uint32(hdr) == 0 {
			// An empty frame is only 4 bytes long: report it as such
			// even when the stream ends right after it.
			return fr.fail(ErrEmptyFrame)
		}
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return fr.fail(err)
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
				err = io.ErrUnexpectedEOF
			}
			return fr.fail(err)
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
	b := fr.big.B[:body:body]
	if _, err := io.ReadFull(fr.br, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fr.fail(err)
	}
	fr.payload = b
	return kind, b, nil
}

// release gives up the current payload: poisons it when pool poisoning is
// on, discards it from the bufio buffer or returns its pooled buffer.
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
	}
}

func (fr *Reader) fail(err error) (byte, []byte, error) {
	if err == nil {
		err = errors.New("BUG: frame: fail(nil)")
	}
	fr.err = err
	fr.release()
	return 0, nil, err
}
