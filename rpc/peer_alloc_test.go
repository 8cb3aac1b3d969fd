//go:build !race

package rpc

import (
	"context"
	"testing"
)

// PeerFrom allocates nothing, in a call's ctx and in a stream's, over
// TLS (whose state is stored once per connection) and over TCP.
func TestPeerFromAllocs(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		var sopts []ServerOption
		var copts []ClientOption
		if useTLS {
			so, co := tlsOptions(t)
			sopts, copts = []ServerOption{so}, []ClientOption{co}
		}
		s, addr, _ := testServer(t, sopts...)
		var callAllocs, streamAllocs float64 = -1, -1
		s.Handle(mPeer, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			callAllocs = testing.AllocsPerRun(100, func() {
				if p, ok := PeerFrom(ctx); !ok || p.Addr == nil || (p.TLS != nil) != useTLS {
					panic("wrong peer")
				}
			})
			return resp, nil
		})
		s.HandleStream(mPeerStream, func(ctx context.Context, init []byte, st *Stream) error {
			streamAllocs = testing.AllocsPerRun(100, func() {
				if p, ok := PeerFrom(ctx); !ok || p.Addr == nil || (p.TLS != nil) != useTLS {
					panic("wrong peer")
				}
			})
			return nil
		})
		peerCallAndStream(t, dial(t, addr, copts...))
		if callAllocs != 0 || streamAllocs != 0 {
			t.Errorf("PeerFrom (TLS %v): %v allocations in a call, %v in a stream, want 0", useTLS, callAllocs, streamAllocs)
		}
	}
}
