package rpc

import (
	"context"
	"testing"
)

// An inline call whose handler returns while the watchdog takes it over,
// between the watchdog's compare-and-swap of the inline guard and its
// store of the call's live word (the word a cancel read by the new read
// loop matches, see serverConn.inlJob): the call's finish clears the word
// after that store (waitTaken), so the job is not left looking live once
// the call is over. Left set, a cancel of the call's id read later, or a
// late Done or ReserveAnswer of a goroutine the handler left, would find
// a call running on a job that runs none (or another call).
func TestTakeoverLiveClearedAfterFinish(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	started := make(chan *job, 1)
	s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- ctx.(*job)
		<-release
		return append(resp, req...), nil
	})
	waits := takenWaits.Load()
	hooked := false // under s.wdMu, which the hook runs under
	hook := func(c *serverConn) {
		if c.s != s || hooked {
			return // another test's server, or not this test's call
		}
		hooked = true
		inflight := c.inflight.Load()
		close(release)
		// The handler returns, its compare-and-swap fails: it waits for
		// the take-over's end, or (without that wait) finishes the call
		// now, before the live word is stored.
		await(t, "the released handler's goroutine to wait for the take-over or finish its call", func() bool {
			return takenWaits.Load() > waits || c.inflight.Load() < inflight
		})
	}
	takingOverTest.Store(&hook)
	defer takingOverTest.Store(nil)

	c := dial(t, addr)
	if out, err := c.Call(context.Background(), mBlock, []byte("x"), nil); err != nil || string(out) != "x" {
		t.Fatalf("Call: %q %v", out, err)
	}
	j := <-started
	sc := j.c
	await(t, "the take-over to end", func() bool { return sc.inl.Load() != takingOver })
	takingOverTest.Store(nil)
	// The answer came: the call's finish ran.
	if v := j.live.Load(); v != 0 {
		t.Fatalf("the job of a call taken over and answered has live word %#x, want 0", v)
	}
	if j.running() {
		t.Fatal("the job of a call taken over and answered counts as running")
	}
}

// What a handler's ctx (job.running, through Done) makes of the inline
// guard, which stands for job.live while a call runs inline: the job
// c.inlJob names runs while c.inl holds a call's sequence number or
// takingOver, and not once it is 0 (the call ended) or readerTaken (taken
// over: the live word tells from then on); another job of the connection
// never runs by the guard, only by its own live word. A late Done of a
// call that is over (a goroutine its handler left) arms nothing, while the
// connection runs another job's call inline.
func TestInlineGuardTellsRunning(t *testing.T) {
	c := &serverConn{s: NewServer(), ctx: context.Background()}
	j, k := c.newJob(), c.newJob()
	c.nJobs += 2
	c.inlJob.Store(k)
	for _, tc := range []struct {
		inl    uint64
		kLive  uint64
		kRuns  bool
		reason string
	}{
		{0, 0, false, "no inline call"},
		{7, 0, true, "k's call runs inline"},
		{takingOver, 0, true, "the watchdog takes k's call over"},
		{readerTaken, 1<<32 | 9, true, "k's call was taken over (its live word set)"},
		{readerTaken, 0, false, "k's taken-over call ended"},
	} {
		c.inl.Store(tc.inl)
		k.live.Store(tc.kLive)
		if got := k.running(); got != tc.kRuns {
			t.Errorf("%s: k.running() = %v, want %v", tc.reason, got, tc.kRuns)
		}
		if j.running() {
			t.Errorf("%s: j, whose call is over, counts as running", tc.reason)
		}
		if ch := j.Done(); ch != c.ctx.Done() || j.armed || j.armDone() != closedDone || j.armed {
			t.Fatalf("%s: a late Done of j, whose call is over, armed it", tc.reason)
		}
	}
	// j's own call running on a worker: its live word tells.
	c.inl.Store(7)
	j.live.Store(1<<32 | 3)
	if !j.running() {
		t.Fatal("j, whose call runs on a worker, does not count as running")
	}
	j.live.Store(0)
	c.inl.Store(0)
}
