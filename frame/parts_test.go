package frame

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// WriteFrameParts(kind, head, body) writes the same bytes as
// WriteFrame(kind, head+body), below and above the writev threshold, on a
// net.Conn (net.Buffers path) and on a plain writer, framed or HTTP.
func TestWriteFramePartsSameBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		head, body int
		http       bool
	}{
		{"empty", 0, 0, false},
		{"small", 36, 64, false},
		{"at-threshold", 36, 256, false},
		{"above-threshold", 36, 1000, false},
		{"no-head-big", 0, 300, false},
		{"http-big", 20, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := bytes.Repeat([]byte{'h'}, tc.head)
			body := bytes.Repeat([]byte{'b'}, tc.body)
			opts := []Option{WithWritevThreshold(256), WithBufferSize(512)}
			if tc.http {
				opts = append(opts, WithHTTPFraming())
			}
			var want bytes.Buffer
			ww := NewWriter(&want, opts...)
			ww.WriteFrame(3, []byte("before"))
			if err := ww.WriteFrame(7, append(append([]byte{}, head...), body...)); err != nil {
				t.Fatal(err)
			}
			ww.Flush()

			var plain bytes.Buffer
			pw := NewWriter(&plain, opts...)
			pw.WriteFrame(3, []byte("before"))
			if err := pw.WriteFrameParts(7, head, body); err != nil {
				t.Fatal(err)
			}
			pw.Flush()
			if !bytes.Equal(plain.Bytes(), want.Bytes()) {
				t.Fatalf("plain writer: got %d bytes, want %d", plain.Len(), want.Len())
			}

			a, b := net.Pipe()
			got := make(chan []byte, 1)
			go func() { p, _ := io.ReadAll(b); got <- p }()
			cw := NewWriter(a, opts...)
			cw.WriteFrame(3, []byte("before"))
			if err := cw.WriteFrameParts(7, head, body); err != nil {
				t.Fatal(err)
			}
			cw.Flush()
			a.Close()
			if p := <-got; !bytes.Equal(p, want.Bytes()) {
				t.Fatalf("net.Conn: got %d bytes, want %d", len(p), want.Len())
			}
		})
	}
}

func TestWriteFramePartsTooLarge(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(&out, WithMaxFrameSize(100))
	if err := w.WriteFrameParts(1, make([]byte, 50), make([]byte, 50)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err %v, want ErrFrameTooLarge", err)
	}
	w.Flush()
	if out.Len() != 0 {
		t.Fatalf("%d bytes written for a refused frame", out.Len())
	}
}
