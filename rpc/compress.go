package rpc

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Compression of unary answers (docs/wire.md §8, "Compressed answers"):
// a client with WithCompression sets the accept bit in the flags word of
// its requests; a server with WithCompression compresses, with raw
// DEFLATE (compress/flate at flate.BestSpeed), the OK answers to such
// requests whose body is at least its threshold, when that makes them
// shorter, and marks them with bit 1 of the answer's flags word. A server
// never compresses for a request without the bit, so a canonical client,
// or a zapcodec one without the option, never gets a compressed body.

// DefaultCompressMin is the smallest answer body a server with
// [WithCompression] compresses when given a threshold <= 0: 1 KiB.
const DefaultCompressMin = 1 << 10

// maxPooledCoders bounds how many compressors, and how many
// decompressors, the process keeps for reuse: a flate.Writer holds about
// 600 KiB (a decompressor about 40 KiB), so idle memory stays at most
// maxPooledCoders of each, however many calls compressed at once.
const maxPooledCoders = 4

// WithCompression turns on the compression of large unary answers, on
// the side it is given to; both sides must have it for any answer to be
// compressed.
//
// On a client, every request (unary calls and promises, not stream
// opens) says that the client takes a compressed answer: the request
// envelope then carries the extension's flags word (20 bytes more than
// the canonical envelope, which a canonical server ignores). The client
// inflates a compressed answer on its read loop, into the buffer the
// call's answer is appended to, and fails the call with an error
// matching [ErrDecompress] when the body does not inflate or inflates
// past the largest answer a frame can carry (the maximum frame size,
// [WithFrameOptions]): a small frame that would inflate to gigabytes
// takes at most that much memory, fails that call only, and the
// connection goes on. minSize does not matter on a client.
//
// On a server, an OK answer whose body has at least minSize bytes
// (minSize <= 0: [DefaultCompressMin]) is compressed when its request
// said it takes one, and sent compressed only when that is shorter.
// Error answers, refusals and streams are never compressed; response
// metadata goes uncompressed beside the body. The compressed copy is the
// server's (a pooled buffer, held only while the answer is written): the
// handler's buffers are untouched, and the answer budget
// ([ReserveAnswer]) counts the bytes the handler reserved for its raw
// result, not the compressed copy. The compression runs on the goroutine
// that answers the call, after the handler returned.
//
// Without the option on either side, every byte on the wire is what it
// was without it. Requests are not compressed (only answers are), and
// neither are stream messages (a stream message has no flags word to
// mark one compressed; see docs/wire.md §8).
func WithCompression(minSize int) Option {
	if minSize <= 0 {
		minSize = DefaultCompressMin
	}
	return bothOption{
		s: func(o *serverOptions) { o.deflateMin = minSize },
		c: func(o *clientOptions) { o.deflate = true },
	}
}

// ErrDecompress matches (errors.Is) the error of a call whose answer came
// compressed and did not inflate: malformed compressed data, bytes after
// the compressed stream, or more bytes than the largest answer (a
// decompression bomb). The call fails; the connection goes on.
var ErrDecompress = errors.New("rpc: compressed answer did not inflate")

// errNoGain stops a compression whose output would not be shorter than
// its input.
var errNoGain = errors.New("rpc: compression does not pay")

// deflater is a pooled compressor: a flate.Writer that writes into out,
// and fails once out would reach lim bytes.
type deflater struct {
	w   *flate.Writer
	out []byte
	lim int
}

// deflaters keeps up to maxPooledCoders idle compressors.
var deflaters = make(chan *deflater, maxPooledCoders)

// Write appends p to d.out, the flate.Writer's output.
func (d *deflater) Write(p []byte) (int, error) {
	if len(d.out)+len(p) >= d.lim {
		return 0, errNoGain
	}
	d.out = append(d.out, p...)
	return len(p), nil
}

// getDeflater takes an idle compressor, or makes one.
func getDeflater() *deflater {
	select {
	case d := <-deflaters:
		return d
	default:
	}
	d := new(deflater)
	d.w, _ = flate.NewWriter(d, flate.BestSpeed) // the level is valid: no error
	return d
}

// putDeflater gives d back for reuse, without an output buffer above
// maxKeptBuffer; beyond maxPooledCoders idle ones, d is dropped.
func putDeflater(d *deflater) {
	d.out = d.out[:0]
	if cap(d.out) > maxKeptBuffer {
		d.out = nil
	}
	select {
	case deflaters <- d:
	default:
	}
}

// deflate compresses body into d.out and reports whether the answer
// carrying it is shorter than the plain one (its header takes
// wire.DeflatedOverhead bytes more).
func (d *deflater) deflate(body []byte) bool {
	d.out = d.out[:0]
	d.lim = len(body) - wire.DeflatedOverhead
	d.w.Reset(d)
	if _, err := d.w.Write(body); err != nil {
		return false
	}
	return d.w.Close() == nil
}

// inflater is a pooled decompressor and the reader of its input.
type inflater struct {
	src   bytes.Reader
	r     io.ReadCloser // a flate reader over src
	probe [1]byte       // see readInflated
}

