//go:build !race

package pool_test

import (
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

func TestAllocsWarm(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
	var p pool.Pool
	p.Put(p.GetLen(4096))
	if n := testing.AllocsPerRun(1000, func() {
		b := p.GetLen(4096)
		b.B[0] = 1
		p.Put(b)
	}); n != 0 {
		t.Fatalf("Pool GetLen/Put: %v allocs, want 0", n)
	}
	pool.PutBuilder(pool.GetBuilder())
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(1000, func() {
		b := pool.GetBuilder()
		b.Reset(dst)
		o := b.StartObject(16)
		o.SetUint64(0, 1)
		o.SetText(8, "abc")
		b.SetRoot(o.Finish())
		_ = b.Finish()
		pool.PutBuilder(b)
	}); n != 0 {
		t.Fatalf("GetBuilder/build/PutBuilder: %v allocs, want 0", n)
	}
}

// TestAllocsSizedPoolMixed: after bytebufferpool's calibration (42,000 Puts)
// on small buffers, rare large ones are still kept.
func TestAllocsSizedPoolMixed(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
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
