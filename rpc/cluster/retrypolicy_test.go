package cluster

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// statusReplica is a replica that answers every call (its health check
// aside) with status, marked as run, counting them in n.
func statusReplica(t *testing.T, status uint32, n *atomic.Int32) string {
	return rawReplica(t, nil, func(req wire.Request) (wire.Response, rawNext) {
		if req.Method == rpc.HealthMethod {
			return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, rawKeep
		}
		n.Add(1)
		return wire.Response{Status: status, PromiseID: req.PromiseID, Body: []byte("failing")}, rawKeep
	})
}

// backoffs replaces c's back-off draw by its bound (no jitter) and its
// wait by a record of the back-off, returned at once (no real wait); the
// record is returned.
func backoffs(c *Client) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	c.retryJitter = func(bound time.Duration) time.Duration { return bound }
	c.retrySleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err() == nil
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
}

// policy503 retries 503 answers, up to 4 attempts, backing off 10 ms
// doubling to 30 ms.
var policy503 = RetryPolicy{
	MaxAttempts:    4,
	InitialBackoff: 10 * time.Millisecond,
	MaxBackoff:     30 * time.Millisecond,
	Multiplier:     2,
	Statuses:       []uint32{rpc.StatusUnavailable},
}

// A call answered with a status its policy retries is sent again, after
// its back-off, to the other replica, where it succeeds: the failing
// replica ran it once, the good one once.
func TestRetryPolicyStatusGoesElsewhere(t *testing.T) {
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	good := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithRetryPolicy(policy503, mEcho))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	waits := backoffs(c)
	out, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
	if err != nil || string(out) != "r" {
		t.Fatalf("call: %q %v, want the second replica's answer", out, err)
	}
	if n.Load() != 1 || good.calls.Load() != 1 {
		t.Fatalf("the failing replica ran %d calls, the good one %d; want 1 and 1", n.Load(), good.calls.Load())
	}
	if w := waits(); !slices.Equal(w, []time.Duration{10 * time.Millisecond}) {
		t.Fatalf("back-offs %v, want [10ms]", w)
	}
	if st := c.Stats(); st.Retries != 1 || st.Failed != 0 {
		t.Fatalf("stats %+v, want one retry and no failed call", st)
	}
}

// A status the policy does not name is not retried, nor is a method the
// policy does not name, nor one whose policy a later option took away.
func TestRetryPolicyOtherStatusNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status uint32
		opts   []Option
	}{
		{"500", rpc.StatusInternal, []Option{WithRetryPolicy(policy503, mEcho)}},
		{"400", rpc.StatusBadRequest, []Option{WithRetryPolicy(policy503)}},
		{"other method", rpc.StatusUnavailable, []Option{WithRetryPolicy(policy503, mFail)}},
		{"taken away", rpc.StatusUnavailable, []Option{WithRetryPolicy(policy503), WithRetryPolicy(RetryPolicy{}, mEcho)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			bad := statusReplica(t, tc.status, &n)
			good := startReplica(t, "127.0.0.1")
			c := dialT(t, "static:///"+bad+","+good.addr, append(tc.opts, WithBalancer(firstAddr{bad}))...)
			await(t, "both admitted", func() bool { return readyCount(c) == 2 })
			waits := backoffs(c)
			_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
			if rpc.Code(err) != tc.status {
				t.Fatalf("err %v, want status %d", err, tc.status)
			}
			var re *ReplicaError
			if !errors.As(err, &re) || re.Attempts != 1 || strings.Contains(err.Error(), "attempts") {
				t.Fatalf("err %v (%#v), want a ReplicaError of 1 attempt", err, re)
			}
			if n.Load() != 1 || good.calls.Load() != 0 || len(waits()) != 0 || c.Stats().Retries != 0 {
				t.Fatalf("sent %d + %d times, back-offs %v, stats %+v; want once, no retry", n.Load(), good.calls.Load(), waits(), c.Stats())
			}
		})
	}
}

