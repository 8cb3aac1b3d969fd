package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

const mBlock = 32 // blocks until the test ends (or its ctx does)

// blockCalls makes r's mBlock block until the test ends, counting the calls
// that entered it in held.
func blockCalls(t *testing.T, r *replicaSrv, held *atomic.Int32) {
	release := make(chan struct{})
	t.Cleanup(sync.OnceFunc(func() { close(release) }))
	r.server().Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		held.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return resp, nil
	})
}

// callsInFlight starts n mBlock calls through c and returns their errors
// as they end.
func callsInFlight(c *Client, n int) <-chan error {
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := c.Call(ctx, mBlock, nil, nil)
			errs <- err
		}()
	}
	return errs
}

// onlyConn returns the connection of the client's one admitted replica,
// once it is older than the first back-off (a connection lost sooner
// rightly ejects its replica: see connect).
func onlyConn(t *testing.T, c *Client) *Conn {
	t.Helper()
	cn := c.ready.Load().conns[0]
	await(t, "the connection older than the first back-off", func() bool { return time.Since(cn.born) > c.o.ejectBase })
	return cn
}

// A connection that breaks while no call is on it, its replica up, is
// redialed; the replica is not ejected. The periodic health check used to
// probe the broken connection, get ErrClosed and eject the replica.
func TestBrokenIdleConnRedialed(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	d := &rawConnDialer{}
	c := dialT(t, r.addr, WithHealthCheck(20*time.Millisecond, time.Second),
		WithEjection(0, 50*time.Millisecond, 10*time.Second), WithClientOptions(rpc.WithDialer(d)))
	old := onlyConn(t, c)
	d.last().Close() // the connection breaks; the replica is fine
	await(t, "a new connection in the ready set", func() bool {
		cs := c.ready.Load().conns
		return len(cs) == 1 && cs[0] != old && !cs[0].rc.Closed()
	})
	if st := c.Stats(); st.Ejections != 0 {
		t.Fatalf("a replica that is up was ejected %d time(s) because its idle connection broke: %+v", st.Ejections, st.Replicas)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
		t.Fatalf("call to a replica that is up: %q %v", out, err)
	}
}

// Calls that fail because their connection went away count against the
// replica only when the connection broke, and then once, however many
// calls were on it: one broken connection with more calls in flight than
// WithEjection's threshold used to eject a replica that was up (its
// redial succeeded), and calls still on a connection the client itself
// retired and closed counted as the replica's failures.
func TestConnLossCountsOnce(t *testing.T) {
	const calls = 8 // above the threshold of 5
	for _, tc := range []struct {
		name string
		lose func(c *Client, cn *Conn, d *rawConnDialer)
		want int32 // failures counted
	}{
		{"broken", func(c *Client, cn *Conn, d *rawConnDialer) { d.last().Close() }, 1},
		// Retired (as a health check that finds the replica draining
		// does), then closed at the end of the drain timeout with the
		// calls still on it.
		{"closed by the client", func(c *Client, cn *Conn, d *rawConnDialer) { c.drop(cn) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startReplica(t, "127.0.0.1")
			var held atomic.Int32
			blockCalls(t, r, &held)
			d := &rawConnDialer{}
			c := dialT(t, r.addr, WithHealthCheck(time.Hour, 0), WithEjection(5, 20*time.Millisecond, time.Second),
				WithMaxEjected(1), WithDrainTimeout(50*time.Millisecond), WithWaitForReady(time.Minute), WithClientOptions(rpc.WithDialer(d)))
			rep := replicaOf(c, r.addr)
			cn := onlyConn(t, c)
			errs := callsInFlight(c, calls)
			await(t, "the calls running", func() bool { return held.Load() == calls })
			tc.lose(c, cn, d)
			for range calls {
				select {
				case err := <-errs:
					if !errors.Is(err, rpc.ErrClosed) {
						t.Fatalf("a call on the lost connection: %v, want ErrClosed", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the calls on the lost connection still wait after 30 s")
				}
			}
			// Read in this order: an ejection resets fails after it is
			// counted.
			fails := rep.fails.Load()
			if st := c.Stats(); fails != tc.want || st.Ejections != 0 {
				t.Fatalf("%d calls lost with their connection: %d failures counted, %d ejections; want %d and none",
					calls, fails, st.Ejections, tc.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("call on the redialed connection: %q %v", out, err)
			}
		})
	}
}

// A health check that finds its connection broken was not made: it is no
// pass, and does not end the replica's row of ejections. It counted as
// one: a replica ejected again and again (its back-off doubling),
// admitted for a full interval and then lost with its server, had its row
// ended by the check that found its connection broken, and its back-off
// started again from the first step. Here the check that finds it broken
// is the second after the admission, the one that ends the row when it
// passes (see TestFirstCheckAfterReadmissionKeepsRow).
func TestBrokenConnCheckIsNoPass(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	var repOf atomic.Pointer[replica]
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	// While the row is built, a periodic check (one of the admitted
	// replica) is held until the failed calls have asked for the
	// replica's ejection: the row must not depend on a failed call
	// beating two checks after each admission (a test goroutine stalled
	// 200 ms under load let two checks pass and end the row). Then the
	// periodic checks of the replica admitted after 3 ejections in a
	// row are held once one has passed. The probes that admit it are
	// never held.
	var building atomic.Bool
	building.Store(true)
	hold := rpc.WithClientInterceptors(func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		if rep := repOf.Load(); method == rpc.HealthMethod && rep != nil {
			rep.c.mu.Lock()
			ready := rep.state == stateReady
			checking := ready && rep.ejections >= 3 && rep.passes >= 1
			rep.c.mu.Unlock()
			for ready && building.Load() && !rep.ejectReq.Load() && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			if checking {
				select {
				case held <- struct{}{}:
				default:
				}
				<-release
			}
		}
		return invoke(ctx, method, req, resp)
	})
	const interval = 100 * time.Millisecond
	c := dialT(t, r.addr, WithHealthCheck(interval, time.Second),
		WithEjection(2, 50*time.Millisecond, 10*time.Second), WithMaxEjected(1), WithClientOptions(hold))
	rep := replicaOf(c, r.addr)
	repOf.Store(rep)
	// Failed calls eject it 3 times in a row (see TestEjectionsInARow).
	await(t, "3 ejections", func() bool {
		c.Call(context.Background(), mFail, nil, nil)
		return c.Stats().Ejections >= 3
	})
	building.Store(false)
	await(t, "the replica admitted again", func() bool { return readyCount(c) == 1 })
	row := c.Stats().Replicas[0].Ejections
	if row < 3 {
		t.Fatalf("admitted again after 3 ejections, the replica counts %d in a row", row)
	}
	// Its second periodic check is held; meanwhile its server goes
	// down.
	receive(t, "a second periodic health check", held)
	cn := c.ready.Load().conns[0]
	r.kill()
	await(t, "the connection broken", func() bool { return cn.rc.Closed() })
	releaseOnce()
	// The check finds the connection broken, and the redial fails.
	await(t, "the replica ejected", func() bool { return c.Stats().Replicas[0].State == "ejected" })
	if got := c.Stats().Replicas[0].Ejections; got <= row {
		t.Fatalf("ejected after %d ejections in a row and no pass, the replica counts %d in a row: the check that found its connection broken ended the row",
			row, got)
	}
}
