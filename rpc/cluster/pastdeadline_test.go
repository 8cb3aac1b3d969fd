package cluster

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// pastDeadlineCtx is a ctx whose deadline has passed and whose Done is
// not closed yet: a context.WithDeadline between its deadline and its
// timer's firing, which a loaded machine makes long.
type pastDeadlineCtx struct{ context.Context }

func (pastDeadlineCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// A call whose deadline had passed before it was handed to its
// connection, its ctx's Done not closed yet, is not sent (rpc.Client
// fails it with context.DeadlineExceeded): it says nothing of the replica
// it was routed to, and counts neither in its row of failures nor in its
// latency. Before, the cluster looked at ctx.Err alone, found the call
// live, and counted it as a deadline that passed while the replica held
// it: a failure towards its ejection, and an answer of no time at all
// that halved its latency.
func TestPastDeadlineCallNotCounted(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	// Never ejected here: the test reads the row.
	c := dialT(t, r.addr, WithHealthCheck(time.Hour, 0), WithEjection(math.MaxInt32, time.Minute, time.Minute))
	rep := replicaOf(c, r.addr)
	// A known latency, slow enough that every call is timed.
	const avg = float64(5 * time.Millisecond)
	rep.lat.avg.Store(math.Float64bits(avg))
	rep.lat.at.Store(now())
	rep.lat.seen.Store(2)
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx := pastDeadlineCtx{parent}
	for range 10 {
		if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a call past its deadline: %v, want context.DeadlineExceeded", err)
		}
	}
	if n := rep.fails.Load(); n != 0 {
		t.Errorf("10 calls not sent, their deadline passed: %d failures counted against the replica", n)
	}
	if got := math.Float64frombits(rep.lat.avg.Load()); got != avg {
		t.Errorf("latency %v after calls not sent, want %v", time.Duration(got), time.Duration(avg))
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("the replica ran %d calls whose deadline had passed", n)
	}
}
