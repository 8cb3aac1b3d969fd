package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"
)

func le(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
func be(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// errAfterReader returns data, then err (a failure of the underlying stream
// in the middle of a frame).
type errAfterReader struct {
	data []byte
	err  error
}

func (r *errAfterReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// headerOnlyReader hands out its data and fails the test if read again: the
// reader must decide on the header alone.
type headerOnlyReader struct {
	t    *testing.T
	data []byte
}

func (r *headerOnlyReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		r.t.Errorf("reader asked for more bytes after a too-large header")
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var errBoom = errors.New("boom")

func TestReaderHostile(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{7}, 100)
	tests := []struct {
		name   string
		in     func() io.Reader
		opts   []Option
		frames int    // good frames expected before the error
		err    error  // errors.Is target
		msg    string // substring of the error text
	}{
		{"empty stream", func() io.Reader { return bytes.NewReader(nil) }, nil, 0, io.EOF, "EOF"},
		{"length 0", func() io.Reader { return bytes.NewReader(le(0)) }, nil, 0, ErrEmptyFrame, "length 0"},
		{"length 0 after good frame", func() io.Reader { return bytes.NewReader(cat(le(2), []byte{1, 9}, le(0), []byte{1})) }, nil, 1, ErrEmptyFrame, ""},
		{"length 0xFFFFFFFF", func() io.Reader { return bytes.NewReader(cat(le(0xFFFFFFFF), []byte{1, 2, 3})) }, nil, 0, ErrFrameTooLarge, "len:4294967295 max:16777216"},
		{"length max+1", func() io.Reader { return bytes.NewReader(cat(le(101), []byte{1}, big)) }, []Option{WithMaxFrameSize(100)}, 0, ErrFrameTooLarge, "len:101 max:100"},
		{"http length 0xFFFFFFFF", func() io.Reader { return bytes.NewReader(be(0xFFFFFFFF)) }, []Option{WithHTTPFraming()}, 0, ErrFrameTooLarge, ""},
		{"truncated header 1", func() io.Reader { return bytes.NewReader([]byte{5}) }, nil, 0, io.ErrUnexpectedEOF, ""},
		{"truncated header 4", func() io.Reader { return bytes.NewReader(le(5)) }, nil, 0, io.ErrUnexpectedEOF, ""},
		{"truncated header after frame", func() io.Reader { return bytes.NewReader(cat(le(1), []byte{3}, []byte{1, 0})) }, nil, 1, io.ErrUnexpectedEOF, ""},
		{"truncated small body", func() io.Reader { return bytes.NewReader(cat(le(10), []byte{1}, []byte{1, 2, 3})) }, nil, 0, io.ErrUnexpectedEOF, ""},
		{"truncated large body", func() io.Reader { return bytes.NewReader(cat(le(101), []byte{1}, big[:50])) }, []Option{WithBufferSize(16)}, 0, io.ErrUnexpectedEOF, ""},
		{"http truncated body", func() io.Reader { return bytes.NewReader(cat(be(10), []byte{1, 2})) }, []Option{WithHTTPFraming()}, 0, io.ErrUnexpectedEOF, ""},
		{"error mid header", func() io.Reader { return &errAfterReader{le(9)[:2], errBoom} }, nil, 0, errBoom, "boom"},
		{"error mid small body", func() io.Reader { return &errAfterReader{cat(le(9), []byte{1, 2}), errBoom} }, nil, 0, errBoom, ""},
		{"error mid large body", func() io.Reader { return &errAfterReader{cat(le(101), []byte{1}, big[:60]), errBoom} }, []Option{WithBufferSize(16)}, 0, errBoom, ""},
		{"error after good frame", func() io.Reader { return &errAfterReader{cat(le(3), []byte{1, 2, 3}), errBoom} }, nil, 1, errBoom, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.in(), tt.opts...)
			for i := 0; i < tt.frames; i++ {
				if _, _, err := r.Next(); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
			kind, p, err := r.Next()
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Next = %d %x %v, want error %v containing %q", kind, p, err, tt.err, tt.msg)
			}
			if kind != 0 || p != nil {
				t.Fatalf("Next returned kind %d payload %x with an error", kind, p)
			}
			// Sticky: the reader stays broken.
			if _, _, err2 := r.Next(); err2 != err {
				t.Fatalf("second Next = %v, want the same error %v", err2, err)
			}
		})
	}
}

func TestReaderTooLargeReadsNoBody(t *testing.T) {
	t.Parallel()
	for _, http := range []bool{false, true} {
		hdr := cat(le(1<<30), []byte{1})
		opts := []Option{WithBufferSize(16)}
		if http {
			hdr = be(1 << 30)
			opts = append(opts, WithHTTPFraming())
		}
		r := NewReader(&headerOnlyReader{t: t, data: hdr}, opts...)
		if _, _, err := r.Next(); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("http=%v: %v, want ErrFrameTooLarge", http, err)
		}
		if r.big != nil {
			t.Fatalf("http=%v: a body buffer was taken for a refused frame", http)
		}
	}
}

