// Package bigbuf gives tests byte slices longer than 4 GiB that cost only
// the pages they touch, so that a test can show what a reader does with a
// length or position that does not fit in 32 bits without holding 4 GiB of
// memory: the slice is an anonymous private mapping reserved without swap,
// whose untouched pages read as zero and are never made resident.
//
// A test that asks for one is skipped where such a mapping cannot be made:
// on a 32-bit platform (no slice is that long), on a system other than
// Linux, or when the kernel refuses the address space (ulimit -v, a strict
// overcommit policy).
package bigbuf

import (
	"math"
	"testing"
)

// New returns a zeroed slice of n bytes whose memory is released when t
// ends, or skips t (see the package doc) when it cannot make one. Only the
// pages the test writes, or reads after writing, take memory. The slice
// is not in the Go heap: keep no pointer into it after t ends.
func New(t testing.TB, n uint64) []byte {
	t.Helper()
	if n > math.MaxInt {
		t.Skipf("bigbuf: %d bytes do not fit in an int on this platform", n)
	}
	b, err := mapZeroed(int(n))
	if err != nil {
		t.Skipf("bigbuf: cannot map %d bytes: %v", n, err)
	}
	t.Cleanup(func() {
		if err := unmap(b); err != nil {
			t.Errorf("bigbuf: unmapping %d bytes: %v", n, err)
		}
	})
	return b
}
