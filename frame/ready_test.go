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
