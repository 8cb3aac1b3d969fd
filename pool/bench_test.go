package pool_test

import (
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

func BenchmarkGetPut(b *testing.B) {
	var p pool.Pool
	b.ReportAllocs()
	for b.Loop() {
		buf := p.GetLen(512)
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

func BenchmarkGetPutBuilder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		pool.PutBuilder(pool.GetBuilder())
	}
}