// A length prefix of 2^31 or more is negative as an int where an int has
// 32 bits (GOARCH=386, arm): it must still be refused as too large, on the
// header alone, and never taken for a short frame (Next used to slice
// buf[5:3] for 0xFFFFFFFF there and panic). With the largest maximum the
// options take (2^32-1, or 2^27-1 on 32 bits), a length within it is
// awaited (the stream then ends: ErrUnexpectedEOF) and one above it is
// refused. The bad header comes after a good frame, in the same read, so
// Ready sees it buffered: it must report the error as ready, as Next
// decides it.
func TestReaderLengthPrefixAboveInt32(t *testing.T) {
	t.Parallel()
	for _, n := range []uint32{0x80000000, 0x80000003, 0xFFFFFFFC, 0xFFFFFFFF} {
		for _, http := range []bool{false, true} {
			for _, max := range []int{0, math.MaxInt} {
				t.Run(fmt.Sprintf("len %#x http %v max %d", n, http, max), func(t *testing.T) {
					opts := []Option{WithMaxFrameSize(max)}
					stream := cat(le(1), []byte{7}, le(n), []byte{1, 2, 3, 4})
					if http {
						opts = append(opts, WithHTTPFraming())
						stream = cat(be(0), be(n), []byte{1, 2, 3, 4})
					}
					want := ErrFrameTooLarge
					if max != 0 && uint64(n) <= maxSize {
						want = io.ErrUnexpectedEOF
					}
					r := NewReader(bytes.NewReader(stream), opts...)
					if _, _, err := r.Next(); err != nil {
						t.Fatalf("first frame: %v", err)
					}
					if fast, slow := r.Ready(), r.ready(); fast != slow || fast != (want == ErrFrameTooLarge) {
						t.Fatalf("Ready %v (general %v) with %d bytes buffered, want %v", fast, slow, r.Buffered(), want == ErrFrameTooLarge)
					}
					if kind, p, ok := r.TryNext(); ok || r.Buffered() != 8 {
						t.Fatalf("TryNext = %d %x %v, leaving %d bytes buffered: want false, and all 8 left", kind, p, ok, r.Buffered())
					}
					if kind, p, err := r.Next(); !errors.Is(err, want) || kind != 0 || p != nil {
						t.Fatalf("Next = %d %x %v, want %v", kind, p, err, want)
					}
				})
			}
		}
	}
}

func TestReaderValidEdges(t *testing.T) {
	t.Parallel()
	// Length 1: a kind with an empty envelope.
	r := NewReader(bytes.NewReader(cat(le(1), []byte{4}, le(1), []byte{5})))
	for _, want := range []byte{4, 5} {
		kind, p, err := r.Next()
		if err != nil || kind != want || len(p) != 0 {
			t.Fatalf("Next = %d %x %v, want kind %d, empty payload", kind, p, err, want)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
	// HTTP framing: length 0 is an empty message.
	r = NewReader(bytes.NewReader(cat(be(0), be(2), []byte{8, 9})), WithHTTPFraming())
	if kind, p, err := r.Next(); err != nil || kind != 0 || len(p) != 0 {
		t.Fatalf("http empty: %d %x %v", kind, p, err)
	}
	if kind, p, err := r.Next(); err != nil || kind != 0 || !bytes.Equal(p, []byte{8, 9}) {
		t.Fatalf("http: %d %x %v", kind, p, err)
	}
	// A frame of exactly the maximum size is accepted, on both paths.
	for _, bs := range []int{16, 4096} {
		body := bytes.Repeat([]byte{3}, 99)
		r = NewReader(bytes.NewReader(cat(le(100), []byte{2}, body)), WithMaxFrameSize(100), WithBufferSize(bs))
		if kind, p, err := r.Next(); err != nil || kind != 2 || !bytes.Equal(p, body) {
			t.Fatalf("buf %d: max-size frame: %d %d bytes %v", bs, kind, len(p), err)
		}
	}
}

func TestReaderPayloadCapacity(t *testing.T) {
	t.Parallel()
	// Appending to a payload must not clobber the next frame in the buffer.
	r := NewReader(bytes.NewReader(cat(le(3), []byte{1, 'a', 'b'}, le(3), []byte{2, 'c', 'd'})))
	_, p, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if cap(p) != len(p) {
		t.Fatalf("payload cap %d != len %d", cap(p), len(p))
	}
	_ = append(p, 'X', 'X', 'X')
	_, p, err = r.Next()
	if err != nil || string(p) != "cd" {
		t.Fatalf("second frame %q %v", p, err)
	}
}

func TestReaderReset(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader(le(0)))
	if _, _, err := r.Next(); !errors.Is(err, ErrEmptyFrame) {
		t.Fatal(err)
	}
	r.Reset(bytes.NewReader(cat(le(2), []byte{1, 42})))
	if kind, p, err := r.Next(); err != nil || kind != 1 || !bytes.Equal(p, []byte{42}) {
		t.Fatalf("after Reset: %d %x %v", kind, p, err)
	}
}

func TestReaderBuffered(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader(cat(le(3), []byte{1, 'a', 'b'}, le(2), []byte{2, 'c'})))
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if got := r.Buffered(); got != 6 {
		t.Fatalf("Buffered = %d after the first frame, want 6", got)
	}
}

