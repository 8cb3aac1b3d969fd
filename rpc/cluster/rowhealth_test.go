package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A replica whose calls fail while its health checks pass (a handler's
// failure behind a healthy server) backs off longer at each ejection:
// checks passed while its calls fail end no row of ejections, only an
// answered call does (or checks passed with no call failed since the
// admission). Before, a replica that got its calls slowly (a client that
// calls seldom, or gives it a small share) passed two checks between its
// failed calls, the row ended, and it was readmitted after the first
// step of the back-off every time (0.5 s by default), its calls failing.
//
// Each round: the replica admitted, a call fails, three health checks
// start (the second has passed), a second call fails and ejects it; the
// probe that readmits it reads its row.
//
// A periodic check of the admitted replica waits for the round's first
// failed call: two checks passed before it (10 ms apart, so a test
// goroutine stalled 20 ms under load) end the row, rightly (no call had
// failed since the admission), and the test failed.
func TestHealthChecksDoNotEndRowOfFailingReplica(t *testing.T) {
	var client atomic.Pointer[Client]
	var checks atomic.Int32 // health checks started
	rows := make(chan int, 16)
	count := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		if method == rpc.HealthMethod {
			if c := client.Load(); c != nil {
				if rs := c.Stats().Replicas[0]; rs.State != "ready" {
					rows <- rs.Ejections
				} else {
					for rep := replicaOf(c, rs.Addr); rep.fails.Load() == 0 && ctx.Err() == nil; {
						time.Sleep(time.Millisecond)
					}
				}
			}
			checks.Add(1)
		}
		return invoke(ctx, method, req, resp)
	}
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, r.addr, WithHealthCheck(10*time.Millisecond, time.Minute),
		WithEjection(2, time.Millisecond, time.Minute), WithMaxEjected(1),
		WithClientOptions(rpc.WithClientInterceptors(count)))
	client.Store(c)
	for round := 1; round <= 4; round++ {
		await(t, "the replica admitted", func() bool { return readyCount(c) == 1 })
		if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
			t.Fatal("mFail succeeded")
		}
		from := checks.Load()
		await(t, "three health checks", func() bool { return checks.Load() >= from+3 })
		if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
			t.Fatal("mFail succeeded")
		}
		if n := receive(t, "the probe after the ejection", rows); n != round {
			t.Fatalf("ejection %d: the replica counts %d ejections in a row, want %d (no call answered between them)", round, n, round)
		}
	}
}
