package cluster

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A replica whose every connection goes away at once, the only one,
// with a WaitReady waiting for it (a call wanting a replica cuts the
// back-offs short): each dial is followed by a back-off, not by another
// dial at once.
func TestFlappingOnlyReplicaWithWaitReadyBacksOff(t *testing.T) {
	var accepted atomic.Int32
	bad := goAwayAtOnce(t, &accepted)
	g0 := runtime.NumGoroutine()
	c, err := Dial(context.Background(), "static:///"+bad, WithEjection(0, 5*time.Millisecond, 40*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := make(chan error, 8)
	for range 8 {
		go func() { waited <- c.WaitReady(ctx, 1) }()
	}
	await(t, "ten ejections", func() bool { return c.Stats().Ejections >= 10 })
	n := accepted.Load()
	e := c.Stats().Ejections
	t.Logf("%d connections, %d ejections", n, e)
	if int64(n) > int64(e)+2 {
		t.Fatalf("%d connections for %d ejections: the client redials without backing off", n, e)
	}
	cancel()
	// Each ends: with ctx's error, or nil when it saw the replica
	// admitted for the moment between a connection's health check and
	// its go-away read after it (the raw replica answers, then goes
	// away), which is true when it says it.
	for range 8 {
		if err := receive(t, "WaitReady", waited); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitReady: %v", err)
		}
	}
	c.Close()
	// The replica's goroutine, its connections' and their WithOnClosing
	// goroutines end with the client.
	await(t, "the client's goroutines to end", func() bool { return runtime.NumGoroutine() <= g0 })
}
