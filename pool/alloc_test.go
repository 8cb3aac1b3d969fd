//go:build !race

package pool_test

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/pool"
)

// TestAllocsWarm: a warm SizedPool hands back its buffers without
// allocating.
func TestAllocsWarm(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p pool.SizedPool
	p.Put(p.Get(4096, 0))
	if n := testing.AllocsPerRun(1000, func() {
		b := p.Get(4096, 0)
		b.B[0] = 1
		p.Put(b)
	}); n != 0 {
		t.Fatalf("SizedPool Get/Put: %v allocs, want 0", n)
	}
}

// TestAllocsSizedPoolMixed: after many Puts of small buffers (more than
// the 42,000 after which a bytebufferpool.Pool calibrates), rare large
// ones are still kept.
func TestAllocsSizedPoolMixed(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p pool.SizedPool
	for i := 0; i < 45000; i++ {
		p.Put(p.Get(5000, 0))
	}
	p.Put(p.Get(300<<10, 0))
	if n := testing.AllocsPerRun(100, func() {
		p.Put(p.Get(5000, 0))
		p.Put(p.Get(300<<10, 0))
	}); n != 0 {
		t.Fatalf("mixed sizes after calibration: %v allocs, want 0", n)
	}
}
