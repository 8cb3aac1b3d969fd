package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// callsWith makes n calls on c with ctx, one after the other, each
// answered by peer with "ok".
func callsWith(t *testing.T, c *Client, peer *rawConn, ctx context.Context, n int) {
	t.Helper()
	for i := range n {
		res := make(chan error, 1)
		go func() {
			out, err := c.Call(ctx, mEcho, []byte("ping"), nil)
			if err == nil && string(out) != "ok" {
				err = fmt.Errorf("answer %q", out)
			}
			res <- err
		}()
		r := peer.recvRequest()
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("ok")}))
		if err := receive(t, "a call's result", res); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// sharedCtx makes a cancelable ctx and watchAfter+1 calls with it on c,
// after which c must watch it; it returns the ctx, its cancel and the
// watch.
func sharedCtx(t *testing.T, c *Client, peer *rawConn) (context.Context, context.CancelFunc, *ctxWatch) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	callsWith(t, c, peer, ctx, watchAfter+1)
	w := c.watch.Load()
	if w == nil || w.done != ctx.Done() {
		t.Fatalf("no watch of a ctx that %d calls in a row shared", watchAfter+1)
	}
	return ctx, cancel, w
}

// A ctx that calls share gets the client's watch after watchAfter calls;
// calls waiting under it (and a promise waiting in a select on the same
// ctx) all end with the ctx's error when it is canceled, and their late
// answers free their slots.
func TestCtxWatchCancelsSharedCalls(t *testing.T) {
	c, peer := pipeClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	callsWith(t, c, peer, ctx, watchAfter)
	if c.watch.Load() != nil {
		t.Fatalf("a watch after %d calls, want one only after %d", watchAfter, watchAfter+1)
	}
	callsWith(t, c, peer, ctx, 1)
	w := c.watch.Load()
	if w == nil || w.done != ctx.Done() {
		t.Fatalf("no watch of the shared ctx after %d calls", watchAfter+1)
	}

	const n = 8
	errs := make(chan error, n+1)
	for range n {
		go func() {
			_, err := c.Call(ctx, mEcho, []byte("late"), nil)
			errs <- err
		}()
	}
	late := make([]wire.Request, 0, n+1)
	for range n {
		late = append(late, peer.recvRequest())
	}
	go func() {
		// Not on the test's goroutine: Send may write the request, and
		// net.Pipe's writes wait for the peer's reads.
		p, err := c.Send(ctx, mEcho, []byte("promise"), nil)
		if err == nil {
			_, err = p.Wait(ctx) // in a select on the slot's channel and ctx.Done
		}
		errs <- err
	}()
	late = append(late, peer.recvRequest())
	await(t, "the calls registered with the watch", func() bool { return w.refs.Load() == n })

	cancel()
	for range n + 1 {
		if err := receive(t, "a canceled call", errs); !errors.Is(err, context.Canceled) {
			t.Fatalf("a call canceled by its ctx returned %v", err)
		}
	}
	if !w.fired.Load() {
		t.Fatal("the watch did not see its ctx end")
	}
	peer.recvCancelQuestion()
	if got := c.busySlots(); got != n+1 {
		t.Fatalf("busySlots %d, want %d: the canceled calls' slots wait for their late answers", got, n+1)
	}
	for _, r := range late {
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
	}
	await(t, "the late answers free the slots", func() bool { return c.busySlots() == 0 })
	if n, all := idleSlots(t, c), len(*c.table.Load()); n != all {
		t.Fatalf("%d of %d slots idle", n, all)
	}
	if a := c.abandoned.Load(); a != 0 {
		t.Fatalf("%d slots counted abandoned after their late answers", a)
	}

	// A new shared ctx replaces the watch of the ended one.
	sharedCtx(t, c, peer)
	c.Close()
	if c.watch.Load() != nil {
		t.Fatal("Close left the watch")
	}
}

// A watch under which calls wait is not replaced, however many calls
// another shared ctx makes meanwhile: those calls still end when their
// ctx does. Once none waits, the other ctx gets the watch.
func TestCtxWatchKeptWhileCallsWait(t *testing.T) {
	c, peer := pipeClient(t)
	ctxA, cancelA, wA := sharedCtx(t, c, peer)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Call(ctxA, mEcho, []byte("held"), nil)
			errs <- err
		}()
	}
	peer.recvRequest()
	peer.recvRequest()
	await(t, "two calls registered with ctxA's watch", func() bool { return wA.refs.Load() == 2 })

	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	callsWith(t, c, peer, ctxB, 3*watchAfter)
	if c.watch.Load() != wA {
		t.Fatal("ctxA's watch was replaced while calls waited under it")
	}
	cancelA()
	for range 2 {
		if err := receive(t, "a call under ctxA's watch", errs); !errors.Is(err, context.Canceled) {
			t.Fatalf("a call under the kept watch returned %v, want context.Canceled", err)
		}
	}
	peer.recvCancelQuestion()
	callsWith(t, c, peer, ctxB, watchAfter+1)
	if w := c.watch.Load(); w == nil || w.done != ctxB.Done() {
		t.Fatal("ctxB got no watch once no call waited under ctxA's")
	}
}