// A call failing everywhere is sent MaxAttempts times, alternating
// between the replicas, its back-offs growing by the multiplier up to the
// cap; its error wraps the last status and says how many attempts.
func TestRetryPolicyAttemptsBound(t *testing.T) {
	var n1, n2 atomic.Int32
	b1, b2 := statusReplica(t, rpc.StatusUnavailable, &n1), statusReplica(t, rpc.StatusUnavailable, &n2)
	c := dialT(t, "static:///"+b1+","+b2, WithBalancer(firstAddr{b1}), WithRetryPolicy(policy503),
		WithRetryBudget(1, 1000), WithEjection(-1, 0, 0))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	waits := backoffs(c)
	_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
	if rpc.Code(err) != rpc.StatusUnavailable || rpc.IsRetryable(err) {
		t.Fatalf("err %v, want the 503 (run)", err)
	}
	var re *ReplicaError
	if !errors.As(err, &re) || re.Attempts != 4 || !strings.Contains(err.Error(), "after 4 attempts") {
		t.Fatalf("err %q (%#v), want a ReplicaError of 4 attempts", err, re)
	}
	if n1.Load() != 2 || n2.Load() != 2 {
		t.Fatalf("sent %d and %d times, want 2 and 2 (each retry to the other replica)", n1.Load(), n2.Load())
	}
	if w, want := waits(), []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}; !slices.Equal(w, want) {
		t.Fatalf("back-offs %v, want %v", w, want)
	}
	if st := c.Stats(); st.Retries != 3 || st.Failed != 1 || st.Calls != 1 {
		t.Fatalf("stats %+v, want 1 call, 3 retries, 1 failed", st)
	}
}

// A spent retry budget stops a policy's retries: the call returns its
// first failure, no back-off waited, and the retry counts as denied.
func TestRetryPolicyBudgetSpent(t *testing.T) {
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	good := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithRetryPolicy(policy503), WithRetryBudget(0, 0))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	waits := backoffs(c)
	_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
	if rpc.Code(err) != rpc.StatusUnavailable {
		t.Fatalf("err %v, want the 503", err)
	}
	if n.Load() != 1 || good.calls.Load() != 0 || len(waits()) != 0 {
		t.Fatalf("sent %d + %d times, back-offs %v; want once, none", n.Load(), good.calls.Load(), waits())
	}
	if st := c.Stats(); st.Retries != 0 || st.RetriesDenied != 1 {
		t.Fatalf("stats %+v, want one retry denied", st)
	}
}

// A back-off that would end past the call's deadline is not waited: the
// call returns its failure at once, the budget untouched. One cut short
// by the ctx's cancel (a real wait of an hour, on the pool's timer)
// returns the failure too, not ctx's error, and gives its retry back to
// the budget.
func TestRetryPolicyCtxEndsBackoff(t *testing.T) {
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	good := startReplica(t, "127.0.0.1")
	long := policy503
	long.InitialBackoff, long.MaxBackoff = time.Hour, time.Hour
	c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithRetryPolicy(long), WithRetryBudget(1, 0))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })

	t.Run("deadline", func(t *testing.T) {
		waits := backoffs(c)
		tokens := c.budget.tokens.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		_, err := c.Call(ctx, mEcho, []byte("r"), nil)
		if rpc.Code(err) != rpc.StatusUnavailable {
			t.Fatalf("err %v, want the 503", err)
		}
		if len(waits()) != 0 || good.calls.Load() != 0 {
			t.Fatalf("back-offs %v, %d calls on the good replica; want none", waits(), good.calls.Load())
		}
		if got := c.budget.tokens.Load(); got != tokens+unit {
			t.Fatalf("budget %d, want %d (the call's deposit, no retry taken)", got, tokens+unit)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		c.retryJitter = func(bound time.Duration) time.Duration { return bound }
		var slept atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c.retrySleep = func(ctx context.Context, d time.Duration) bool {
			slept.Add(1)
			cancel()
			return sleepCtx(ctx, d)
		}
		tokens := c.budget.tokens.Load()
		_, err := c.Call(ctx, mEcho, []byte("r"), nil)
		if rpc.Code(err) != rpc.StatusUnavailable || errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want the 503", err)
		}
		if slept.Load() != 1 || good.calls.Load() != 0 {
			t.Fatalf("%d back-offs, %d calls on the good replica; want 1 and none", slept.Load(), good.calls.Load())
		}
		if got := c.budget.tokens.Load(); got != tokens+unit {
			t.Fatalf("budget %d, want %d (the call's deposit, its retry given back)", got, tokens+unit)
		}
	})
}

