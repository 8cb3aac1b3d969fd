package cluster

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// A hedge storm: every replica fails every call with a non-fatal status,
// so each call would send MaxAttempts attempts at once; the budget holds
// the hedges to a quarter of the calls (WithRetryBudget(0.25, 0), as
// TestRetryPolicyStormBoundedByBudget holds retries). The replicas see
// exactly the calls and the hedges the budget allowed, and so do the
// connections' observers; the client's interceptor sees each call once.
func TestHedgeStormBoundedByBudget(t *testing.T) {
	for _, goroutines := range []int{1, 8} {
		const perG = 40
		n := goroutines * perG
		var n1, n2, intercepted, observed atomic.Int32
		b1, b2 := statusReplica(t, rpc.StatusUnavailable, &n1), statusReplica(t, rpc.StatusUnavailable, &n2)
		p := HedgingPolicy{MaxAttempts: MaxHedgingAttempts, NonFatalStatuses: []uint32{rpc.StatusUnavailable}}
		count := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
			intercepted.Add(1)
			return invoke(ctx, method, req, resp)
		}
		observe := rpc.WithObserver(func(e rpc.CallEvent) {
			if e.Method == mEcho {
				observed.Add(1)
			}
		})
		c := dialT(t, "static:///"+b1+","+b2, WithHedgingPolicy(p, mEcho), WithRetryBudget(0.25, 0),
			WithEjection(-1, 0, 0), WithInterceptors(count), WithClientOptions(observe))
		await(t, "both admitted", func() bool { return readyCount(c) == 2 })
		callsAll503(t, c, goroutines, perG)
		hedges := n / 4
		if got := int(n1.Load() + n2.Load()); got != n+hedges {
			t.Errorf("%d callers: the replicas ran %d calls (%d + %d) for %d calls, want %d", goroutines, got, n1.Load(), n2.Load(), n, n+hedges)
		}
		await(t, "every attempt observed", func() bool { return int(observed.Load()) >= n+hedges })
		if got := int(observed.Load()); got != n+hedges {
			t.Errorf("%d callers: the observers saw %d attempts, want %d", goroutines, got, n+hedges)
		}
		if got := int(intercepted.Load()); got != n {
			t.Errorf("%d callers: the interceptor saw %d calls, want %d", goroutines, got, n)
		}
		if st := c.Stats(); st.Calls != int64(n) || st.Retries != int64(hedges) || st.Failed != int64(n) {
			t.Errorf("%d callers: stats %+v, want %d calls, %d hedges, %d failed", goroutines, st, n, hedges, n)
		}
	}
}

// Close while hedged calls wait on replicas that never answer: every call
// returns the client's close (an error matching rpc.ErrClosed, not a
// ReplicaError), and every attempt's goroutine ends.
func TestHedgeClose(t *testing.T) {
	s1, entered1, _ := stuckReplica(t)
	s2, entered2, _ := stuckReplica(t)
	c, err := Dial(context.Background(), "static:///"+s1+","+s2, WithHedgingPolicy(HedgingPolicy{MaxAttempts: 3}, mEcho), WithRetryBudget(1, 1e6))
	if err != nil {
		t.Fatal(err)
	}
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	const calls = 8
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
			errs <- err
		}()
	}
	for range calls * 3 { // three attempts each, at once, on the two replicas
		select {
		case <-entered1:
		case <-entered2:
		}
	}
	c.Close()
	for range calls {
		err := receive(t, "a call's return after Close", errs)
		var re *ReplicaError
		if !errors.Is(err, rpc.ErrClosed) || errors.As(err, &re) {
			t.Errorf("call after Close: %v, want the client's close", err)
		}
	}
	// The replicas' handlers run on (a server answers the calls of a
	// peer that closed, as of one that half-closed, then closes): only
	// the attempts' goroutines are looked for.
	buf := make([]byte, 1<<20)
	await(t, "the attempts' goroutines to end", func() bool {
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*hedgeCall).attempt")
	})
}