// shortWriter accepts at most half of each write and reports no error:
// a broken io.Writer.
type shortWriter struct{ bytes.Buffer }

func (w *shortWriter) Write(p []byte) (int, error) {
	n := len(p) / 2
	w.Buffer.Write(p[:n])
	return n, nil
}

// failWriter accepts limit bytes, then fails.
type failWriter struct {
	bytes.Buffer
	limit int
}

func (w *failWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) <= w.limit {
		return w.Buffer.Write(p)
	}
	n := w.limit - w.Len()
	w.Buffer.Write(p[:n])
	return n, errBoom
}

func TestWriterShortWrites(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte{1}, 1000)
	for _, threshold := range []int{100, 1 << 20} { // writev path and copy path
		var sw shortWriter
		w := NewWriter(&sw, WithWritevThreshold(threshold))
		err := w.WriteFrame(1, payload)
		if err == nil {
			err = w.Flush()
		}
		if !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("threshold %d: got %v, want io.ErrShortWrite", threshold, err)
		}
		// Sticky.
		if err := w.WriteFrame(1, nil); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("threshold %d: WriteFrame after failure: %v", threshold, err)
		}
		if err := w.Flush(); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("threshold %d: Flush after failure: %v", threshold, err)
		}
		buf := w.Begin(1)
		if err := w.End(append(buf, 1)); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("threshold %d: End after failure: %v", threshold, err)
		}
		// What did reach the stream is a prefix of the intended bytes.
		want := cat(le(1001), []byte{1}, payload)
		if !bytes.HasPrefix(want, sw.Bytes()) || sw.Len() == len(want) {
			t.Fatalf("threshold %d: wrote %d bytes, not a strict prefix", threshold, sw.Len())
		}
		// Reset recovers.
		var out bytes.Buffer
		w.Reset(&out)
		if err := w.WriteFrame(2, []byte{9}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil || !bytes.Equal(out.Bytes(), cat(le(2), []byte{2, 9})) {
			t.Fatalf("after Reset: %x %v", out.Bytes(), err)
		}
	}
}

func TestWriterErrorMidStream(t *testing.T) {
	t.Parallel()
	fw := &failWriter{limit: 7}
	w := NewWriter(fw)
	if err := w.WriteFrame(1, []byte("hello world")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); !errors.Is(err, errBoom) {
		t.Fatalf("Flush = %v, want boom", err)
	}
	if err := w.WriteFrame(1, nil); !errors.Is(err, errBoom) {
		t.Fatalf("sticky: %v", err)
	}
}

func TestWriterMisuse(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out, WithMaxFrameSize(10))
	if err := w.End(nil); !errors.Is(err, ErrNoBegin) {
		t.Fatalf("End without Begin: %v", err)
	}
	if err := w.WriteFrame(1, make([]byte, 10)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("too large WriteFrame: %v", err)
	}
	buf := w.Begin(1)
	if err := w.End(append(buf, make([]byte, 10)...)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("too large End: %v", err)
	}
	buf = w.Begin(1)
	if err := w.End(buf[:len(buf)-1]); !errors.Is(err, ErrNoBegin) {
		t.Fatalf("End with a truncated buffer: %v", err)
	}
	// An abandoned Begin leaves no trace.
	buf = w.Begin(3)
	_ = append(buf, 1, 2, 3)
	if err := w.WriteFrame(2, []byte{7}); err != nil {
		t.Fatal(err)
	}
	if w.Buffered() != 6 {
		t.Fatalf("Buffered = %d, want 6", w.Buffered())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := cat(le(2), []byte{2, 7}); !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("got %x, want %x (refused and abandoned frames must not be written)", out.Bytes(), want)
	}
}