// A connection lost with the call on it is retried when the policy says
// ConnectionLost (the method is idempotent), and only then.
func TestRetryPolicyConnectionLost(t *testing.T) {
	for _, lost := range []bool{false, true} {
		var n, accepted atomic.Int32
		bad := closer(t, &n, &accepted)
		good := startReplica(t, "127.0.0.1")
		p := RetryPolicy{MaxAttempts: 2, ConnectionLost: lost}
		c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithRetryPolicy(p, mEcho))
		await(t, "both admitted", func() bool { return readyCount(c) == 2 })
		backoffs(c)
		out, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
		if lost && (err != nil || string(out) != "r") {
			t.Fatalf("ConnectionLost: %q %v, want the good replica's answer", out, err)
		}
		if !lost && !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("without ConnectionLost: %v, want the lost connection's error", err)
		}
		want := int64(0)
		if lost {
			want = 1
		}
		if n.Load() != 1 || good.calls.Load() != want {
			t.Fatalf("ConnectionLost %v: sent %d + %d times", lost, n.Load(), good.calls.Load())
		}
	}
}

// Under a policy a refusal unrun is retried whatever its statuses, at
// once (no back-off), and counts as an attempt: refused everywhere, the
// call is sent MaxAttempts times.
func TestRetryPolicyRefusals(t *testing.T) {
	var refused atomic.Int32
	ref1, ref2 := countingRefuser(t, &refused), countingRefuser(t, &refused)
	p := RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Hour, MaxBackoff: time.Hour}
	c := dialT(t, "static:///"+ref1+","+ref2, WithConnsPerReplica(3), WithEjection(0, time.Nanosecond, time.Nanosecond), WithRetryPolicy(p), WithRetryBudget(1, 1000))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	waits := backoffs(c)
	_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
	if !rpc.IsRetryable(err) {
		t.Fatalf("err %v, want the refusal", err)
	}
	if n := refused.Load(); n != 3 {
		t.Fatalf("refused %d times, want 3", n)
	}
	for _, d := range waits() {
		if d != 0 {
			t.Fatalf("back-offs %v after refusals, want none", waits())
		}
	}
}

// A retry allocates nothing in the cluster client: a call retried once
// after a 503 allocates what the failed attempt allocates on its
// connection (the answer's status error), as the same failure on the
// connection itself does, and nothing more.
func TestAllocsRetry(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	good := startReplica(t, "127.0.0.1")
	p := policy503
	p.InitialBackoff, p.MaxBackoff = time.Microsecond, time.Microsecond
	c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithRetryPolicy(p),
		WithRetryBudget(1, 1e8), WithEjection(-1, 0, 0))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	var badConn *rpc.Client
	for _, cn := range c.ready.Load().conns {
		if cn.Addr() == bad {
			badConn = cn.Client()
		}
	}
	ctx := context.Background()
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	retried := func() {
		out, err := c.Call(ctx, mEcho, req, resp[:0])
		if err != nil || string(out) != string(req) {
			t.Fatalf("%q %v", out, err)
		}
	}
	failed := func() {
		// statusError, not rpc.Code: errors.As would allocate its target.
		if _, err := badConn.Call(ctx, mEcho, req, resp[:0]); rpc.Code(err) != rpc.StatusUnavailable {
			t.Fatalf("%v", err)
		}
	}
	for range 100 {
		retried()
		failed()
	}
	want := testing.AllocsPerRun(1000, failed)
	if got := testing.AllocsPerRun(1000, retried); got != want {
		t.Fatalf("%v allocations per call retried once, want %v (the failed attempt's on its connection)", got, want)
	}
	t.Logf("a call retried once allocates %v, a failed call on its connection %v", want, want)
}

