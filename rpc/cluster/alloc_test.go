package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		{"retry policy", []Option{WithRetryPolicy(RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Second, Multiplier: 2, Statuses: []uint32{rpc.StatusUnavailable}, ConnectionLost: true})}},
		{"hedging policy of another method", []Option{WithHedgingPolicy(HedgingPolicy{MaxAttempts: 2, HedgingDelay: time.Millisecond}, mFail)}},
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

// Rebuilding the ready set allocates the set, its connections' slice
// (sized at once) and the channel that wakes waiting calls, and the
// running sums only when the weights differ: it grew its slices by
// appends (some ten allocations each for 64 connections), and made the
// weights' slice for equal weights too.
func TestAllocsPublish(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		name    string
		weights func(i int) float64
		want    float64
		sums    bool
	}{
		{"equal weights", func(int) float64 { return 1 }, 3, false},
		{"weights", func(i int) float64 { return float64(1 + i%3) }, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{o: buildOptions(nil), replicas: make(map[string]*replica), readyCh: make(chan struct{})}
			c.ready.Store(&readySet{conns: []*Conn{}})
			const n = 64
			for i := range n {
				r := &replica{c: c, addr: fmt.Sprint(i), state: stateReady, weight: tc.weights(i)}
				r.conns = []*Conn{{r: r}}
				c.replicas[r.addr] = r
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.publishLocked()
			if set := c.ready.Load(); len(set.conns) != n || (set.cum != nil) != tc.sums {
				t.Fatalf("%d connections, running sums %v", len(set.conns), set.cum)
			}
			if got := testing.AllocsPerRun(100, c.publishLocked); got != tc.want {
				t.Fatalf("%v allocations per rebuild of %d connections, want %v", got, n, tc.want)
			}
		})
	}
}

// A call that fails with a handler's status allocates, beside what the
// failure costs on its connection, only the ReplicaError that names the
// replica. Reading the status for the replica's account took errors.As,
// whose target escaped: one allocation more per failed call.
func TestAllocsFailedCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, r.addr, WithEjection(-1, 0, 0))
	conn := c.ready.Load().conns[0].Client()
	ctx := context.Background()
	resp := make([]byte, 0, 64)
	want500 := func(err error) {
		if se := rpc.StatusOf(err); se == nil || se.Code != rpc.StatusInternal {
			t.Fatalf("%v, want a 500", err)
		}
	}
	viaCluster := func() { _, err := c.Call(ctx, mFail, nil, resp[:0]); want500(err) }
	onConn := func() { _, err := conn.Call(ctx, mFail, nil, resp[:0]); want500(err) }
	for range 100 {
		viaCluster()
		onConn()
	}
	base := testing.AllocsPerRun(1000, onConn)
	if got := testing.AllocsPerRun(1000, viaCluster); got != base+1 {
		t.Fatalf("%v allocations per failed call, want %v (its connection's) + 1 (the ReplicaError)", got, base)
	}
}

// Classifying a stream's end (is it the server's refusal of a full
// connection?) allocates nothing: it runs at the end of every stream that
// ended with an error, and errors.As's target escaped, one allocation each.
func TestAllocsRefusedFull(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	full := &ReplicaError{Err: &rpc.StatusError{Code: rpc.StatusUnavailable, Message: streamTooManyText}}
	failed := &ReplicaError{Err: &rpc.StatusError{Code: rpc.StatusInternal, Message: "boom"}}
	if !refusedFull(full) || refusedFull(failed) || refusedFull(rpc.ErrClosed) {
		t.Fatal("refusedFull misclassifies")
	}
	if n := testing.AllocsPerRun(1000, func() { refusedFull(full); refusedFull(failed); refusedFull(rpc.ErrClosed) }); n != 0 {
		t.Fatalf("%v allocations per classification, want 0", n)
	}
}
