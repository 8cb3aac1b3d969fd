package frame

import (
	"bytes"
	"testing"
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
