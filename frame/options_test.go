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
		{"capped", []Option{WithMaxFrameSize(math.MaxInt)}, maxSize},
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

// WithBufferSize is capped as WithMaxFrameSize is (maxSize), so that the
// Reader's arithmetic on buffer lengths cannot overflow an int.
func TestBufferSizeCapped(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, DefaultBufferSize},
		{1, minBufferSize},
		{1 << 20, 1 << 20},
		{maxSize, maxSize},
		{math.MaxInt, maxSize},
	} {
		if r, w := NewReader(nil, WithBufferSize(tc.n)), NewWriter(nil, WithBufferSize(tc.n)); r.rsize != tc.want || w.size != tc.want {
			t.Errorf("WithBufferSize(%d): read-ahead %d, writer %d, want %d", tc.n, r.rsize, w.size, tc.want)
		}
	}
}
