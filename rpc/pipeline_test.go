package rpc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	mLookup = 11
	mFetch  = 12
	mWrap   = 13
)

// pipelineServer serves, with pipelining, mLookup ("id:"+req, after
// gate), mFetch ("fetched("+req+")") and mWrap ("["+req+"]") on a
// counting listener.
func pipelineServer(t *testing.T, gate func() error, opts ...ServerOption) (*countListener, *atomic.Int32) {
	t.Helper()
	var fetches atomic.Int32
	s := NewServer(append([]ServerOption{WithLogger(discardLogger()), WithPipelining(0)}, opts...)...)
	s.Handle(mLookup, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := gate(); err != nil {
			return resp, err
		}
		return append(append(resp, "id:"...), req...), nil
	})
	s.Handle(mFetch, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		fetches.Add(1)
		return append(append(append(resp, "fetched("...), req...), ')'), nil
	})
	s.Handle(mWrap, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(append(append(resp, '['), req...), ']'), nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countListener{Listener: l}
	serveOn(t, s, cl)
	return cl, &fetches
}

func dialCounting(t *testing.T, addr string) (*Client, *countConn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countConn{Conn: nc}
	c := NewClient(cc)
	t.Cleanup(func() { c.Close() })
	return c, cc
}

// Two calls, the second on the first's answer, in one round trip: the
// server answers the first only after it has read both requests, and the
// client wrote both before it read a byte.
func TestPipelineOneRoundTrip(t *testing.T) {
	var cl *countListener
	const reqA = "alice"
	bothFrames := int64(2*(5+wire.RequestOverhead) + len(reqA))
	gate := func() error {
		for start := time.Now(); cl.conn(0).read.Load() < bothFrames; time.Sleep(time.Millisecond) {
			if time.Since(start) > 30*time.Second {
				return errors.New("the pipelined request did not arrive within 30 s")
			}
		}
		return nil
	}
	cl, fetches := pipelineServer(t, gate)
	c, cc := dialCounting(t, cl.Addr().String())
	ctx := context.Background()
	p, err := c.Send(ctx, mLookup, []byte(reqA), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() == 0 || p.Client() != c {
		t.Fatalf("promise %+v", p)
	}
	out, err := p.Call(ctx, mFetch, nil)
	if err != nil || string(out) != "fetched(id:alice)" {
		t.Fatalf("pipelined call: %q %v", out, err)
	}
	first, err := p.Wait(ctx)
	if err != nil || string(first) != "id:alice" {
		t.Fatalf("first answer: %q %v", first, err)
	}
	if got := cc.writtenAtFirstRead.Load(); got != bothFrames {
		t.Fatalf("client had written %d bytes when the first answer arrived, want both requests (%d)", got, bothFrames)
	}
	if fetches.Load() != 1 {
		t.Fatalf("fetch ran %d times", fetches.Load())
	}
	if n := idleSlots(t, c); n != len(c.slots) || c.active() != 0 {
		t.Fatalf("%d idle slots of %d, %d active", n, len(c.slots), c.active())
	}
}

// A chain of three calls, each on the previous answer, in one round trip;
// the intermediate answers are released unread.
func TestPipelineChain(t *testing.T) {
	var cl *countListener
	threeFrames := int64(3*(5+wire.RequestOverhead) + 1)
	gate := func() error {
		for start := time.Now(); cl.conn(0).read.Load() < threeFrames; time.Sleep(time.Millisecond) {
			if time.Since(start) > 30*time.Second {
				return errors.New("the pipelined requests did not arrive within 30 s")
			}
		}
		return nil
	}
	cl, _ = pipelineServer(t, gate)
	c, cc := dialCounting(t, cl.Addr().String())
	ctx := context.Background()
	p1, err := c.Send(ctx, mLookup, []byte("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := p1.Send(ctx, mFetch, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p2.Call(ctx, mWrap, make([]byte, 0, 64))
	if err != nil || string(out) != "[fetched(id:b)]" {
		t.Fatalf("chain: %q %v", out, err)
	}
	p1.Release()
	p2.Release()
	if got := cc.writtenAtFirstRead.Load(); got != threeFrames {
		t.Fatalf("written at first read %d, want %d", got, threeFrames)
	}
	waitIdle(t, c)
}

// waitIdle waits (at most 30 s) until every slot of c is idle again.
func waitIdle(t *testing.T, c *Client) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := len(c.slots)
		c.mu.Unlock()
		if idleSlots(t, c) == n && c.active() == 0 && c.abandoned.Load() == 0 {
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("slots not freed after 30 s: %d idle of %d, %d active, %d abandoned",
				idleSlots(t, c), n, c.active(), c.abandoned.Load())
		}
	}
}

// A failed first call makes the pipelined one a 400 that does not run.
func TestPipelineFailedTarget(t *testing.T) {
	cl, fetches := pipelineServer(t, func() error { return Errorf(StatusForbidden, "no") })
	c := dial(t, cl.Addr().String())
	ctx := context.Background()
	p, err := c.Send(ctx, mLookup, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(ctx, mFetch, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusBadRequest {
		t.Fatalf("pipelined on a failed call: %v", err)
	}
	if _, err := p.Wait(ctx); !errors.As(err, &se) || se.Code != StatusForbidden {
		t.Fatalf("first call: %v", err)
	}
	if fetches.Load() != 0 {
		t.Fatal("the pipelined call ran")
	}
	// A server without pipelining refuses a call with a target.
	_, addr, _ := testServer(t)
	c2 := dial(t, addr)
	p, err = c2.Send(ctx, mEcho, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Its message names the server's option, so that the caller knows what
	// to turn on, and where.
	if _, err := p.Call(ctx, mEcho, nil); !errors.As(err, &se) || se.Code != StatusBadRequest ||
		!strings.Contains(se.Message, "server (rpc.WithPipelining)") {
		t.Fatalf("without pipelining: %v", err)
	}
	if out, err := p.Wait(ctx); err != nil || string(out) != "x" {
		t.Fatalf("first call: %q %v", out, err)
	}
}

// Canceling the pipelined call and releasing the promise while the first
// call still runs leaks no slot: both are freed when the answers come.
func TestPipelineCancelNoLeak(t *testing.T) {
	release := make(chan struct{})
	cl, _ := pipelineServer(t, func() error { <-release; return nil })
	c := dial(t, cl.Addr().String())
	p, err := c.Send(context.Background(), mLookup, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(ctx, mFetch, nil)
		errc <- err
	}()
	for start := time.Now(); c.active() < 2; time.Sleep(time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("pipelined call not sent after 30 s")
		}
	}
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("canceled pipelined call: %v", err)
	}
	p.Release()
	if _, err := p.Wait(context.Background()); err != errNoPromise {
		t.Fatalf("Wait after Release: %v", err)
	}
	close(release)
	waitIdle(t, c)
	// The connection still works, and a Wait whose ctx ends abandons.
	p, err = c.Send(context.Background(), mFetch, []byte("y"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Wait(context.Background()); err != nil || string(out) != "fetched(y)" {
		t.Fatalf("%q %v", out, err)
	}
	if _, err := p.Wait(context.Background()); err != errNoPromise {
		t.Fatalf("second Wait: %v", err)
	}
	var zero Promise
	if _, err := zero.Wait(context.Background()); err != errNoPromise {
		t.Fatal(err)
	}
	if _, err := zero.Call(context.Background(), 1, nil); err != errNoPromise {
		t.Fatal(err)
	}
	zero.Release()
	waitIdle(t, c)
}

// A call answered without running (an unknown method, malformed
// metadata) fails its promise id: a call pipelined on that id is answered
// 400, not run on an older call's answer that had the same id.
func TestPipelineOnCallNotRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second wire.Request
		status uint32
	}{
		{"unknown method", wire.Request{Method: 999, PromiseID: 7}, StatusNotFound},
		{"malformed metadata", wire.Request{Method: mEcho, PromiseID: 7, Metadata: []byte{9, 0, 0, 0}}, StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr, _ := testServer(t, WithPipelining(0))
			r := rawDial(t, addr)
			r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 7, Payload: []byte("first call's")}))
			if a := r.recvResponse(); a.Status != StatusOK {
				t.Fatalf("first call: %d", a.Status)
			}
			r.send(wire.KindRequest, wire.AppendRequest(nil, &tc.second))
			if a := r.recvResponse(); a.Status != tc.status {
				t.Fatalf("second call: %d, want %d", a.Status, tc.status)
			}
			r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 8, Target: 7}))
			if a := r.recvResponse(); a.Status != StatusBadRequest {
				t.Fatalf("pipelined on it: status %d, body %q; want 400", a.Status, a.Body)
			}
		})
	}
}

