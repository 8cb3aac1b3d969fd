package cluster

import (
	"testing"
	"unsafe"
)

// The call counter, which every call writes on every core, shares no
// cache line with a word every call reads: the ready set, the retry
// budget's words a call looks at (its tokens, deposit and cap), the
// interceptor chains, the weighted balancer and the balancer option.
// It shared the line of the budget's cap, which each call then missed
// after another core's call. A Client is allocated 64-byte aligned (its
// size class, 640 bytes, is a multiple of 64, in page-aligned spans), so
// offsets tell lines apart.
func TestCallCounterLineApart(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is checked on 64-bit platforms")
	}
	var c Client
	line := func(off uintptr) uintptr { return off / 64 }
	budget := unsafe.Offsetof(c.budget)
	calls := line(unsafe.Offsetof(c.calls))
	for _, f := range []struct {
		name string
		off  uintptr
		size uintptr
	}{
		{"options", unsafe.Offsetof(c.o), unsafe.Sizeof(c.o)},
		{"chain", unsafe.Offsetof(c.chain), unsafe.Sizeof(c.chain)},
		{"schain", unsafe.Offsetof(c.schain), unsafe.Sizeof(c.schain)},
		{"wb", unsafe.Offsetof(c.wb), unsafe.Sizeof(c.wb)},
		{"ready", unsafe.Offsetof(c.ready), unsafe.Sizeof(c.ready)},
		{"budget.tokens", budget + unsafe.Offsetof(c.budget.tokens), unsafe.Sizeof(c.budget.tokens)},
		{"budget.deposit", budget + unsafe.Offsetof(c.budget.deposit), unsafe.Sizeof(c.budget.deposit)},
		{"budget.cap", budget + unsafe.Offsetof(c.budget.cap), unsafe.Sizeof(c.budget.cap)},
	} {
		if line(f.off) <= calls && calls <= line(f.off+f.size-1) {
			t.Errorf("the call counter (offset %d) shares cache line %d with %s (offsets %d to %d)",
				unsafe.Offsetof(c.calls), calls, f.name, f.off, f.off+f.size-1)
		}
	}
	// Every size class above 512 bytes and up to 1024 is a multiple of
	// 64; below, some are not (480), and objects of them may straddle.
	if s := unsafe.Sizeof(c); s <= 512 || s > 1024 {
		t.Errorf("Client is %d bytes, outside (512, 1024], whose size classes keep it 64-byte aligned: its offsets no longer tell its cache lines", s)
	}
}