// The back-off bounds grow by the multiplier up to the cap; a cap below
// the first bound, a multiplier below 1, NaN or infinite, and a first
// bound of 0 are read as WithRetryPolicy says.
func TestRetryPolicyBackoffBounds(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		p    RetryPolicy
		want []time.Duration
	}{
		{"doubling", RetryPolicy{InitialBackoff: ms, MaxBackoff: 5 * ms, Multiplier: 2}, []time.Duration{ms, 2 * ms, 4 * ms, 5 * ms, 5 * ms}},
		{"cap below first", RetryPolicy{InitialBackoff: 3 * ms, MaxBackoff: ms, Multiplier: 2}, []time.Duration{3 * ms, 3 * ms}},
		{"no cap given", RetryPolicy{InitialBackoff: 3 * ms, Multiplier: 2}, []time.Duration{3 * ms, 3 * ms}},
		{"multiplier 0", RetryPolicy{InitialBackoff: ms, MaxBackoff: time.Hour}, []time.Duration{ms, ms, ms}},
		{"multiplier NaN", RetryPolicy{InitialBackoff: ms, MaxBackoff: time.Hour, Multiplier: math.NaN()}, []time.Duration{ms, ms}},
		{"multiplier +Inf", RetryPolicy{InitialBackoff: ms, MaxBackoff: time.Hour, Multiplier: math.Inf(1)}, []time.Duration{ms, time.Hour, time.Hour}},
		{"no back-off", RetryPolicy{MaxBackoff: time.Hour, Multiplier: math.Inf(1)}, []time.Duration{0, 0, 0}},
		{"huge growth", RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: math.MaxInt64, Multiplier: 1e300}, []time.Duration{time.Hour, math.MaxInt64, math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.MaxAttempts = 2
			var o options
			WithRetryPolicy(tc.p).apply(&o)
			p := o.retryPolicy(1)
			for i, want := range tc.want {
				if got := p.backoffBound(i + 1); got != want {
					t.Errorf("retry %d: bound %v, want %v", i+1, got, want)
				}
				if d := fullJitter(want); d < 0 || d > want {
					t.Errorf("jitter of %v: %v", want, d)
				}
			}
		})
	}
}

// A retry storm: every replica answers 503 to every call, and the policy
// would retry each call 63 times, or without end (MaxAttempts
// math.MaxInt), with no back-off. The
// retry budget alone bounds the extra load, exactly: with a ratio of 1/4
// and no retries a second, N calls deposit N/4 retries and the replicas
// run N + N/4 calls, whether the calls come one after another or at
// once. (At once: every call's deposit precedes its own last, denied,
// retry, so when the last call ends the budget holds less than one
// retry, and N/4 - retries of it; nothing is refunded, no retry finding
// the replicas gone.) The client's interceptors see each call once, the
// connections' observers each attempt. Each call ends with one retry
// denied.
func TestRetryPolicyStormBoundedByBudget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		goroutines  int
		maxAttempts int
	}{
		{"sequential", 1, 64},
		{"sequential MaxAttempts MaxInt", 1, math.MaxInt},
		{"concurrent", 8, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const perG = 40
			n := tc.goroutines * perG
			var n1, n2, intercepted, observed atomic.Int32
			b1, b2 := statusReplica(t, rpc.StatusUnavailable, &n1), statusReplica(t, rpc.StatusUnavailable, &n2)
			p := RetryPolicy{MaxAttempts: tc.maxAttempts, Statuses: []uint32{rpc.StatusUnavailable}}
			count := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
				intercepted.Add(1)
				return invoke(ctx, method, req, resp)
			}
			observe := rpc.WithObserver(func(e rpc.CallEvent) {
				if e.Method == mEcho {
					observed.Add(1)
				}
			})
			c := dialT(t, "static:///"+b1+","+b2, WithRetryPolicy(p), WithRetryBudget(0.25, 0),
				WithEjection(-1, 0, 0), WithInterceptors(count), WithClientOptions(observe))
			await(t, "both admitted", func() bool { return readyCount(c) == 2 })
			callsAll503(t, c, tc.goroutines, perG)
			retries := n / 4
			if got := int(n1.Load() + n2.Load()); got != n+retries {
				t.Errorf("the replicas ran %d calls (%d + %d) for %d calls, want %d", got, n1.Load(), n2.Load(), n, n+retries)
			}
			if got := int(observed.Load()); got != n+retries {
				t.Errorf("the observers saw %d attempts, want %d", got, n+retries)
			}
			if got := int(intercepted.Load()); got != n {
				t.Errorf("the interceptor saw %d calls, want %d", got, n)
			}
			st := c.Stats()
			if st.Calls != int64(n) || st.Retries != int64(retries) || st.RetriesDenied != int64(n) || st.Failed != int64(n) {
				t.Errorf("stats %+v, want %d calls, %d retries, %d denied, %d failed", st, n, retries, n, n)
			}
		})
	}
}

