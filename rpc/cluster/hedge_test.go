package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/rpc"
)

// handlerReplica starts a server whose mEcho is h (its health check the
// server's own), and returns its address.
func handlerReplica(t *testing.T, h rpc.Handler) string {
	t.Helper()
	s := rpc.NewServer(rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.Handle(mEcho, h)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	return l.Addr().String()
}

// stuckReplica is a replica whose every call waits for its ctx to end,
// then sends the ctx's error on ended (room for 64) and fails; entered
// gets a value as each call starts.
func stuckReplica(t *testing.T) (addr string, entered chan struct{}, ended chan error) {
	entered, ended = make(chan struct{}, 64), make(chan error, 64)
	addr = handlerReplica(t, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		entered <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return resp, ctx.Err()
	})
	return addr, entered, ended
}

// callT makes a call on its own goroutine and returns its result,
// failing the test when it has not returned after 30 s.
func callT(t *testing.T, c *Client, ctx context.Context, req string) ([]byte, error) {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := c.Call(ctx, mEcho, []byte(req), nil)
		ch <- result{out, err}
	}()
	r := receive(t, "the call's return", ch)
	return r.out, r.err
}

// hedge2 sends a hedge 1 ms after the first attempt, two attempts at most.
var hedge2 = HedgingPolicy{MaxAttempts: 2, HedgingDelay: time.Millisecond, NonFatalStatuses: []uint32{rpc.StatusUnavailable}}

// A call whose first replica does not answer is answered by the hedge
// sent to the other after the delay; the first attempt is canceled, and
// its handler's ctx ends with context.Canceled. The cluster's
// interceptor sees one call, the connections' observer both attempts.
func TestHedgeSlowReplicaLoses(t *testing.T) {
	slow, entered, ended := stuckReplica(t)
	fast := startReplica(t, "127.0.0.1")
	var intercepted atomic.Int32
	var mu sync.Mutex
	var observed []error
	ic := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		intercepted.Add(1)
		return invoke(ctx, method, req, resp)
	}
	obs := func(ev rpc.CallEvent) {
		if ev.Method == mEcho {
			mu.Lock()
			observed = append(observed, ev.Err)
			mu.Unlock()
		}
	}
	c := dialT(t, "static:///"+slow+","+fast.addr, WithBalancer(firstAddr{slow}), WithHedgingPolicy(hedge2, mEcho),
		WithInterceptors(ic), WithClientOptions(rpc.WithObserver(obs)))
	out, err := callT(t, c, context.Background(), "r")
	if err != nil || string(out) != "r" {
		t.Fatalf("call: %q %v, want the fast replica's answer", out, err)
	}
	receive(t, "the slow replica's call", entered)
	if err := receive(t, "the slow handler's end", ended); err != context.Canceled {
		t.Fatalf("the slow handler's ctx ended with %v, want context.Canceled", err)
	}
	if fast.calls.Load() != 1 || intercepted.Load() != 1 {
		t.Fatalf("fast replica ran %d calls, interceptor %d; want 1 and 1", fast.calls.Load(), intercepted.Load())
	}
	await(t, "both attempts observed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(observed) == 2
	})
	mu.Lock()
	if observed[0] != nil || !errors.Is(observed[1], context.Canceled) {
		t.Errorf("observed %v, want the hedge's success, then the first attempt canceled", observed)
	}
	mu.Unlock()
	if st := c.Stats(); st.Calls != 1 || st.Retries != 1 || st.Failed != 0 {
		t.Fatalf("stats %+v, want one call, one hedge, none failed", st)
	}
}

// An attempt answered with a non-fatal status lets the next hedge go at
// once, without waiting for the delay (an hour here: the call would
// hang).
func TestHedgeNonFatalGoesAtOnce(t *testing.T) {
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusUnavailable, &n)
	good := startReplica(t, "127.0.0.1")
	p := HedgingPolicy{MaxAttempts: 3, HedgingDelay: time.Hour, NonFatalStatuses: []uint32{rpc.StatusUnavailable}}
	c := dialT(t, "static:///"+bad+","+good.addr, WithBalancer(firstAddr{bad}), WithHedgingPolicy(p))
	out, err := callT(t, c, context.Background(), "r")
	if err != nil || string(out) != "r" {
		t.Fatalf("call: %q %v, want the good replica's answer", out, err)
	}
	if n.Load() != 1 || good.calls.Load() != 1 {
		t.Fatalf("the failing replica ran %d calls, the good one %d; want 1 and 1", n.Load(), good.calls.Load())
	}
	if st := c.Stats(); st.Retries != 1 || st.Failed != 0 {
		t.Fatalf("stats %+v, want one hedge, no failed call", st)
	}
}

