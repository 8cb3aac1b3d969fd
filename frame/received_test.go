package frame

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// Received counts every byte taken from the stream, on the plain path (any
// io.Reader) and on the readiness-first socket path alike.
func TestReceived(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, n := range []int{1, 600, 70 << 10, 3} {
		if err := w.WriteFrame(1, bytes.Repeat([]byte{'x'}, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	stream := out.Bytes()

	t.Run("reader", func(t *testing.T) {
		fr := NewReader(bytes.NewReader(stream))
		drain(t, fr)
		if got := fr.Received(); got != uint64(len(stream)) {
			t.Fatalf("Received %d, want %d", got, len(stream))
		}
		if got := fr.Framed(); got != uint64(len(stream)) {
			t.Fatalf("Framed %d after the end, want %d", got, len(stream))
		}
	})

	t.Run("tcp", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write(stream)
			c.Close()
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fr := NewReader(c)
		drain(t, fr)
		if got := fr.Received(); got != uint64(len(stream)) {
			t.Fatalf("Received %d, want %d", got, len(stream))
		}
		if got := fr.Framed(); got != uint64(len(stream)) {
			t.Fatalf("Framed %d after the end, want %d", got, len(stream))
		}
	})
}

// Framed counts the bytes of the frames returned as of the Reader's
// latest read: a frame whose bytes are not all in is not counted, however
// many came, and every frame returned is counted once the Reader waits
// for more.
func TestFramed(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out)
	for range 3 {
		if err := w.WriteFrame(1, []byte("abc")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	stream := out.Bytes()
	frameLen := uint64(len(stream) / 3)
	pr, pw := io.Pipe()
	fr := NewReader(pr)
	go func() {
		pw.Write(stream[:len(stream)-1]) // the third frame but its last byte
		pw.Write(stream[len(stream)-1:])
		pw.Close()
	}()
	for i := range 2 {
		if _, _, err := fr.Next(); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if got := fr.Framed(); got > 2*frameLen {
		t.Fatalf("Framed %d after two frames of %d bytes", got, frameLen)
	}
	if _, _, err := fr.Next(); err != nil { // reads the last byte
		t.Fatal(err)
	}
	if got := fr.Framed(); got != 2*frameLen {
		t.Fatalf("Framed %d once the third frame's last byte was read, want %d", got, 2*frameLen)
	}
	if _, _, err := fr.Next(); err != io.EOF {
		t.Fatalf("the end: %v", err)
	}
	if got := fr.Framed(); got != 3*frameLen {
		t.Fatalf("Framed %d at the end, want %d", got, 3*frameLen)
	}
}

// drain reads frames until the end of the stream.
func drain(t *testing.T, fr *Reader) {
	t.Helper()
	for {
		_, _, err := fr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
