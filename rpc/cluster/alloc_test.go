package cluster

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// A warm call through the cluster allocates nothing, like one on a
// single connection.
func TestAllocsCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r1, r2 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"p2c", nil},
		{"roundrobin", []Option{WithBalancer(RoundRobin())}},
		{"interceptor", []Option{WithInterceptors(func(ctx context.Context, m uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
			return invoke(ctx, m, req, resp)
		})}},
		{"2 conns per replica", []Option{WithConnsPerReplica(2)}},
		{"weighted p2c", []Option{WithResolver(weighted{{r1.addr, 3}, {r2.addr, 1}})}},
		{"weighted roundrobin", []Option{WithResolver(weighted{{r1.addr, 3}, {r2.addr, 1}}), WithBalancer(RoundRobin())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialT(t, "static:///"+r1.addr+","+r2.addr, tc.opts...)
			if weighted := tc.name[0] == 'w'; weighted != (c.ready.Load().cum != nil) {
				t.Fatalf("weighted %v, running sums %v", weighted, c.ready.Load().cum)
			}
			ctx := context.Background()
			req := []byte("0123456789abcdef")
			resp := make([]byte, 0, 64)
			call := func() {
				out, err := c.Call(ctx, mEcho, req, resp[:0])
				if err != nil || string(out) != string(req) {
					t.Fatalf("%q %v", out, err)
				}
			}
			for i := 0; i < 100; i++ {
				call()
			}
			if n := testing.AllocsPerRun(1000, call); n != 0 {
				t.Fatalf("%v allocations per call, want 0", n)
			}
		})
	}
}

// weighted is a WeightedResolver with fixed endpoints.
type weighted []Endpoint

func (w weighted) Resolve(context.Context) ([]string, error) {
	var out []string
	for _, ep := range w {
		out = append(out, ep.Addr)
	}
	return out, nil
}

func (w weighted) ResolveWeighted(context.Context) ([]Endpoint, error) {
	return append([]Endpoint(nil), w...), nil
}
