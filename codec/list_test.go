package codec_test

import (
	"math"
	"testing"
)

// TestListSizeOverflow: List.Data and List.VarFits multiply the list's
// count by an element size. Given a hostile count (four elements claimed
// where eight bytes lie) and an element size large enough, the product
// passes 64 bits; it used to wrap to a small size that fits in the
// message (4 × (2⁶² + 1) = 2⁶⁴ + 4 read as 4), so Data gave 4 bytes and
// VarFits said the elements fit. A size that overflows is out of bounds.
// (On a 32-bit platform no int is large enough to overflow: the cases
// there check that nothing fits.)
func TestListSizeOverflow(t *testing.T) {
	t.Parallel()
	l := rootList(t, rawListMessage(make([]byte, 8), 4))
	if l.Len() != 4 {
		t.Fatalf("Len %d, want 4", l.Len())
	}
	for _, size := range []int{math.MaxInt/2 + 2, math.MaxInt/4 + 1, math.MaxInt} {
		if got := l.Data(size); got != nil {
			t.Errorf("Data(%d) of 4 elements in 8 bytes = %d bytes, want nil", size, len(got))
		}
	}
	// With the size word, 4 × (2⁶² − 4 + 4) = 2⁶⁴; MaxInt − 3 + 4 passes
	// MaxInt itself.
	for _, minElem := range []int{math.MaxInt/2 - 3, math.MaxInt - 3, math.MaxInt} {
		if l.VarFits(minElem) {
			t.Errorf("VarFits(%d) true for 4 elements in 8 bytes", minElem)
		}
	}
	if len(l.Data(2)) != 8 || !rootList(t, rawListMessage(make([]byte, 8), 2)).VarFits(0) {
		t.Error("a list whose elements fit reads as if they did not")
	}
}