// An answer with a status that is not non-fatal is the call's at once:
// the attempt still out is canceled, and the error says two attempts.
func TestHedgeFatalWinsAtOnce(t *testing.T) {
	slow, entered, ended := stuckReplica(t)
	var n atomic.Int32
	bad := statusReplica(t, rpc.StatusInternal, &n)
	c := dialT(t, "static:///"+slow+","+bad, WithBalancer(firstAddr{slow}), WithHedgingPolicy(hedge2, mEcho), WithEjection(-1, 0, 0))
	out, err := callT(t, c, context.Background(), "r")
	if rpc.Code(err) != rpc.StatusInternal || string(out) != "failing" {
		t.Fatalf("call: %q %v, want the 500 and its body", out, err)
	}
	var re *ReplicaError
	if !errors.As(err, &re) || re.Attempts != 2 || re.Addr != bad {
		t.Fatalf("err %v (%#v), want a ReplicaError of %s after 2 attempts", err, re, bad)
	}
	receive(t, "the slow replica's call", entered)
	if err := receive(t, "the slow handler's end", ended); err != context.Canceled {
		t.Fatalf("the slow handler's ctx ended with %v, want context.Canceled", err)
	}
	if st := c.Stats(); st.Failed != 1 || st.Retries != 1 {
		t.Fatalf("stats %+v, want one failed call, one hedge", st)
	}
}

// With the retry budget spent no hedge is sent: the call waits for its
// first attempt, and the hedge counts as denied.
func TestHedgeBudgetSpent(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Int32
	gated := handlerReplica(t, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return resp, ctx.Err()
		}
		return append(resp, req...), nil
	})
	other := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+gated+","+other.addr, WithBalancer(firstAddr{gated}), WithHedgingPolicy(hedge2), WithRetryBudget(0, 0))
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := c.Call(context.Background(), mEcho, []byte("r"), nil)
		ch <- result{out, err}
	}()
	await(t, "the hedge denied", func() bool { return c.Stats().RetriesDenied == 1 })
	close(release)
	r := receive(t, "the call's return", ch)
	if r.err != nil || string(r.out) != "r" {
		t.Fatalf("call: %q %v, want the first replica's answer", r.out, r.err)
	}
	if ran.Load() != 1 || other.calls.Load() != 0 || c.Stats().Retries != 0 {
		t.Fatalf("the replicas ran %d and %d calls, %d hedges; want 1, 0, 0", ran.Load(), other.calls.Load(), c.Stats().Retries)
	}
}

// shiftCtx is a ctx whose deadline moves from an hour ahead to a second
// ago when passed is set, its Done not closed: the deadline passed while
// its timer is late.
type shiftCtx struct {
	context.Context
	done   chan struct{}
	passed atomic.Bool
}

func (c *shiftCtx) Done() <-chan struct{} { return c.done }

func (c *shiftCtx) Deadline() (time.Time, bool) {
	if c.passed.Load() {
		return time.Now().Add(-time.Second), true
	}
	return time.Now().Add(time.Hour), true
}

