package frame

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
)

// Ready is true exactly when Next would not read from the stream.
func TestReaderReady(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, []byte("abc"))
	w.WriteFrame(2, []byte("defgh"))
	w.Flush()
	whole := stream.Bytes()
	tests := []struct {
		name string
		in   []byte
		want []bool // Ready before each Next, until Next fails
	}{
		{"two frames", whole, []bool{false, true, false, false}}, // EOF is only seen by reading
		{"cut in second body", whole[:len(whole)-1], []bool{false, false}},
		{"cut in second header", whole[:8+2], []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.in))
			for i, want := range tt.want {
				if got := r.Ready(); got != want {
					t.Fatalf("before Next %d: Ready %v, want %v", i, got, want)
				}
				if _, _, err := r.Next(); err != nil {
					if !r.Ready() {
						t.Fatalf("after error %v: Ready false", err)
					}
					return
				}
			}
		})
	}
}

// PeekKind names the next frame's kind exactly when it is buffered whole
// (in the canonical framing), and leaves the last payload as it was.
func TestReaderPeekKind(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, []byte("abc"))
	w.WriteFrame(7, []byte("defgh"))
	w.WriteFrame(3, []byte("ij"))
	w.Flush()
	whole := stream.Bytes()
	r := NewReader(bytes.NewReader(whole[:len(whole)-1])) // the last frame cut
	if _, ok := r.PeekKind(); ok {
		t.Fatal("PeekKind before anything was read: ok")
	}
	_, p, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := r.PeekKind(); !ok || k != 7 {
		t.Fatalf("PeekKind after the first frame: %d %v, want 7 true", k, ok)
	}
	if string(p) != "abc" {
		t.Fatalf("the first payload after PeekKind: %q", p)
	}
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if k, ok := r.PeekKind(); ok {
		t.Fatalf("PeekKind of a frame cut short: %d, ok", k)
	}
	r = NewReader(bytes.NewReader([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 9}))
	r.Next()
	if _, ok := r.PeekKind(); ok {
		t.Fatal("PeekKind of a frame of length 0: ok")
	}
	r = NewReader(bytes.NewReader(whole), WithMaxFrameSize(4))
	r.Next()
	if _, ok := r.PeekKind(); ok {
		t.Fatal("PeekKind of a frame above the maximum: ok")
	}
}

// TryNext returns a frame exactly when Next would return one without
// reading (Ready true and no error), the same frame Next would; when it
// returns none it takes nothing and leaves the last payload valid (with
// poisoning on, so that a payload it ended would read as 0xDB).
func TestReaderTryNext(t *testing.T) {
	defer poison.Set(poison.Set(true))
	var stream bytes.Buffer
	w := NewWriter(&stream)
	w.WriteFrame(1, []byte("abc"))
	w.WriteFrame(2, []byte("defgh"))
	w.WriteFrame(3, nil)
	w.Flush()
	whole := stream.Bytes()
	bad := append(append([]byte(nil), whole[:8]...), 0, 0, 0, 0, 9) // a length of 0 after the first frame
	tests := []struct {
		name  string
		in    []byte
		opts  []Option
		kinds []byte // the frames TryNext returns after the first Next, then none
		err   error  // what Next returns after them
	}{
		{"three frames", whole, nil, []byte{2, 3}, io.EOF},
		{"cut in the last body", whole[:len(whole)-1], nil, []byte{2}, io.ErrUnexpectedEOF},
		{"cut in the second body", whole[:8+9], nil, nil, io.ErrUnexpectedEOF},
		{"cut in the second header", whole[:8+2], nil, nil, io.ErrUnexpectedEOF},
		{"empty frame next", bad, nil, nil, ErrEmptyFrame},
		{"too large next", whole, []Option{WithMaxFrameSize(4)}, nil, ErrFrameTooLarge},
		{"HTTP framing", cat(be(3), []byte("abc"), be(5), []byte("defgh")), []Option{WithHTTPFraming()}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.in), tt.opts...)
			if _, _, ok := r.TryNext(); ok {
				t.Fatal("TryNext before any read: ok")
			}
			_, p, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			last := string(p)
			for i, want := range tt.kinds {
				ready := r.Ready()
				kind, q, ok := r.TryNext()
				if !ok || !ready || kind != want {
					t.Fatalf("frame %d: TryNext = %d %q %v (Ready %v), want kind %d", i+1, kind, q, ok, ready, want)
				}
				if cap(q) != len(q) {
					t.Fatalf("frame %d: payload capacity %d, length %d", i+1, cap(q), len(q))
				}
				p, last = q, string(q)
			}
			buffered := r.Buffered()
			if kind, q, ok := r.TryNext(); ok || r.Buffered() != buffered {
				t.Fatalf("TryNext = %d %q %v, %d bytes buffered (%d before): want none taken", kind, q, ok, r.Buffered(), buffered)
			}
			if string(p) != last {
				t.Fatalf("the last payload after a TryNext that returned none: %q, want %q", p, last)
			}
			if tt.err == nil {
				// HTTP framing: Next takes the frame TryNext leaves.
				if _, q, err := r.Next(); err != nil || string(q) != "defgh" {
					t.Fatalf("Next after TryNext = %q %v, want \"defgh\"", q, err)
				}
				return
			}
			ready := r.Ready()
			if _, _, err := r.Next(); !errors.Is(err, tt.err) {
				t.Fatalf("Next = %v, want %v", err, tt.err)
			}
			if wantReady := tt.err == ErrEmptyFrame || tt.err == ErrFrameTooLarge; ready != wantReady {
				t.Fatalf("Ready before the failing Next: %v, want %v", ready, wantReady)
			}
			if _, _, ok := r.TryNext(); ok {
				t.Fatal("TryNext on a broken Reader: ok")
			}
			if len(tt.opts) > 0 {
				return
			}
			// Reset mends the Reader: TryNext takes frames again.
			r.Reset(bytes.NewReader(whole))
			if _, _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if kind, q, ok := r.TryNext(); !ok || kind != 2 || string(q) != "defgh" {
				t.Fatalf("TryNext after Reset = %d %q %v, want 2 \"defgh\" true", kind, q, ok)
			}
		})
	}
}
