//go:build !race

package loadgen

import "testing"

func TestRecordAllocatesNothing(t *testing.T) {
	h := new(Histogram)
	v := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = v*3 + 7
	}); n != 0 {
		t.Fatalf("Record allocates %v per call, want 0", n)
	}
}
