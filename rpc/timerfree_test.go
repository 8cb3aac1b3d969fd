package rpc

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// The reaper of idle workers keeps no timer while fewer than two workers
// are idle (a pending timer costs every scheduling on its P a clock read):
// it parks, a burst that leaves workers idle wakes it, it ends them down to
// one and parks again, and the next burst wakes it again.
func TestReaperParksAndWakes(t *testing.T) {
	s, addr, _ := testServer(t, WithPipelining(0)) // every call on a worker
	c := dial(t, addr)
	await(t, "the reaper parked before any call", func() bool { return s.reapParked.Load() })
	for round := 0; round < 2; round++ {
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			started <- struct{}{}
			<-release
			return append(resp, req...), nil
		})
		errs := make(chan error, 2)
		for i := 0; i < 2; i++ {
			go func() {
				_, err := c.Call(context.Background(), mSlow, []byte("x"), nil)
				errs <- err
			}()
		}
		for i := 0; i < 2; i++ {
			<-started // two workers busy at once
		}
		close(release)
		for i := 0; i < 2; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		await(t, "the reaper woken by two idle workers", func() bool { return !s.reapParked.Load() })
		await(t, "the reaper ending idle workers down to one, then parking", func() bool {
			return s.idleWork.Load() <= 1 && s.reapParked.Load()
		})
	}
}

// The watchdog's timer fires, not before its delay, again after each
// reset, both the OS one (Linux: a timerfd read through the poller, so
// that no runtime timer is pending) and the time.Timer one.
func TestWDTimerFires(t *testing.T) {
	defer wdGoTimerOnly.Store(false)
	for _, goOnly := range []bool{false, true} {
		wdGoTimerOnly.Store(goOnly)
		tm := newWDTimer()
		_, isFD := tm.(*fdTimer)
		if want := !goOnly && runtime.GOOS == "linux"; isFD != want {
			t.Fatalf("go timer only %v: timerfd %v, want %v", goOnly, isFD, want)
		}
		for i := 0; i < 3; i++ {
			const d = 2 * time.Millisecond
			t0 := time.Now()
			tm.reset(d)
			fired := make(chan struct{})
			go func() { tm.wait(); close(fired) }()
			select {
			case <-fired:
			case <-time.After(30 * time.Second):
				t.Fatalf("go timer only %v: the timer did not fire in 30 s", goOnly)
			}
			if el := time.Since(t0); el < d {
				t.Fatalf("go timer only %v: fired after %v, before its delay %v", goOnly, el, d)
			}
		}
		tm.close()
	}
}

// A handler stuck on the only connection is taken over by the watchdog's
// own timer, the time.Timer one too (the OS one is tested by the other
// watchdog tests on Linux).
func TestWatchdogGoTimer(t *testing.T) {
	wdGoTimerOnly.Store(true)
	defer wdGoTimerOnly.Store(false)
	s, addr, _ := testServer(t, WithReadTimeout(0), WithIdleTimeout(0))
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	go c.Call(context.Background(), mSlow, []byte("stuck"), nil)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("behind"), nil); err != nil || string(out) != "behind" {
		t.Fatalf("the call behind a stuck handler (not taken over in 30 s?): %q %v", out, err)
	}
}
