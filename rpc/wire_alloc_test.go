//go:build !race

package rpc

import (
	"context"
	"testing"
	"time"
)

// Warm calls that use the wire extensions allocate nothing either: the
// deadline (with a handler that arms its Done, reads Deadline and Err),
// the cap token, the metadata (encoded once, when the ctx is made), and
// all three together. Client and server share the process, so the counts
// cover both sides.
func TestAllocsWireExtensions(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if _, ok := ctx.Deadline(); ok {
			if ctx.Done() == nil || ctx.Err() != nil {
				return resp, Errorf(StatusBadRequest, "bad ctx")
			}
		}
		resp = append(resp, CapFrom(ctx)...)
		resp = append(resp, MetadataFrom(ctx).Get("traceparent")...)
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	dl, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want int
	}{
		{"none", context.Background(), 4},
		{"deadline", dl, 4},
		{"cap", WithCap(context.Background(), []byte("token")), 9},
		{"metadata", WithMetadata(context.Background(), "traceparent", tp), 4 + len(tp)},
		{"all", WithMetadata(WithCap(dl, []byte("token")), "traceparent", tp), 9 + len(tp)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := []byte("ping")
			resp := make([]byte, 0, 128)
			call := func() {
				out, err := c.Call(tc.ctx, 5, req, resp[:0])
				if err != nil || len(out) != tc.want {
					t.Fatalf("call: %q %v", out, err)
				}
			}
			for i := 0; i < 100; i++ {
				call()
			}
			if n := testing.AllocsPerRun(2000, call); n != 0 {
				t.Errorf("warm call with %s: %v allocs, want 0", tc.name, n)
			}
		})
	}
}

// A pipelined pair (Send, Promise.Call, Promise.Wait) against a
// pipelining server: what it costs, counted exactly.
func TestAllocsPipelinedPair(t *testing.T) {
	cl, _ := pipelineServer(t, func() error { return nil })
	c := dial(t, cl.Addr().String())
	ctx := context.Background()
	req := []byte("k")
	a, b := make([]byte, 0, 64), make([]byte, 0, 64)
	pair := func() {
		p, err := c.Send(ctx, mLookup, req, a[:0])
		if err != nil {
			t.Fatal(err)
		}
		if out, err := p.Call(ctx, mFetch, b[:0]); err != nil || string(out) != "fetched(id:k)" {
			t.Fatalf("%q %v", out, err)
		}
		if out, err := p.Wait(ctx); err != nil || string(out) != "id:k" {
			t.Fatalf("%q %v", out, err)
		}
	}
	for i := 0; i < 100; i++ {
		pair()
	}
	if n := testing.AllocsPerRun(2000, pair); n != 0 {
		t.Errorf("pipelined pair: %v allocs, want 0", n)
	}
}