// inflaters keeps up to maxPooledCoders idle decompressors.
var inflaters = make(chan *inflater, maxPooledCoders)

// inflate appends to dst the raw DEFLATE stream src inflated, at most
// limit bytes of it; on error (an error matching ErrDecompress) it
// returns dst as it was given, grown perhaps.
func inflate(dst, src []byte, limit int) ([]byte, error) {
	var z *inflater
	select {
	case z = <-inflaters:
	default:
		z = new(inflater)
	}
	z.src.Reset(src)
	if z.r == nil {
		z.r = flate.NewReader(&z.src)
	} else if err := z.r.(flate.Resetter).Reset(&z.src, nil); err != nil {
		return dst, fmt.Errorf("%w: %v", ErrDecompress, err) // never: Reset without a dictionary does not fail
	}
	out, err := z.readInflated(dst, limit)
	if err == nil && z.src.Len() != 0 {
		err = fmt.Errorf("%w: %d bytes after the compressed stream", ErrDecompress, z.src.Len())
	}
	z.src.Reset(nil) // keep nothing of src
	select {
	case inflaters <- z:
	default:
	}
	if err != nil {
		return out[:len(dst)], err
	}
	return out, nil
}

// readInflated appends what z.r yields to dst until io.EOF: at most
// limit bytes, growing dst in steps that never take it past limit+1
// bytes beyond its length on entry. A full dst is grown only once a
// byte is known to follow (z.probe): a caller's buffer of the answer's
// size is not grown just to learn that the stream has ended.
func (z *inflater) readInflated(dst []byte, limit int) ([]byte, error) {
	start := len(dst)
	r := z.r
	for {
		end := start + limit + 1 // one byte past the limit tells a bomb
		if len(dst) == cap(dst) {
			n, err := r.Read(z.probe[:])
			if n == 0 {
				switch {
				case err == io.EOF:
					return dst, nil
				case err != nil:
					return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
				}
				continue
			}
			if len(dst)-start >= limit {
				return dst, fmt.Errorf("%w: it inflates past %d bytes, the largest answer", ErrDecompress, limit)
			}
			// By hand: append's growth (and slices.Grow's) may take
			// the buffer a quarter past the limit.
			grown := make([]byte, len(dst), len(dst)+min(max(len(dst)-start, 4<<10), end-len(dst)))
			copy(grown, dst)
			dst = append(grown, z.probe[0])
			if err == io.EOF {
				return dst, nil
			}
			continue
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+n]
		switch {
		case len(dst)-start > limit:
			return dst, fmt.Errorf("%w: it inflates past %d bytes, the largest answer", ErrDecompress, limit)
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
	}
}

// deliverDeflated is deliver for an answer whose body is compressed
// (r.Deflated): the body is inflated into the call's buffer, or the call
// fails.
func (c *Client) deliverDeflated(r *wire.Response) {
	s := c.claim(r.PromiseID)
	if s == nil {
		return
	}
	if !c.opts.deflate {
		failDelivered(s, fmt.Errorf("%w: a compressed answer to a call that did not accept one", ErrProtocol))
		return
	}
	var err error
	if s.resp, err = inflate(s.resp, r.Body, c.r.MaxFrameSize()-1-wire.ResponseOverhead); err != nil {
		failDelivered(s, err)
		return
	}
	s.status, s.notRun = r.Status, r.NotRun
	if len(r.Metadata) > 0 && s.rmd != nil {
		c.takeMetadata(s, r.Metadata)
	}
	s.ch <- struct{}{}
}

// failDelivered fails the call of s, claimed for its answer, with err
// (out of line: only a failing call moves err to the heap).
//
//go:noinline
func failDelivered(s *slot, err error) {
	s.err = &err
	s.ch <- struct{}{}
}

// writeDeflated writes the answer of a call whose request takes a
// compressed one, compressed, and reports true; false (nothing written)
// when it is not to be compressed: not OK, below the threshold, or not
// shorter compressed.
func (c *serverConn) writeDeflated(status, pid uint32, body, md []byte, inReader bool) bool {
	if status != StatusOK || len(body) < c.s.opts.deflateMin || c.closed.Load() {
		return false
	}
	d := getDeflater()
	defer putDeflater(d)
	if !d.deflate(body) {
		return false
	}
	out := d.out
	var lead bool
	var err error
	if len(md) == 0 && len(out) >= frame.DefaultWritevThreshold {
		// Not copied into the queue: written with its header (see
		// writeAnswer), before d goes back to the pool.
		var hb [wire.ResponseOverhead + wire.DeflatedOverhead]byte
		head := wire.AppendDeflatedHeader(hb[:0], status, pid, len(out), 0)
		err = c.out.lock().WriteFrameParts(wire.KindResponse, head, out)
		lead = c.out.unlock()
	} else {
		buf := c.out.begin(wire.KindResponse)
		buf = wire.AppendDeflatedHeader(buf, status, pid, len(out), len(md))
		buf = append(append(buf, out...), md...)
		lead, err = c.out.end(buf)
	}
	c.finishWrite(lead, err, status, inReader)
	return true
}