// An answer above the largest frame goes out as a 500, and a call
// pipelined on it is answered 400, as on any failed call (it used to run
// on the body nobody received).
func TestPipelineOnAnswerTooLarge(t *testing.T) {
	const max = 4096
	s, addr, _ := testServer(t, WithPipelining(0), WithFrameOptions(frame.WithMaxFrameSize(max)))
	const mBig, mLen = 20, 21
	s.Handle(mBig, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, make([]byte, 2*max)...), nil
	})
	s.Handle(mLen, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, strconv.Itoa(len(req))...), nil
	})
	r := rawDial(t, addr)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mBig, PromiseID: 1}))
	if a := r.recvResponse(); a.Status != StatusInternal {
		t.Fatalf("answer above the largest frame: %d, want 500", a.Status)
	}
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mLen, PromiseID: 2, Target: 1}))
	if a := r.recvResponse(); a.Status != StatusBadRequest {
		t.Fatalf("pipelined on it: status %d, body %q; want 400", a.Status, a.Body)
	}
}

// A call pipelined on a call still running ends at its own deadline (504,
// not run): it does not hold its job until the target returns.
func TestPipelineWaitEndsAtDeadline(t *testing.T) {
	s, addr, _ := testServer(t, WithPipelining(0))
	release := make(chan struct{})
	defer close(release)
	const mHeld = 20
	s.Handle(mHeld, func(_ context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	r := rawDial(t, addr)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mHeld, PromiseID: 1, Payload: []byte("held")}))
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Target: 1, Timeout: 50_000}))
	answers := make(chan wire.Response, 1)
	go func() { answers <- r.recvResponse() }()
	a := receive(t, "the pipelined call's answer", answers)
	if a.PromiseID != 2 || a.Status != StatusDeadlineExceeded {
		t.Fatalf("first answer: promise %d, status %d; want promise 2 answered 504", a.PromiseID, a.Status)
	}
}

