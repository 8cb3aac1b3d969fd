package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// shortWatcher is a Watcher whose Watch gives the current set once and
// returns at once (a registry's stream that ended), or panics.
type shortWatcher struct {
	addrs atomic.Pointer[[]string]
	panic bool
	ended chan struct{} // closed as Watch returns
}

func (w *shortWatcher) Resolve(context.Context) ([]string, error) { return *w.addrs.Load(), nil }

func (w *shortWatcher) Watch(ctx context.Context, update func([]string)) {
	defer close(w.ended)
	update(*w.addrs.Load())
	if w.panic {
		panic("watch stream broken")
	}
}

// A Watch that returns, or panics, before the client is closed leaves
// the client polling the watcher's Resolve, as for a plain Resolver: the
// client used to get no change of the set again (and a panic ended the
// program, from the client's goroutine).
func TestWatchEndedFallsBackToPolling(t *testing.T) {
	for _, panics := range []bool{false, true} {
		a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
		w := &shortWatcher{panic: panics, ended: make(chan struct{})}
		w.addrs.Store(&[]string{a.addr})
		c := dialT(t, "watch", WithResolver(w), WithRefresh(10*time.Millisecond))
		receive(t, "Watch to return", w.ended)
		w.addrs.Store(&[]string{a.addr, b.addr})
		await(t, "b admitted", func() bool { return readyCount(c) == 2 })
		if panics {
			if err := c.Stats().LastError; err == nil || !strings.Contains(err.Error(), "watch stream broken") {
				t.Fatalf("after the watcher's panic, LastError is %v", err)
			}
		}
		c.Close()
	}
}