// No hedge is sent once the call's deadline has passed: an attempt
// answered with a non-fatal status then ends the call with that answer,
// after one attempt.
func TestHedgeNotPastDeadline(t *testing.T) {
	ctx := &shiftCtx{Context: context.Background(), done: make(chan struct{})}
	bad := handlerReplica(t, func(_ context.Context, req, resp []byte) ([]byte, error) {
		ctx.passed.Store(true)
		return resp, rpc.Errorf(rpc.StatusUnavailable, "busy")
	})
	other := startReplica(t, "127.0.0.1")
	p := HedgingPolicy{MaxAttempts: 3, HedgingDelay: time.Hour, NonFatalStatuses: []uint32{rpc.StatusUnavailable}}
	c := dialT(t, "static:///"+bad+","+other.addr, WithBalancer(firstAddr{bad}), WithHedgingPolicy(p))
	_, err := callT(t, c, ctx, "r")
	var re *ReplicaError
	if rpc.Code(err) != rpc.StatusUnavailable || !errors.As(err, &re) || re.Attempts != 1 {
		t.Fatalf("err %v, want the 503 of one attempt", err)
	}
	if other.calls.Load() != 0 || c.Stats().Retries != 0 {
		t.Fatalf("the other replica ran %d calls, %d hedges; want none", other.calls.Load(), c.Stats().Retries)
	}
}

// A call whose every attempt fails non-fatally sends MaxAttempts, each
// hedge to a replica without one while there is one, and returns the
// last failure, saying how many attempts.
func TestHedgeAllFail(t *testing.T) {
	var n1, n2 atomic.Int32
	b1, b2 := statusReplica(t, rpc.StatusUnavailable, &n1), statusReplica(t, rpc.StatusUnavailable, &n2)
	p := HedgingPolicy{MaxAttempts: 3, HedgingDelay: time.Hour, NonFatalStatuses: []uint32{rpc.StatusUnavailable}}
	c := dialT(t, "static:///"+b1+","+b2, WithBalancer(firstAddr{b1}), WithHedgingPolicy(p, mEcho),
		WithRetryBudget(1, 1000), WithEjection(-1, 0, 0))
	out, err := callT(t, c, context.Background(), "r")
	if rpc.Code(err) != rpc.StatusUnavailable || string(out) != "failing" {
		t.Fatalf("call: %q %v, want the last 503 and its body", out, err)
	}
	var re *ReplicaError
	if !errors.As(err, &re) || re.Attempts != 3 || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("err %q (%#v), want a ReplicaError of 3 attempts", err, re)
	}
	// The first to b1, the hedge to b2 (no attempt there yet), the
	// third where the balancer picks: b1.
	if n1.Load() != 2 || n2.Load() != 1 {
		t.Fatalf("sent %d and %d times, want 2 and 1", n1.Load(), n2.Load())
	}
	if st := c.Stats(); st.Retries != 2 || st.Failed != 1 {
		t.Fatalf("stats %+v, want 2 hedges, 1 failed call", st)
	}
}

// With a single replica, the hedge goes to it too (on the same
// connection): its second attempt answers while the first is stuck.
func TestHedgeSingleReplica(t *testing.T) {
	var n atomic.Int32
	ended := make(chan error, 1)
	addr := handlerReplica(t, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if n.Add(1) == 1 {
			<-ctx.Done()
			ended <- ctx.Err()
			return resp, ctx.Err()
		}
		return append(resp, req...), nil
	})
	c := dialT(t, "static:///"+addr, WithHedgingPolicy(hedge2, mEcho))
	out, err := callT(t, c, context.Background(), "r")
	if err != nil || string(out) != "r" {
		t.Fatalf("call: %q %v, want the second attempt's answer", out, err)
	}
	if err := receive(t, "the first handler's end", ended); err != context.Canceled {
		t.Fatalf("the first handler's ctx ended with %v, want context.Canceled", err)
	}
}

// Attempts canceled because another answered first say nothing of their
// replica: a replica that loses every race is not ejected.
func TestHedgeLosersNotEjected(t *testing.T) {
	slow, entered, ended := stuckReplica(t)
	fast := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+slow+","+fast.addr, WithBalancer(firstAddr{slow}), WithHedgingPolicy(hedge2, mEcho),
		WithEjection(2, 0, 0), WithRetryBudget(1, 1000))
	for i := range 10 {
		if out, err := callT(t, c, context.Background(), "r"); err != nil || string(out) != "r" {
			t.Fatalf("call %d: %q %v", i, out, err)
		}
		receive(t, "the slow replica's call", entered)
		receive(t, "the slow handler's end", ended)
	}
	if st := c.Stats(); st.Ejections != 0 || readyCount(c) != 2 {
		t.Fatalf("stats %+v, want no ejection", st)
	}
}