// End refuses a buffer that does not extend what Begin returned, as
// ErrNoBegin says, and keeps the pending frames: it used to take any
// buffer long enough as its own, so the frames pending before Begin were
// replaced by whatever that buffer held (zeros here: a length-0 frame on
// the wire) and lost without an error. A buffer that append moved to a
// larger array still extends Begin's.
func TestWriterEndForeignBuffer(t *testing.T) {
	t.Parallel()
	for _, http := range []bool{false, true} {
		var out bytes.Buffer
		var opts []Option
		if http {
			opts = append(opts, WithHTTPFraming())
		}
		w := NewWriter(&out, opts...)
		if err := w.WriteFrame(1, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		buf := w.Begin(2)
		if err := w.End(make([]byte, len(buf)+3)); !errors.Is(err, ErrNoBegin) {
			t.Fatalf("http=%v: End(a buffer of other bytes) = %v, want ErrNoBegin", http, err)
		}
		buf = w.Begin(2)
		moved := append(make([]byte, 0, len(buf)+1000), buf...)
		moved = append(moved, "world"...)
		if err := w.End(moved); err != nil {
			t.Fatalf("http=%v: End(Begin's bytes moved by append) = %v", http, err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want := cat(le(6), []byte{1}, []byte("hello"), le(6), []byte{2}, []byte("world"))
		if http {
			want = cat(be(5), []byte("hello"), be(5), []byte("world"))
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("http=%v: wrote %x, want %x (the pending frame, then the moved one)", http, out.Bytes(), want)
		}
	}
}

// countWriter counts Write calls.
type countWriter struct {
	bytes.Buffer
	writes int
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestWriterCoalesces(t *testing.T) {
	t.Parallel()
	var cw countWriter
	w := NewWriter(&cw)
	for i := 0; i < 100; i++ {
		if err := w.WriteFrame(2, []byte("answer")); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.Buffered(), 100*11; got != want {
		t.Fatalf("Buffered = %d, want %d", got, want)
	}
	if cw.writes != 0 {
		t.Fatalf("%d writes before Flush", cw.writes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if cw.writes != 1 || cw.Len() != 1100 || w.Buffered() != 0 {
		t.Fatalf("after Flush: %d writes, %d bytes, %d buffered; want 1, 1100, 0", cw.writes, cw.Len(), w.Buffered())
	}
	// A full buffer is written out by itself.
	cw = countWriter{}
	w = NewWriter(&cw, WithBufferSize(64))
	for i := 0; i < 10; i++ {
		if err := w.WriteFrame(2, []byte("answer")); err != nil {
			t.Fatal(err)
		}
	}
	if cw.writes == 0 || w.Buffered() > 64 {
		t.Fatalf("buffer of 64 holds %d bytes after %d writes", w.Buffered(), cw.writes)
	}
}

// vecWriter records whether the large payload was handed over without a
// copy (the same backing array), and a copy of each write (a Writer may
// reuse or pool its buffer once Write returns, as io.Writer allows).
type vecWriter struct {
	calls [][]byte
	first []*byte
}

func (w *vecWriter) Write(p []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(p))
	w.first = append(w.first, &p[0])
	return len(p), nil
}

func TestWriterWritevDoesNotCopy(t *testing.T) {
	t.Parallel()
	var vw vecWriter
	w := NewWriter(&vw, WithWritevThreshold(1000))
	if err := w.WriteFrame(1, []byte("small")); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1000)
	if err := w.WriteFrame(2, payload); err != nil {
		t.Fatal(err)
	}
	if len(vw.calls) != 2 {
		t.Fatalf("%d writes, want 2 (pending+header, payload)", len(vw.calls))
	}
	if want := cat(le(6), []byte{1}, []byte("small"), le(1001), []byte{2}); !bytes.Equal(vw.calls[0], want) {
		t.Fatalf("first write %x, want %x", vw.calls[0], want)
	}
	if vw.first[1] != &payload[0] {
		t.Fatal("the large payload was copied")
	}
	if w.Buffered() != 0 {
		t.Fatalf("Buffered = %d after writev", w.Buffered())
	}
}

// TestReaderResumesAfterReadError: an error of the underlying reader (as a
// read deadline would give) loses nothing, wherever it strikes, and
// Buffered counts the bytes of an interrupted frame.
func TestReaderResumesAfterReadError(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{'b'}, 300)
	stream := cat(le(3), []byte{1, 'h', 'i'}, le(301), []byte{2}, big, le(2), []byte{3, 'z'})
	for cut := 1; cut < len(stream); cut++ {
		src := &errAfterReader{data: stream[:cut], err: errFlaky}
		r := NewReader(src, WithBufferSize(16))
		var got []string
		for {
			kind, p, err := r.Next()
			if err == errFlaky {
				if src.data != nil && len(src.data) == 0 {
					// Let the rest of the stream through.
					src.data = stream[cut:]
					src.err = io.EOF
					if cut == 5 || cut == 2 {
						if r.Buffered() != cut {
							t.Fatalf("cut %d: Buffered = %d inside the first header", cut, r.Buffered())
						}
					}
					if cut > 7 && cut < 7+5+300 && r.Buffered() != cut-7 {
						t.Fatalf("cut %d: Buffered = %d inside the large frame, want %d", cut, r.Buffered(), cut-7)
					}
				}
				continue
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			got = append(got, fmt.Sprintf("%d:%d", kind, len(p)))
			if kind == 2 && !bytes.Equal(p, big) {
				t.Fatalf("cut %d: large body corrupted", cut)
			}
		}
		if want := "1:2 2:300 3:1"; strings.Join(got, " ") != want {
			t.Fatalf("cut %d: frames %q, want %q", cut, strings.Join(got, " "), want)
		}
	}
}

// badCountConn is a net.Conn (not a socket of package net) whose Write
// takes half of each buffer and says so without an error, or returns a
// count of -1: both break io.Writer's contract.
type badCountConn struct {
	net.Conn
	negative bool
	got      []byte
}

func (c *badCountConn) Write(p []byte) (int, error) {
	if c.negative {
		return -1, nil
	}
	n := len(p) / 2
	c.got = append(c.got, p[:n]...)
	return n, nil
}

// TestWriterWritevBadCounts: the large-payload path over a net.Conn that is
// not a socket (a wrapper, a tls.Conn) writes the payload only once the
// bytes before it are all written, and takes a count outside 0..len(p) for
// an error. It used to write through net.Buffers, which wrote the payload
// after a short write of the header, where the peer would read it as the
// header's rest, and panicked (slice bounds out of range) on a count of -1.
func TestWriterWritevBadCounts(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	short := &badCountConn{Conn: a}
	w := NewWriter(short, WithWritevThreshold(64))
	payload := bytes.Repeat([]byte{0xAB}, 100)
	if err := w.WriteFrame(1, payload); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write: %v, want io.ErrShortWrite", err)
	}
	if want := cat(le(101), []byte{1}); !bytes.Equal(short.got, want[:len(want)/2]) {
		t.Fatalf("the stream got %x, want the first half of the header %x alone", short.got, want)
	}
	for _, wc := range []struct {
		name  string
		write func(*Writer) error
	}{
		{"writev", func(w *Writer) error { return w.WriteFrame(1, payload) }},
		{"flush", func(w *Writer) error { w.WriteFrame(1, payload[:10]); return w.Flush() }},
	} {
		w := NewWriter(&badCountConn{Conn: a, negative: true}, WithWritevThreshold(64))
		err := wc.write(w)
		if err == nil || !strings.Contains(err.Error(), "invalid count") {
			t.Fatalf("%s, a count of -1: %v, want an invalid count error", wc.name, err)
		}
		if err2 := w.Flush(); err2 != err {
			t.Fatalf("%s: after the error Flush = %v, want it again", wc.name, err2)
		}
	}
}

// zeroReader returns (0, nil) zeros times, then its data.
type zeroReader struct {
	zeros int
	data  []byte
}

func (r *zeroReader) Read(p []byte) (int, error) {
	if r.zeros > 0 {
		r.zeros--
		return 0, nil
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReaderNoProgress: a reader that returns (0, nil) a hundred times in a
// row makes Next return io.ErrNoProgress, as its doc says, without losing
// anything: a Next after it reads on.
func TestReaderNoProgress(t *testing.T) {
	t.Parallel()
	src := &zeroReader{zeros: 250, data: cat(le(3), []byte{1, 'h', 'i'})}
	r := NewReader(src)
	for i := range 2 {
		if _, _, err := r.Next(); err != io.ErrNoProgress {
			t.Fatalf("Next %d: %v, want io.ErrNoProgress", i, err)
		}
	}
	if kind, p, err := r.Next(); err != nil || kind != 1 || string(p) != "hi" {
		t.Fatalf("Next after the reader went on: %d %q %v", kind, p, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next at the end: %v, want io.EOF", err)
	}
}
