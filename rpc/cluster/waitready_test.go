package cluster

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// holdAdmission holds every connect of the replica of addr until the
// returned release is called (or the replica ends), so that a test can
// have a client with that replica not admitted yet for as long as it
// likes.
func holdAdmission(t *testing.T, addr string) (release func()) {
	ch := make(chan struct{})
	hook := func(r *replica) {
		if r.addr != addr {
			return
		}
		select {
		case <-ch:
		case <-r.ctx.Done():
		}
	}
	connectHook.Store(&hook)
	t.Cleanup(func() { connectHook.Store(nil) }) // after the client's Close
	done := false
	return func() {
		if !done {
			done = true
			close(ch)
		}
	}
}

// waitingReady reports whether a WaitReady is waiting for a change.
func waitingReady(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readyWaits > 0
}

// waitFor returns what ch gives, failing the test with every
// goroutine's stack when it gives nothing within 30 s (a hang guard).
func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("after 30 s still waiting for %s\n%s", what, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// WaitReady returns once the replicas it waits for are admitted: at once
// for those ready already, and at the admission of the last one it
// waits for, woken by it (the test holds that admission until WaitReady
// waits).
func TestWaitReadyWakesAtAdmission(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	release := holdAdmission(t, b.addr)
	c, err := Dial(context.Background(), "static:///"+a.addr+","+b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.WaitReady(ctx, 1); err != nil {
		t.Fatalf("WaitReady(1): %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(ctx, 0) }()
	await(t, "WaitReady to wait", func() bool { return waitingReady(c) })
	release()
	if err := waitFor(t, "WaitReady to return", done); err != nil {
		t.Fatalf("WaitReady(0): %v", err)
	}
	if got := readyCount(c); got != 2 {
		t.Fatalf("WaitReady(0) returned with %d replicas ready, want 2", got)
	}
	if err := c.WaitReady(ctx, 2); err != nil {
		t.Fatalf("WaitReady(2): %v", err)
	}
}

// WaitReady for more replicas than the resolver names waits for it to
// name them; with n = 0 it waits for every replica named, the new ones
// included.
func TestWaitReadyMoreThanNamed(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	push := NewPush(a.addr)
	c := dialT(t, "push", WithResolver(push))
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(context.Background(), 2) }()
	await(t, "WaitReady to wait", func() bool { return waitingReady(c) })
	push.Set(a.addr, b.addr)
	if err := waitFor(t, "WaitReady to return", done); err != nil {
		t.Fatal(err)
	}
	if got := readyCount(c); got != 2 {
		t.Fatalf("%d replicas ready, want 2", got)
	}
}

// A WaitReady whose ctx ends first, or whose client is closed, fails
// saying how many replicas were ready, of how many named; its error
// matches ctx's error, or rpc.ErrClosed.
func TestWaitReadyErrors(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	holdAdmission(t, b.addr)
	c, err := Dial(context.Background(), "static:///"+a.addr+","+b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(ctx, 0) }()
	await(t, "WaitReady to wait", func() bool { return waitingReady(c) })
	cancel()
	err = waitFor(t, "WaitReady to return at its ctx's end", done)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 of 2 replicas ready") {
		t.Fatalf("WaitReady: %v, want context.Canceled and 1 of 2 replicas ready", err)
	}

	go func() { done <- c.WaitReady(context.Background(), 2) }()
	await(t, "WaitReady to wait", func() bool { return waitingReady(c) })
	c.Close()
	err = waitFor(t, "WaitReady to return at Close", done)
	if !errors.Is(err, rpc.ErrClosed) || !strings.Contains(err.Error(), "1 of 2 replicas were ready") {
		t.Fatalf("WaitReady: %v, want rpc.ErrClosed and 1 of 2 replicas ready", err)
	}
	if err := c.WaitReady(context.Background(), 1); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("WaitReady after Close: %v, want rpc.ErrClosed", err)
	}
}

// With no replica up, a WaitReady wants one as a call waiting for one
// (WithWaitForReady) does: the replica's back-off, an hour long (its row
// of ejections made long by the test), is cut short after the outage's
// first step (20 ms), and WaitReady returns once the replica, started
// meanwhile, is admitted.
func TestWaitReadyCutsBackoff(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	addr := r.addr
	r.kill()
	hook := func(x *replica) {
		if x.addr == addr {
			x.c.mu.Lock()
			x.ejections = 30 // the back-off after this connect: the cap
			x.c.mu.Unlock()
		}
	}
	connectHook.Store(&hook)
	t.Cleanup(func() { connectHook.Store(nil) }) // after the client's Close
	c, err := Dial(context.Background(), "static:///"+addr, WithEjection(0, 20*time.Millisecond, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.start()
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(context.Background(), 1) }()
	if err := waitFor(t, "WaitReady to return", done); err != nil {
		t.Fatal(err)
	}
}

// Many WaitReady callers, for every replica of a resolver that names
// none yet and for more replicas than will ever be named, wait; the
// replica named later lets the first kind in, and Close ends the rest,
// leaving no waiter counted.
func TestWaitReadyManyCallersNoneNamed(t *testing.T) {
	a := startReplica(t, "127.0.0.1")
	push := NewPush()
	c := dialT(t, "push", WithResolver(push))
	const each = 50
	all, more := make(chan error, each), make(chan error, each)
	for range each {
		go func() { all <- c.WaitReady(context.Background(), 0) }()
		go func() { more <- c.WaitReady(context.Background(), 5) }()
	}
	await(t, "every WaitReady to wait", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.readyWaits == 2*each
	})
	push.Set(a.addr)
	for range each {
		if err := waitFor(t, "WaitReady(0) once the replica is named and admitted", all); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	for range each {
		// Not the count of ready replicas its error gives: a caller
		// that had not looked again since the admission woke it says
		// the count it last saw (0).
		if err := waitFor(t, "WaitReady(5) at Close", more); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("WaitReady(5) at Close: %v, want rpc.ErrClosed", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readyWaits != 0 || c.waiting != 0 {
		t.Fatalf("after the WaitReady calls: %d counted waiting, %d wanting a replica", c.readyWaits, c.waiting)
	}
}
