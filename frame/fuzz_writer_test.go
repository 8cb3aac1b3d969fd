package frame

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

// limitWriter accepts limit bytes (all of them when limit is 0), then
// fails: the bytes of the failing Write that fit are taken, as a socket
// that breaks mid-write takes them.
type limitWriter struct {
	out   []byte
	limit int
}

var errLimit = errors.New("limitWriter: stream broken")

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.limit == 0 || len(w.out)+len(p) <= w.limit {
		w.out = append(w.out, p...)
		return len(p), nil
	}
	n := w.limit - len(w.out)
	w.out = append(w.out, p[:n]...)
	return n, errLimit
}

// limitConn is a limitWriter seen as a net.Conn, so that the Writer takes
// its net.Buffers path (without writev: net.Buffers then writes each
// part in turn). Only Write is used.
type limitConn struct {
	net.Conn
	*limitWriter
}

func (c limitConn) Write(p []byte) (int, error) { return c.limitWriter.Write(p) }

// FuzzWriter runs a sequence of Writer calls read from ops (WriteFrame,
// WriteFrameParts, Begin/End, Flush, a Begin abandoned, an End refused)
// with small buffers, thresholds and limits, into a stream that may break
// after failAt bytes, and checks against a reference stream built by hand
// from the frames the Writer accepted: what reached the stream is exactly
// that stream, or, once a write failed, its first failAt bytes, nothing
// lost, repeated or reordered before the break; refusals (too large, End
// with a buffer not Begin's) change nothing; a write error is returned by
// every later call; and a Writer with nothing pending holds no buffer.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{0, 5, 1, 3, 2, 10, 3, 0, 200, 4, 9, 5, 1, 3}, uint16(64), uint16(32), uint16(100), uint16(0), false, false)
	f.Add([]byte{0, 5, 1, 3, 2, 10, 3, 0, 200, 4, 9, 5, 1, 3}, uint16(64), uint16(32), uint16(100), uint16(30), false, true)
	f.Add([]byte{2, 40, 2, 40, 0, 120, 1, 90, 3}, uint16(16), uint16(100), uint16(1000), uint16(0), true, false)
	f.Add([]byte{1, 255, 0, 255, 3, 2, 255}, uint16(300), uint16(50), uint16(200), uint16(77), true, true)
	f.Fuzz(func(t *testing.T, ops []byte, bufSize, threshold, maxSize, failAt uint16, http, conn bool) {
		max := int(maxSize)
		if max == 0 {
			max = 1 // WithMaxFrameSize(0) means the 16 MiB default
		}
		opts := []Option{WithBufferSize(int(bufSize)), WithWritevThreshold(int(threshold)), WithMaxFrameSize(max)}
		if http {
			opts = append(opts, WithHTTPFraming())
		}
		lw := &limitWriter{limit: int(failAt)}
		var dst interface{ Write([]byte) (int, error) } = lw
		if conn {
			dst = limitConn{limitWriter: lw}
		}
		w := NewWriter(dst, opts...)
		w.bodies = new(pool.SizedPool)

		var ref []byte  // the frames accepted so far, as the stream should carry them
		var broke error // the first write error
		seq := byte(0)
		frame := func(kind byte, payload []byte) []byte {
			if http {
				return cat(be(uint32(len(payload))), payload)
			}
			return cat(le(uint32(len(payload)+1)), []byte{kind}, payload)
		}
		tooLarge := func(n int) bool {
			if !http {
				n++
			}
			return n > max
		}
		// result checks the outcome of a call that tried to add frame fr
		// (nil for Flush): accepted, refused (want is the refusal), or the
		// stream's error.
		result := func(op string, err, refusal error, fr []byte) {
			t.Helper()
			switch {
			case broke != nil:
				if err != broke {
					t.Fatalf("%s after the write error %v: %v, want the same error", op, broke, err)
				}
			case err == nil:
				if refusal != nil {
					t.Fatalf("%s: accepted, want %v", op, refusal)
				}
				ref = append(ref, fr...)
			case refusal != nil && errors.Is(err, refusal):
			case errors.Is(err, errLimit):
				broke = err
				ref = append(ref, fr...) // may have been written in part
			default:
				t.Fatalf("%s: %v (refusal expected: %v)", op, err, refusal)
			}
		}
		payload := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				p[i] = seq + byte(i)
			}
			seq++
			return p
		}
		begun := false
		for i := 0; i < len(ops); i++ {
			b := ops[i]
			op := b % 6
			n := 0
			if op != 3 && i+1 < len(ops) {
				i++
				n = int(ops[i]) * (1 + int(b>>3)) // up to 8 KiB
			}
			kind := byte(i)
			begun = false
			switch op {
			case 0:
				p := payload(n)
				var refusal error
				if tooLarge(n) {
					refusal = ErrFrameTooLarge
				}
				result("WriteFrame", w.WriteFrame(kind, p), refusal, frame(kind, p))
			case 1:
				p := payload(n)
				var refusal error
				if tooLarge(n) {
					refusal = ErrFrameTooLarge
				}
				h := min(n, int(b>>3))
				result("WriteFrameParts", w.WriteFrameParts(kind, p[:h], p[h:]), refusal, frame(kind, p))
			case 2:
				p := payload(n)
				var refusal error
				if tooLarge(n) {
					refusal = ErrFrameTooLarge
				}
				buf := w.Begin(kind)
				result("Begin/End", w.End(append(buf, p...)), refusal, frame(kind, p))
			case 3:
				result("Flush", w.Flush(), nil, nil)
			case 4:
				w.Begin(kind) // abandoned by the next call
				begun = true
			case 5:
				buf := w.Begin(kind)
				bad := buf[:len(buf)-1]
				if n%2 == 1 {
					bad = bytes.Repeat([]byte{0xEE}, len(buf)+n) // not Begin's zero length
				}
				result("End(not Begin's)", w.End(bad), ErrNoBegin, nil)
			}
			if begun {
				continue
			}
			if broke == nil && len(lw.out)+w.Buffered() != len(ref) {
				t.Fatalf("after op %d: %d bytes written + %d buffered, want %d", i, len(lw.out), w.Buffered(), len(ref))
			}
			if (broke != nil || w.Buffered() == 0) && w.Held() != 0 {
				t.Fatalf("after op %d: nothing pending, yet holds %d bytes", i, w.Held())
			}
		}
		result("final Flush", w.Flush(), nil, nil)
		if broke == nil {
			if !bytes.Equal(lw.out, ref) {
				t.Fatalf("stream %x, want %x", lw.out, ref)
			}
		} else if len(lw.out) != int(failAt) || !bytes.Equal(lw.out, ref[:len(lw.out)]) {
			t.Fatalf("broken stream: wrote %d bytes (break at %d), not the reference's first bytes", len(lw.out), failAt)
		}
		if w.Held() != 0 {
			t.Fatalf("holds %d bytes at the end", w.Held())
		}
	})
}
