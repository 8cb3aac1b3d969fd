package rpc

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkUnaryIntercepted is BenchmarkUnary (its floor) with one trivial
// interceptor on each side: the cost of the chains.
func BenchmarkUnaryIntercepted(b *testing.B) {
	si := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		return next(ctx, req, resp)
	}
	ci := func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		return invoke(ctx, method, req, resp)
	}
	benchUnaryWith(b, []ServerOption{WithInterceptors(si)}, []ClientOption{WithClientInterceptors(ci)})
}

// BenchmarkUnaryObserved is BenchmarkUnary (its floor) with an observer on
// each side that counts calls and bytes in shared atomic counters, as a
// metrics hook would: the cost of the hook (two clock reads per call and
// side, plus the counters).
func BenchmarkUnaryObserved(b *testing.B) {
	var calls, bytes atomic.Uint64
	obs := func(ev CallEvent) {
		calls.Add(1)
		bytes.Add(uint64(ev.BytesIn + ev.BytesOut))
	}
	benchUnaryWith(b, []ServerOption{WithObserver(obs)}, []ClientOption{WithObserver(obs)})
	if calls.Load() == 0 {
		b.Fatal("observer never ran")
	}
}

func benchUnaryWith(b *testing.B, so []ServerOption, co []ClientOption) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				_, addr, _ := testServer(b, so...)
				c := dial(b, addr, co...)
				benchCalls(b, c, size, callers)
			})
		}
	}
}
