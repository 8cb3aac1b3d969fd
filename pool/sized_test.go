package pool

import (
	"math"
	"testing"
)

// newCap gives a new backing array the capacity Get documents, also for
// lengths whose power-of-two class does not fit in an int (above 2^30
// where an int has 32 bits, above 2^62 where it has 64): n itself then,
// never a negative capacity that would make Get panic.
func TestNewCap(t *testing.T) {
	t.Parallel()
	const top = math.MaxInt/2 + 2 // its power of two, 1<<(bits.UintSize-1), overflows an int
	tests := []struct {
		n, capLimit, want int
	}{
		{64, 0, 64},
		{65, 0, 128},
		{5000, 0, 8192},
		{5000, 6000, 6000},
		{5000, 4000, 8192}, // limit below n: ignored
		{math.MaxInt/2 + 1, 0, math.MaxInt/2 + 1},
		{top, 0, top},
		{top, math.MaxInt, top},
		{math.MaxInt, 0, math.MaxInt},
	}
	for _, tt := range tests {
		if got := newCap(tt.n, classOf(tt.n), tt.capLimit); got != tt.want {
			t.Errorf("newCap(%d, class %d, %d) = %d, want %d", tt.n, classOf(tt.n), tt.capLimit, got, tt.want)
		}
	}
}