// An attempt that lost the race counts the time it ran as a latency of
// its replica: a replica that never answers before its hedges does get
// a latency (P2C would never see it slow otherwise), and one the
// caller's cancel ended does not.
func TestHedgeLoserLatency(t *testing.T) {
	slow, entered, ended := stuckReplica(t)
	fast := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+slow+","+fast.addr, WithBalancer(firstAddr{slow}), WithHedgingPolicy(hedge2, mEcho),
		WithRetryBudget(1, 1000))
	var slowConn *Conn
	for _, cn := range c.ready.Load().conns {
		if cn.Addr() == slow {
			slowConn = cn
		}
	}
	// Canceled by the caller, twice: nothing counted.
	cc := dialT(t, "static:///"+slow, WithHedgingPolicy(HedgingPolicy{MaxAttempts: 2, HedgingDelay: time.Hour}, mEcho))
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-entered
			cancel()
		}()
		if _, err := callT(t, cc, ctx, "r"); err != context.Canceled {
			t.Fatalf("call canceled: %v", err)
		}
		receive(t, "the slow handler's end", ended)
		if l := cc.ready.Load().conns[0].Latency(); l != 0 {
			t.Fatalf("latency %v after calls the caller canceled, want 0 (unknown)", l)
		}
	}
	for i := range 3 {
		if out, err := callT(t, c, context.Background(), "r"); err != nil || string(out) != "r" {
			t.Fatalf("call %d: %q %v", i, out, err)
		}
		receive(t, "the slow replica's call", entered)
		receive(t, "the slow handler's end", ended)
	}
	await(t, "the slow replica's latency known", func() bool { return slowConn.Latency() > 0 })
}

// The answer of a hedged call is the caller's alone: many callers, each
// reusing its request and answer buffers, hedge every call to three
// replicas at once; each writes over both buffers as soon as its call
// returned, while the losing attempts may still be out. The race
// detector (and, under zapdebug, the pooled buffers' poison) would see
// an attempt touch them after Call returned.
func TestHedgeAnswerBuffer(t *testing.T) {
	r1, r2, r3 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	p := HedgingPolicy{MaxAttempts: 3} // no delay: all three at once
	c := dialT(t, "static:///"+r1.addr+","+r2.addr+","+r3.addr, WithHedgingPolicy(p, mEcho), WithRetryBudget(1, 1e6))
	calls := 200
	if testing.Short() {
		calls = 50
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := make([]byte, 16)
			resp := make([]byte, 0, 64)
			for i := range calls {
				for k := range req {
					req[k] = byte(g*31 + i + k)
				}
				want := string(req)
				out, err := c.Call(context.Background(), mEcho, req, resp[:0])
				if err != nil || string(out) != want {
					errs <- errors.Join(err, errors.New("answer "+string(out)+" to "+want))
					return
				}
				if unsafe.SliceData(out) != unsafe.SliceData(resp) {
					errs <- errors.New("the answer is not in the caller's buffer")
					return
				}
				clear(resp[:cap(resp)])
				clear(req)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	await(t, "every attempt done", func() bool {
		for _, cn := range c.ready.Load().conns {
			if cn.InFlight() != 0 {
				return false
			}
		}
		return true
	})
}

// A method has one policy, a retry policy or a hedging policy: Dial
// fails when both are given for it by name, or both as defaults; a
// method's own policy of one kind comes before the other kind's
// default, and one taken away by name takes away only its kind's.
func TestHedgeAndRetryPolicies(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	retry := WithRetryPolicy(policy503, mEcho)
	retryAll := WithRetryPolicy(policy503)
	hedge := WithHedgingPolicy(hedge2, mEcho)
	hedgeAll := WithHedgingPolicy(hedge2)
	for _, tc := range []struct {
		name          string
		opts          []Option
		fails         bool
		retry, hedged bool // mEcho's policy
	}{
		{"both by name", []Option{retry, hedge}, true, false, false},
		{"both defaults", []Option{retryAll, hedgeAll}, true, false, false},
		{"hedge by name, retry default", []Option{retryAll, hedge}, false, false, true},
		{"retry by name, hedge default", []Option{hedgeAll, retry}, false, true, false},
		{"hedge taken away by name", []Option{retryAll, WithHedgingPolicy(HedgingPolicy{}, mEcho)}, false, true, false},
		{"retry taken away by name", []Option{hedgeAll, WithRetryPolicy(RetryPolicy{}, mEcho)}, false, false, true},
		{"retry taken away, hedge by name", []Option{retry, WithRetryPolicy(RetryPolicy{}, mEcho), hedge}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), "static:///"+r.addr, tc.opts...)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), "both a retry policy and a hedging policy") {
					c.Close()
					t.Fatalf("Dial: %v, want the error of both policies", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.o.retryPolicy(mEcho) != nil; got != tc.retry {
				t.Errorf("retry policy %v, want %v", got, tc.retry)
			}
			if got := c.o.hedging && c.o.hedgingPolicy(mEcho) != nil; got != tc.hedged {
				t.Errorf("hedging policy %v, want %v", got, tc.hedged)
			}
		})
	}
}

