package frame

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/iotest"
	"time"
)

// Wait returns after the first byte of a frame, not the whole frame; then
// Next returns the frame; at the end of the stream Wait reports io.EOF,
// sticky.
func TestWaitFirstByte(t *testing.T) {
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, []byte("abc"))
	w.WriteFrame(2, []byte("defgh"))
	w.Flush()
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream.Bytes())))
	for _, want := range []string{"abc", "defgh"} {
		if err := r.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if r.Buffered() != 1 {
			t.Fatalf("Wait buffered %d bytes, want 1 (one read)", r.Buffered())
		}
		if err := r.Wait(); err != nil || r.Buffered() != 1 {
			t.Fatalf("second Wait read again: %v, buffered %d", err, r.Buffered())
		}
		_, p, err := r.Next()
		if err != nil || string(p) != want {
			t.Fatalf("Next = %q, %v; want %q", p, err, want)
		}
	}
	for range 2 {
		if err := r.Wait(); err != io.EOF {
			t.Fatalf("Wait at the end = %v, want io.EOF", err)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after Wait's EOF = %v, want io.EOF", err)
	}
}

// errOnce fails its first read with err, then reads from r.
type errOnce struct {
	r   io.Reader
	err error
}

func (e *errOnce) Read(p []byte) (int, error) {
	if err := e.err; err != nil {
		e.err = nil
		return 0, err
	}
	return e.r.Read(p)
}

// An error of the underlying reader is returned and loses nothing: Wait
// (or Next) may be called again.
func TestWaitResumes(t *testing.T) {
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, []byte("abc"))
	w.Flush()
	r := NewReader(&errOnce{r: bytes.NewReader(stream.Bytes()), err: os.ErrDeadlineExceeded})
	if err := r.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait = %v, want the reader's error", err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("Wait again: %v", err)
	}
	if _, p, err := r.Next(); err != nil || string(p) != "abc" {
		t.Fatalf("Next = %q, %v", p, err)
	}
	// A stream that ends inside a frame: Wait sees the first bytes, Next
	// the cut.
	r = NewReader(bytes.NewReader(stream.Bytes()[:6]))
	if err := r.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if _, _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("Next = %v, want io.ErrUnexpectedEOF", err)
	}
}

// On a socket (the readiness-first read), Wait returns with the part of a
// frame that arrived while the rest is still missing, and a read deadline
// that fires during Wait loses nothing.
func TestWaitSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	r := NewReader(sc)
	sc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if err := r.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait on a silent socket = %v, want a deadline error", err)
	}
	sc.SetReadDeadline(time.Time{})
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, bytes.Repeat([]byte("x"), 2000))
	w.Flush()
	b := stream.Bytes()
	if _, err := cc.Write(b[:3]); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if n := r.Buffered(); n < 1 || n > 3 || r.Ready() {
		t.Fatalf("after Wait: %d bytes buffered, Ready %v; want part of the header", n, r.Ready())
	}
	if _, err := cc.Write(b[3:]); err != nil {
		t.Fatal(err)
	}
	if _, p, err := r.Next(); err != nil || len(p) != 2000 {
		t.Fatalf("Next = %d bytes, %v", len(p), err)
	}
}
