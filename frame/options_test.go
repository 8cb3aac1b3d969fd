package frame

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// MaxFrameSize reports the limit the Reader enforces: the default, the
// value given, the default again for n <= 0, and 2^32-1 for larger values;
// the last option given wins, and a nil Option is skipped.
func TestReaderMaxFrameSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, DefaultMaxFrameSize},
		{"given", []Option{WithMaxFrameSize(100)}, 100},
		{"zero", []Option{WithMaxFrameSize(0)}, DefaultMaxFrameSize},
		{"negative", []Option{WithMaxFrameSize(-1)}, DefaultMaxFrameSize},
		{"capped", []Option{WithMaxFrameSize(math.MaxUint32 + 10)}, math.MaxUint32},
		{"last wins", []Option{WithMaxFrameSize(100), nil, WithMaxFrameSize(200)}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewReader(nil, tc.opts...).MaxFrameSize(); got != tc.want {
				t.Fatalf("MaxFrameSize() = %d, want %d", got, tc.want)
			}
		})
	}
}

// One Option value configures any number of Readers and Writers alike.
func TestOptionReused(t *testing.T) {
	max := WithMaxFrameSize(8)
	var buf bytes.Buffer
	w := NewWriter(&buf, max)
	if err := w.WriteFrame(1, make([]byte, 8)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("writer: 8-byte payload (9 with kind) = %v, want ErrFrameTooLarge", err)
	}
	for i := 0; i < 2; i++ {
		r := NewReader(bytes.NewReader([]byte{9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}), max)
		if _, _, err := r.Next(); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("reader %d: %v, want ErrFrameTooLarge", i, err)
		}
	}
}