// A promise sent under a watched ctx is waited for with the wait's ctx:
// the end of the sending ctx does not cancel it.
func TestCtxWatchSparesPromise(t *testing.T) {
	c, peer := pipeClient(t)
	ctx, cancel, _ := sharedCtx(t, c, peer)
	sent := make(chan Promise, 1)
	go func() {
		p, err := c.Send(ctx, mEcho, []byte("promise"), nil)
		if err != nil {
			t.Error(err)
		}
		sent <- p
	}()
	r := peer.recvRequest()
	p := receive(t, "the promise", sent)
	cancel()
	await(t, "the watch to see its ctx end", func() bool { w := c.watch.Load(); return w == nil || w.fired.Load() })
	peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("kept")}))
	out, err := p.Wait(context.Background())
	if err != nil || string(out) != "kept" {
		t.Fatalf("Wait: %q, %v; want the answer", out, err)
	}
}

// Calls that each have a ctx of their own, a few one after the other (a
// request's), never make a watch: it would allocate per ctx.
func TestCtxWatchNotForOwnCtx(t *testing.T) {
	c, peer := pipeClient(t)
	for range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		callsWith(t, c, peer, ctx, 3)
		cancel()
	}
	if c.watch.Load() != nil {
		t.Fatal("a watch of a ctx that made 3 calls")
	}
}

// A call canceled by the watch and its late answer meet in either order:
// the slot ends idle once both are done, and counts as abandoned only
// while the answer is awaited.
func TestCtxWatchCanceledThenAnswered(t *testing.T) {
	for _, answerFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("answer first %v", answerFirst), func(t *testing.T) {
			c, _ := pipeClient(t)
			s, ctx := canceledWaitingSlot(t, c)
			<-s.ch // the caller wakes
			if answerFirst {
				if c.claim(s.pid) != nil {
					t.Fatal("a canceled call was delivered its answer")
				}
				if st := s.st.Load() & slotStateMask; st != slotLate {
					t.Fatalf("state %d after the late answer, want slotLate", st)
				}
			}
			if _, err := c.taken(ctx, s, nil); !errors.Is(err, context.Canceled) {
				t.Fatalf("taken: %v, want the ctx's error", err)
			}
			if !answerFirst {
				if a := c.abandoned.Load(); a != 1 {
					t.Fatalf("abandoned %d while the answer is awaited, want 1", a)
				}
				c.claim(s.pid)
			}
			if a := c.abandoned.Load(); a != 0 {
				t.Fatalf("abandoned %d after the answer, want 0", a)
			}
			if n, all := idleSlots(t, c), len(*c.table.Load()); n != all || c.busySlots() != 0 {
				t.Fatalf("%d of %d slots idle, busySlots %d", n, all, c.busySlots())
			}
		})
	}
}

// Many callers share a ctx that is canceled while calls flow, round after
// round (each round's ctx replaces the last one's watch): every call gets
// its echo or the ctx's error, and no slot is lost.
func TestCtxWatchStress(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	const callers, rounds = 32, 20
	watched := 0 // rounds whose calls ran under a watch of their ctx
	for round := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for g := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := []byte(fmt.Sprintf("r%d-g%d", round, g))
				for i := 0; ; i++ {
					if g == 0 && i == 50+round*10 {
						if w := c.watch.Load(); w != nil && w.done == ctx.Done() {
							watched++
						}
						cancel()
					}
					out, err := c.Call(ctx, mEcho, req, nil)
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							errs <- err
						}
						return
					}
					if string(out) != string(req) {
						errs <- fmt.Errorf("answer %q to %q", out, req)
						return
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if watched < rounds/2 {
		t.Fatalf("calls ran under a watch of their ctx in %d of %d rounds", watched, rounds)
	}
	await(t, "every slot back", func() bool { return c.busySlots() == 0 })
	if n, all := idleSlots(t, c), len(*c.table.Load()); n != all {
		t.Fatalf("%d of %d slots idle", n, all)
	}
	if a := c.abandoned.Load(); a != 0 {
		t.Fatalf("abandoned %d with every answer in", a)
	}
}

