package pool_test

import (
	"sync"
	"testing"

	"github.com/valyala/bytebufferpool"
	"github.com/zapcodec/zapcodec/pool"
)

func BenchmarkGetPut(b *testing.B) {
	var p pool.SizedPool
	b.ReportAllocs()
	for b.Loop() {
		buf := p.Get(512, 0)
		buf.B[0] = 1
		p.Put(buf)
	}
}

// BenchmarkFloorSyncPool is the floor: a bare sync.Pool of byte slices.
func BenchmarkFloorSyncPool(b *testing.B) {
	sp := sync.Pool{New: func() any { s := make([]byte, 512); return &s }}
	b.ReportAllocs()
	for b.Loop() {
		s := sp.Get().(*[]byte)
		(*s)[0] = 1
		sp.Put(s)
	}
}

// mixedLen is the length of the i-th Get of the mixed benchmarks: 5,000
// bytes, and 300 KiB once every 32 Gets (3%, above the 95th percentile
// that a bytebufferpool.Pool keeps).
func mixedLen(i int) int {
	if i%32 == 31 {
		return 300 << 10
	}
	return 5000
}

// mixedWarm is more Gets than the 42,000 Puts after which a
// bytebufferpool.Pool calibrates.
const mixedWarm = 50000

// BenchmarkSizedPoolMixed: frame-like buffer use, mostly small with a rare
// large one, on a SizedPool. Warm, it allocates nothing.
func BenchmarkSizedPoolMixed(b *testing.B) {
	var p pool.SizedPool
	for i := range mixedWarm {
		p.Put(p.Get(mixedLen(i), 0))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf := p.Get(mixedLen(i), 0)
		buf.B[0] = 1
		p.Put(buf)
		i++
	}
}

// BenchmarkBytebufferpoolMixed is the same work on one bytebufferpool.Pool,
// used as designed (a buffer that is too short is replaced, as a caller of
// Get must do). Once calibrated, it drops the large buffers it gets back,
// so every large Get allocates again: the reason SizedPool keeps size
// classes of its own (see the package doc).
func BenchmarkBytebufferpoolMixed(b *testing.B) {
	var p bytebufferpool.Pool
	get := func(n int) *bytebufferpool.ByteBuffer {
		buf := p.Get()
		if cap(buf.B) < n {
			buf.B = make([]byte, n)
		}
		buf.B = buf.B[:n]
		return buf
	}
	for i := range mixedWarm {
		p.Put(get(mixedLen(i)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf := get(mixedLen(i))
		buf.B[0] = 1
		p.Put(buf)
		i++
	}
}