// A hedged call whose first attempt answers before the delay allocates
// its attempts' ctx alone (the context, its cancel func and its Done
// channel): the attempt's goroutine, its buffer, the request's copy and
// the timer cost nothing once warm. A call to a method without a
// policy, beside one with, allocates nothing (TestAllocsCall).
func TestAllocsHedge(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+r.addr, WithHedgingPolicy(HedgingPolicy{MaxAttempts: 2, HedgingDelay: time.Hour}, mEcho))
	ctx := context.Background()
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	call := func() {
		out, err := c.Call(ctx, mEcho, req, resp[:0])
		if err != nil || string(out) != string(req) {
			t.Fatalf("%q %v", out, err)
		}
	}
	for range 100 {
		call()
	}
	if n := testing.AllocsPerRun(1000, call); n != 3 {
		t.Fatalf("%v allocations per hedged call, want 3", n)
	}
	// With a response metadata receiver, the attempt's own receiver
	// (rpc.WithResponseMetadata: its options and the context) costs two
	// more; the answer carries no metadata.
	var md rpc.Metadata
	ctx = rpc.WithResponseMetadata(ctx, &md)
	for range 100 {
		call()
	}
	if n := testing.AllocsPerRun(1000, call); n != 5 {
		t.Fatalf("%v allocations per hedged call with a response metadata receiver, want 5", n)
	}
	if st := c.Stats(); st.Retries != 0 {
		t.Fatalf("%d hedges sent, want none", st.Retries)
	}
}

// A hedge that loses soon after it was sent tells nothing of its
// replica's latency: the replica held it only that long, and would have
// answered no sooner. The hedge replica's known average (1 s) stays as it
// was when the first attempt's replica answers just after the hedge
// reached the other (its handler waits for that); counted as an answer,
// the few milliseconds it ran would halve the average.
func TestHedgeLoserShortTimeNotLatency(t *testing.T) {
	slow, entered, ended := stuckReplica(t)
	hedgeIn := make(chan struct{})
	first := handlerReplica(t, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-hedgeIn
		return append(resp, req...), nil
	})
	go func() {
		<-entered
		close(hedgeIn)
	}()
	c := dialT(t, "static:///"+first+","+slow, WithBalancer(firstAddr{first}),
		WithHedgingPolicy(HedgingPolicy{MaxAttempts: 2}, mEcho), WithRetryBudget(1, 1000))
	await(t, "both admitted", func() bool { return readyCount(c) == 2 })
	r := replicaOf(c, slow)
	for range 2 {
		r.lat.observe(0, int64(time.Second))
	}
	if out, err := callT(t, c, context.Background(), "r"); err != nil || string(out) != "r" {
		t.Fatalf("call: %q %v, want the first replica's answer", out, err)
	}
	receive(t, "the hedge's end", ended)
	await(t, "the hedge's attempt done", func() bool {
		for _, cn := range c.ready.Load().conns {
			if cn.InFlight() != 0 {
				return false
			}
		}
		return true
	})
	if avg, _ := r.lat.get(); avg != float64(time.Second) {
		t.Fatalf("the hedge replica's latency is %v after a hedge that lost at once, want 1s as before", time.Duration(avg))
	}
}
