package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// downDialer is every replica down: each dial fails at once, counted by
// address.
type downDialer struct {
	mu    sync.Mutex
	dials map[string]int
}

func (d *downDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials[addr]++
	d.mu.Unlock()
	return nil, errors.New("connection refused (downDialer)")
}

func (d *downDialer) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[addr]
}

// During an outage of every replica, with a call waiting for one all the
// while, each replica's redials follow the back-off: cut short after the
// first step (WithEjection's base) at first, then after a step doubling
// with each redial up to the cap, ±20 % each. Before, every back-off was
// cut short after the first step for as long as the outage lasted: with
// the defaults, each client dialed each replica twice a second. The rows
// of ejections are long (their back-offs at the cap): the outage's
// cut-short ends the back-offs before the cap, as after an outage that
// follows a long row. Counts of dials and the back-offs' lengths as the client chose
// them, no clock.
//
// "late": the replica's goroutine runs late (a loaded machine), after
// its back-off's whole length: both of its timers have fired, and the
// back-off still counts as cut short by the outage, its next step
// doubled. It did only when the select took the step's timer, at random:
// a step did not double now and then under load.
func TestOutageRedialsBackOff(t *testing.T) {
	const base, most = 2 * time.Millisecond, 32 * time.Millisecond
	for _, tc := range []struct {
		name string
		late time.Duration // how late the goroutine runs at each back-off
	}{{"prompt", 0}, {"late", most * 3 / 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			waits := map[string][]time.Duration{} // the back-offs' lengths while wanted, in order
			backoffHook = func(addr string, wait time.Duration) {
				mu.Lock()
				waits[addr] = append(waits[addr], wait)
				mu.Unlock()
				time.Sleep(tc.late)
			}
			t.Cleanup(func() { backoffHook = nil }) // after the client's Close
			d := &downDialer{dials: map[string]int{}}
			const a, b = "10.0.0.1:7700", "10.0.0.2:7700"
			c, err := Dial(context.Background(), "static:///"+a+","+b, WithHealthCheck(time.Hour, time.Minute),
				WithEjection(1, base, most), WithWaitForReady(time.Hour),
				WithClientOptions(rpc.WithDialer(d)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.mu.Lock()
			for _, r := range c.replicas {
				r.ejections = 40 // a long row: each back-off is the cap, but for the outage's cut
			}
			c.mu.Unlock()
			ctx, cancel := context.WithCancel(context.Background())
			waited := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mEcho, nil, nil)
				waited <- err
			}()
			const n = 10
			await(t, "10 dials of each replica", func() bool { return d.count(a) >= n && d.count(b) >= n })
			cancel()
			if err := <-waited; err != context.Canceled {
				t.Fatalf("the waiting call: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, addr := range []string{a, b} {
				w := waits[addr]
				t.Logf("%s: %d dials, back-offs %v", addr, d.count(addr), w)
				if len(w) < n-1 {
					t.Fatalf("%s: %d dials, %d back-offs between them", addr, d.count(addr), len(w))
				}
				// The first back-off may come before the row was made long
				// (then its own timer ended it, at the first step, and the
				// outage's steps begin again after it).
				k := 1
				if w[0] <= base*6/5 && w[1] <= base*6/5 {
					w = w[1:]
				}
				for i, got := range w[:n-2] {
					want := backoffFor(k+i, base, most)
					if got < want*4/5 || got > want*6/5 {
						t.Fatalf("%s: back-off %d of the outage lasts up to %v, want %v ±20 %% (base %v doubling to %v)", addr, i+1, got, want, base, most)
					}
				}
			}
		})
	}
}
