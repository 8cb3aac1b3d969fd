package cluster

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// Huge weights whose sum overflows float64 (a registry giving weights in
// bytes of capacity, or a careless one): the shares still follow the
// weights. The running sums overflowed to +Inf, so every draw fell on the
// last connection and the first replica (weight 1e308, more than half of
// the total) got no call at all.
func TestHugeWeightsShareCalls(t *testing.T) {
	rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
	ws := []float64{1e308, 9e307}
	var eps weighted
	for i, r := range rs {
		eps = append(eps, Endpoint{Addr: r.addr, Weight: ws[i]})
	}
	for _, tc := range []struct {
		name string
		bal  Balancer
		tol  float64
	}{{"p2c", P2C(), 0.08}, {"roundrobin", RoundRobin(), 0.02}} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialT(t, "weighted", WithResolver(eps), WithBalancer(tc.bal), WithRefresh(time.Hour))
			var before [2]int64
			for i, r := range rs {
				before[i] = r.calls.Load()
			}
			const n = 1000
			for range n {
				if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
					t.Fatal(err)
				}
			}
			want0 := 1 / (1 + ws[1]/ws[0])
			got0 := float64(rs[0].calls.Load()-before[0]) / n
			got1 := float64(rs[1].calls.Load()-before[1]) / n
			t.Logf("%s: shares %.3f %.3f, want %.3f %.3f", tc.name, got0, got1, want0, 1-want0)
			if math.Abs(got0-want0) > tc.tol {
				t.Fatalf("replica 0 (weight %g) got %.3f of the calls, want %.3f ± %.2f", ws[0], got0, want0, tc.tol)
			}
		})
	}
}

// A client dialed while no replica is up, with calls, sends and stream
// opens waiting for one (WithWaitForReady): Close wakes them all, and they
// fail with ErrClosed rather than wait out their wait.
func TestCloseWakesCallsWaitingForReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, "static:///127.0.0.1:1", WithWaitForReady(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	go func() { _, err := c.Call(context.Background(), mEcho, nil, nil); errs <- err }()
	go func() { _, err := c.Send(context.Background(), mEcho, nil, nil); errs <- err }()
	go func() { _, err := c.OpenStream(context.Background(), 1, nil); errs <- err }()
	time.Sleep(20 * time.Millisecond) // let them wait (not required: Close fails later ones too)
	c.Close()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, rpc.ErrClosed) {
				t.Fatalf("a waiting call after Close: %v, want ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a call waiting for a replica still waits 30 s after Close")
		}
	}
}