// A cluster of one replica: a policy's retries go to it again (there is
// no other), MaxAttempts in all. Statuses that no failed answer carries
// (0, 200) change nothing: a success is never retried.
func TestRetryPolicySingleReplica(t *testing.T) {
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	p := RetryPolicy{MaxAttempts: 3, InitialBackoff: -time.Second, MaxBackoff: -time.Second, Multiplier: 0.5,
		Statuses: []uint32{0, rpc.StatusOK, rpc.StatusUnavailable}}
	c := dialT(t, "static:///"+bad, WithRetryPolicy(p), WithRetryBudget(1, 1000), WithEjection(-1, 0, 0))
	await(t, "admitted", func() bool { return readyCount(c) == 1 })
	_, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
	var re *ReplicaError
	if rpc.Code(err) != rpc.StatusUnavailable || !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("err %v, want the 503 after 3 attempts", err)
	}
	if n.Load() != 3 {
		t.Fatalf("the replica ran %d calls, want 3", n.Load())
	}
	good := startReplica(t, "127.0.0.1")
	c2 := dialT(t, "static:///"+good.addr, WithRetryPolicy(p), WithRetryBudget(1, 1000))
	await(t, "admitted", func() bool { return readyCount(c2) == 1 })
	if out, err := c2.Call(context.Background(), mEcho, []byte("r"), nil); err != nil || string(out) != "r" {
		t.Fatalf("%q %v", out, err)
	}
	if good.calls.Load() != 1 || c2.Stats().Retries != 0 {
		t.Fatalf("%d calls, stats %+v; want 1 call, no retry", good.calls.Load(), c2.Stats())
	}
}

// ConnectionLost retries a call whose connection broke, not one on a
// connection this client closed itself: a connection retired (its
// replica draining, removed or ejected) and closed at the end of its
// drain timeout with the call still on it. That call returns the
// connection's error after one attempt, as the policy's doc says.
func TestRetryPolicyConnectionRetiredNotRetried(t *testing.T) {
	r1 := startReplica(t, "127.0.0.1")
	var held atomic.Int32
	blockCalls(t, r1, &held)
	r2 := startReplica(t, "127.0.0.1")
	var other atomic.Int32
	r2.server().Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		other.Add(1)
		return resp, nil
	})
	p := RetryPolicy{MaxAttempts: 3, ConnectionLost: true}
	c := dialT(t, "static:///"+r1.addr+","+r2.addr, WithBalancer(firstAddr{r1.addr}), WithRetryPolicy(p),
		WithRetryBudget(1, 1000), WithDrainTimeout(50*time.Millisecond))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	backoffs(c)
	var cn *Conn
	for _, x := range c.ready.Load().conns {
		if x.Addr() == r1.addr {
			cn = x
		}
	}
	errs := callsInFlight(c, 1)
	await(t, "the call running", func() bool { return held.Load() == 1 })
	c.mu.Lock()
	c.retireLocked(cn)
	c.mu.Unlock()
	err := receive(t, "the call's end", errs)
	var re *ReplicaError
	if !errors.Is(err, rpc.ErrClosed) || !errors.As(err, &re) || re.Attempts != 1 {
		t.Fatalf("err %v, want the retired connection's ErrClosed after 1 attempt", err)
	}
	if other.Load() != 0 || c.Stats().Retries != 0 {
		t.Fatalf("%d calls on the other replica, stats %+v; want none, no retry", other.Load(), c.Stats())
	}
}