// A promise waited for from several goroutines at once is waited for by
// one of them: the others get errNoPromise at once, and none is left
// waiting on the slot, where it would take the signal of the slot's next
// call. A Release beside a Wait that began does nothing; a Wait after a
// Release is refused.
func TestPromiseSpentOnce(t *testing.T) {
	release := make(chan struct{})
	cl, _ := pipelineServer(t, func() error { <-release; return nil })
	c := dial(t, cl.Addr().String())
	p, err := c.Send(context.Background(), mLookup, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out []byte
		err error
	}
	const waiters = 8
	results := make(chan result, waiters)
	for range waiters {
		go func(p Promise) { // a copy each, as a caller would pass it on
			out, err := p.Wait(context.Background())
			results <- result{out, err}
		}(p)
	}
	for range waiters - 1 {
		if r := receive(t, "a refused Wait", results); r.err != errNoPromise {
			t.Fatalf("a concurrent Wait: %q, %v; want errNoPromise", r.out, r.err)
		}
	}
	p.Release() // the Wait that won holds the promise: nothing happens
	close(release)
	if r := receive(t, "the Wait that won", results); r.err != nil || string(r.out) != "id:x" {
		t.Fatalf("the Wait that won: %q, %v", r.out, r.err)
	}
	// The slot serves new calls; nothing waits on it to take their
	// answers.
	for i := range 100 {
		want := "fetched(" + strconv.Itoa(i) + ")"
		if out, err := c.Call(context.Background(), mFetch, []byte(strconv.Itoa(i)), nil); err != nil || string(out) != want {
			t.Fatalf("call %d after the promise: %q, %v", i, out, err)
		}
	}

	q, err := c.Send(context.Background(), mFetch, []byte("q"), nil)
	if err != nil {
		t.Fatal(err)
	}
	q.Release()
	if _, err := q.Wait(context.Background()); err != errNoPromise {
		t.Fatalf("Wait after Release: %v", err)
	}
	waitIdle(t, c)
}

// The promise table grows as calls are recorded and then wraps: with a
// table of 20, after 45 calls the last 20 are remembered (across the
// ring's growth from 8 to 16 to 20 entries), older ones are not.
func TestPipelineTableGrowsThenWraps(t *testing.T) {
	_, addr, _ := testServer(t, WithPipelining(20))
	r := rawDial(t, addr)
	call := func(req wire.Request) wire.Response {
		t.Helper()
		r.send(wire.KindRequest, wire.AppendRequest(nil, &req))
		a := r.recvResponse()
		if a.PromiseID != req.PromiseID {
			t.Fatalf("answer to promise %d, want %d", a.PromiseID, req.PromiseID)
		}
		return a
	}
	for seq := uint32(1); seq <= 45; seq++ {
		call(wire.Request{Method: mEcho, PromiseID: 100 + seq, Payload: []byte(strconv.Itoa(int(seq)))})
	}
	// Each pipelined call is recorded too (seq 46, 47, 48), evicting seq
	// 26, 27, 28.
	for i, tc := range []struct {
		target uint32 // seq of the target call
		ok     bool
	}{
		{45, true},
		{30, true},
		{20, false},
	} {
		a := call(wire.Request{Method: mEcho, PromiseID: 500 + uint32(i), Target: 100 + tc.target})
		switch {
		case tc.ok && (a.Status != StatusOK || string(a.Body) != strconv.Itoa(int(tc.target))):
			t.Fatalf("pipelined on call %d: status %d, body %q", tc.target, a.Status, a.Body)
		case !tc.ok && a.Status != StatusBadRequest:
			t.Fatalf("pipelined on forgotten call %d: status %d, want 400", tc.target, a.Status)
		}
	}
}