// A slot's call that no watch may cancel (its ctx cannot end, or it is a
// promise's) clears the pid of the slot's last watchable call, so that
// the pid coming round again after 65,536 uses cannot match it.
func TestCtxWatchForgetsDone(t *testing.T) {
	c, _ := pipeClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := acquireSlot(c, ctx.Done())
	if err != nil {
		t.Fatal(err)
	}
	if s.donePid.Load() != s.pid || s.doneID.Load() != chanID(ctx.Done()) {
		t.Fatal("a watchable call did not record its Done and pid")
	}
	c.unsend(s)
	s2, err := acquireSlot(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2 != s {
		t.Fatal("the slot was not reused")
	}
	if s.donePid.Load() != 0 {
		t.Fatal("a call no watch may cancel left the last watchable call's pid in its slot")
	}
	c.unsend(s2)
}

// A handler's ctx is its job, whose Done channel the job's next call may
// reuse: a handler that makes one downstream call per request with its
// ctx gives the client the same Done request after request. That ctx is
// not shared, and is never watched; and a request whose downstream call
// goes unanswered ends that call when its deadline passes. (Before, the
// client watched it, the watch's registration ended with its request,
// and the later request's call waited past its deadline.)
func TestCtxWatchHandlerCtx(t *testing.T) {
	const mProxy = 9
	down, peer := pipeClient(t)
	results := make(chan error, 1)
	done := make(chan (<-chan struct{}), 1)
	s, addr, _ := testServer(t)
	s.Handle(mProxy, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		done <- ctx.Done()
		_, err := down.Call(ctx, mEcho, []byte("via"), nil)
		results <- err
		return resp, err
	})
	c := dial(t, addr)
	// A request larger than keptJobBuffer: the connection keeps its job
	// between requests (releaseSpare), as it does under load.
	req := make([]byte, 2*keptJobBuffer)
	call := func(timeout time.Duration) chan error {
		errs := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := c.Call(ctx, mProxy, req, nil)
			errs <- err
		}()
		return errs
	}
	var last <-chan struct{}
	same := 0 // requests in a row whose ctx had the last one's Done
	for i := range 3 * watchAfter {
		errs := call(time.Hour)
		d := receive(t, "the handler's ctx", done)
		if d == last {
			same++
		}
		last = d
		r := peer.recvRequest()
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
		if err := receive(t, "the downstream call", results); err != nil {
			t.Fatalf("request %d: downstream call: %v", i, err)
		}
		if err := receive(t, "the proxied call", errs); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if same < 2*watchAfter {
		t.Fatalf("precondition: only %d of %d requests had the Done of the one before", same, 3*watchAfter)
	}
	if down.watch.Load() != nil {
		t.Fatal("the client watches a handler's ctx")
	}
	call(50 * time.Millisecond)
	receive(t, "the handler's ctx", done)
	peer.recvRequest() // and never answered
	if err := receive(t, "the unanswered downstream call to end with its ctx", results); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("downstream call: %v, want context.DeadlineExceeded", err)
	}
}

// registeredCall takes a slot for a call with ctx and registers it with
// w, as Call does between send and waitWatched (the state machine needs
// no request written).
func registeredCall(t *testing.T, c *Client, ctx context.Context, w *ctxWatch) *slot {
	t.Helper()
	s, err := acquireSlot(c, ctx.Done())
	if err != nil {
		t.Fatal(err)
	}
	if !w.enter() {
		t.Fatal("not registered")
	}
	return s
}

// A watched call canceled by its ctx's end, whose caller has not yet
// woken when the client closes, frees its slot: no late answer will come
// to a closed connection.
func TestCtxWatchCanceledThenClosed(t *testing.T) {
	c, peer := pipeClient(t)
	ctx, cancel, w := sharedCtx(t, c, peer)
	s := registeredCall(t, c, ctx, w)
	cancel()
	await(t, "the watch to cancel the call", func() bool { return s.st.Load()&slotStateMask == slotCanceled })
	c.Close()
	if _, err := c.waitWatched(ctx, w, s, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitWatched: %v, want context.Canceled", err)
	}
	if a, b := c.abandoned.Load(), c.busySlots(); a != 0 || b != 0 {
		t.Fatalf("abandoned %d, busySlots %d after Close and the caller's return; want 0, 0", a, b)
	}
}

// The watch of a ctx that ended is dropped, even when calls were still
// registered with it as it ran: it would keep the ended ctx (and what
// the ctx holds) until another shared ctx replaced it.
func TestCtxWatchDroppedWhenEnded(t *testing.T) {
	c, peer := pipeClient(t)
	ctx, cancel, w := sharedCtx(t, c, peer)
	s := registeredCall(t, c, ctx, w)
	// The watch's callback runs here, while the call is registered, not
	// in context.AfterFunc's goroutine.
	c.mu.Lock()
	w.stop()
	c.mu.Unlock()
	cancel()
	c.ctxEnded(w)
	if _, err := c.waitWatched(ctx, w, s, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitWatched: %v, want context.Canceled", err)
	}
	if c.watch.Load() == w {
		t.Fatal("the client still holds the watch of a ctx that ended")
	}
}

// A watch costs four allocations: the watch, its callback, and
// context.AfterFunc's two (its registration and the stop function). The
// docs quote the number.
func TestCtxWatchAllocs(t *testing.T) {
	c, _ := pipeClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := testing.AllocsPerRun(50, func() {
		if c.newWatch(ctx, ctx.Done(), c.watch.Load()) == nil {
			t.Fatal("no watch")
		}
	})
	if n != 4 {
		t.Fatalf("a watch allocates %v objects, want 4", n)
	}
}
