package cluster

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A replica ejected again and again for failed calls, with no call
// answered between, counts its ejections in a row (ReplicaStats.Ejections,
// on which its back-off depends): admitted again, passing the probe, is no
// end to the row. An answered call ends it, and so do two health checks
// passed in a row after the admission.
//
// With a health interval shorter than the back-off, a tick used to wait in
// the ticker's channel during every back-off; the replica's goroutine took
// it the moment the replica was admitted again, the check passed, and the
// row was reset before any call ran: the count stayed at 1 and the
// back-off never doubled.
func TestEjectionsInARow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration // of the health checks
		end      func(t *testing.T, c *Client)
	}{
		{"answered call", time.Hour, func(t *testing.T, c *Client) {
			await(t, "the replica admitted again", func() bool { return readyCount(c) == 1 })
			if n := c.Stats().Replicas[0].Ejections; n < 3 {
				t.Fatalf("admitted again, the replica counts %d ejections in a row, want the 3 or more before", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("%q %v", out, err)
			}
			if rs := c.Stats().Replicas[0]; rs.Ejections != 0 {
				t.Fatalf("the replica answered a call and still counts %d ejections in a row", rs.Ejections)
			}
		}},
		{"health check", 60 * time.Millisecond, func(t *testing.T, c *Client) {
			await(t, "the row ended by the health checks", func() bool {
				rs := c.Stats().Replicas[0]
				return rs.State == "ready" && rs.Ejections == 0
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startReplica(t, "127.0.0.1")
			// While the row is built, a periodic health check (one made
			// while the replica is admitted) is held until the failed
			// calls have asked for the replica's ejection: the row's
			// length must not depend on the calls beating two checks
			// 60 ms apart (a goroutine stalled that long under load let
			// the checks end the row). A check held so still passes
			// before the ejection is taken, as the tick's check did at
			// the admission with the old code: one passed check must
			// not end the row.
			var rep atomic.Pointer[replica]
			var building atomic.Bool
			building.Store(true)
			hold := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
				if p := rep.Load(); method == rpc.HealthMethod && p != nil && building.Load() && readyCount(p.c) == 1 {
					for building.Load() && !p.ejectReq.Load() && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
				}
				return invoke(ctx, method, req, resp)
			}
			// The back-off (100 ms ±20 %) is longer than the 60 ms
			// health interval: a tick comes during every back-off. (The
			// health timeout only keeps a broken test from hanging.)
			c := dialT(t, r.addr, WithHealthCheck(tc.interval, time.Minute),
				WithEjection(2, 100*time.Millisecond, 10*time.Second), WithMaxEjected(1),
				WithClientOptions(rpc.WithClientInterceptors(hold)))
			rep.Store(replicaOf(c, r.addr))
			// Calls that fail, one every few milliseconds, eject it
			// within a moment of each admission (while it is out they
			// fail with ErrNoReplica).
			await(t, "3 ejections", func() bool {
				if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
					t.Fatal("mFail succeeded")
				}
				return c.Stats().Ejections >= 3
			})
			// Counted together under the client's lock, the row after the
			// total.
			if n := c.Stats().Replicas[0].Ejections; n < 3 {
				t.Fatalf("3 ejections with no call answered between them, but the replica counts %d in a row", n)
			}
			building.Store(false)
			tc.end(t, c)
		})
	}
}

// An ejection, whatever its reason, answers the failed calls that asked
// for one meanwhile: a health check that ejects the replica while its
// calls' request waits does not leave that request to eject it a second
// time, unprobed, after its back-off.
func TestEjectionClearsRequest(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, r.addr, WithHealthCheck(time.Hour, 0), WithEjection(2, 20*time.Millisecond, 40*time.Millisecond), WithMaxEjected(1))
	rep := replicaOf(c, r.addr)
	// Two calls failed and asked for an ejection (not poked: the
	// replica's goroutine is busy, as in a health check) ...
	rep.fails.Store(2)
	rep.ejectReq.Store(true)
	// ... which ejects it first, as a failed check does.
	rep.eject(errors.New("health check: no answer"))
	rep.poke()
	await(t, "the replica admitted again", func() bool { return readyCount(c) == 1 })
	if st := c.Stats(); st.Ejections != 1 {
		t.Fatalf("%d ejections for one: %+v", st.Ejections, st.Replicas)
	}
}

// The back-off of the n-th ejection in a row: the base doubling with each,
// up to the cap, for any base and cap (a shift by n-1 overflowed for a
// large base).
func TestBackoffFor(t *testing.T) {
	const maxDur = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		n          int
		base, most time.Duration
		want       time.Duration
	}{
		{1, DefaultEjectBase, DefaultEjectMax, 500 * time.Millisecond},
		{2, DefaultEjectBase, DefaultEjectMax, time.Second},
		{6, DefaultEjectBase, DefaultEjectMax, 16 * time.Second},
		{7, DefaultEjectBase, DefaultEjectMax, DefaultEjectMax},
		{1000, DefaultEjectBase, DefaultEjectMax, DefaultEjectMax},
		{3, 2 * time.Second, time.Second, time.Second}, // base above the cap
		{25, time.Hour, 24 * time.Hour, 24 * time.Hour},
		{30, time.Hour, maxDur, maxDur},
		{63, 1, maxDur, 1 << 62},
		{64, 1, maxDur, maxDur},
		{math.MaxInt, 1, maxDur, maxDur},
	} {
		if got := backoffFor(tc.n, tc.base, tc.most); got != tc.want {
			t.Errorf("backoffFor(%d, %v, %v) = %v, want %v", tc.n, tc.base, tc.most, got, tc.want)
		}
	}
}

// jitter keeps a back-off within ±20 %, and the longest one positive.
func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, math.MaxInt64 / 2, math.MaxInt64} {
		for range 1000 {
			got := jitter(d)
			if got < d-d/5-1 || got < 0 || float64(got) > 1.2*float64(d)+1 {
				t.Fatalf("jitter(%v) = %v", d, got)
			}
		}
	}
}

// The first health check after a replica is admitted again does not end
// its row of ejections, however the timers fall: only a real period of
// health does (two checks passed in a row, a full interval between
// them), or an answered call. Each round ejects the replica with failed
// calls, then leaves it alone; an interceptor on its connections reads
// the row as the readmission probe starts, and as the second and the
// third health checks after it start (each after the check before it
// ended, and ended the row or not). The periodic checks take 5 ms longer
// than the probe, as a check on a busy replica may: that made the first
// one end the row nearly every time.
//
// The row used to end when a check passed a full interval after the
// admission, reckoned from the end of the check; the first check's
// interval started before the admission (at the end of the back-off), so
// it came a little too soon or a little too late depending on the dial,
// the probe and the timer's delay, and ended the row about half the time.
func TestFirstCheckAfterReadmissionKeepsRow(t *testing.T) {
	type rows struct{ probe, second, third int }
	reports := make(chan rows, 16)
	var client atomic.Pointer[Client]
	var since int // health calls since the last readmission probe (the replica's goroutine only)
	var cur rows
	ic := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		if c := client.Load(); c != nil && method == rpc.HealthMethod {
			rs := c.Stats().Replicas[0]
			switch {
			case rs.State != "ready":
				since, cur = 0, rows{probe: rs.Ejections}
			case since == 2: // the probe was 0, the first check 1
				cur.second = rs.Ejections
			case since == 3:
				cur.third = rs.Ejections
				if cur.probe > 0 {
					reports <- cur
				}
			}
			since++
			if rs.State == "ready" {
				time.Sleep(5 * time.Millisecond)
			}
		}
		return invoke(ctx, method, req, resp)
	}
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, r.addr, WithHealthCheck(20*time.Millisecond, time.Second),
		WithEjection(2, 5*time.Millisecond, time.Second), WithMaxEjected(1),
		WithClientOptions(rpc.WithClientInterceptors(ic)))
	client.Store(c)
	for round := range 12 {
		await(t, "the replica ejected", func() bool {
			if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
				t.Fatal("mFail succeeded")
			}
			return replicaState(c, r.addr) == "ejected"
		})
		got := receive(t, "the third health check after the readmission", reports)
		if got.second != got.probe {
			t.Fatalf("round %d: %d ejections in a row when admitted again, %d after its first health check: the first check ended the row", round, got.probe, got.second)
		}
		if got.third != 0 {
			t.Fatalf("round %d: two health checks passed in a row after the readmission, and the replica still counts %d ejections in a row", round, got.third)
		}
	}
}

// After an outage of every replica, the first one back is found within a
// step of the outage's own back-off (from WithEjection's base, doubling
// with each redial of the outage: see TestOutageRedialsBackOff) once a
// call wants one, not after the back-off its row of ejections has grown
// to: here an
// hour, so that before, a call waiting for a replica (WithWaitForReady)
// waited out its own wait and failed, and calls failing at once found
// none for the hour. With a replica ready, no call wants one.
func TestOutageBackoffCutShort(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration // WithWaitForReady
	}{{"waiting call", 30 * time.Second}, {"failing calls", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
			c := dialT(t, "static:///"+a.addr+","+b.addr, WithHealthCheck(time.Hour, 0),
				WithEjection(1, 20*time.Millisecond, time.Hour), WithMaxEjected(1), WithWaitForReady(tc.wait))
			for range 20 {
				if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
					t.Fatal(err)
				}
			}
			c.mu.Lock()
			wanted := c.wantAt
			for _, r := range c.replicas {
				r.ejections = 40 // a long row: the next back-off is the hour
			}
			c.mu.Unlock()
			if wanted != 0 {
				t.Fatal("a call found no replica ready while both were")
			}
			a.kill()
			b.kill()
			// Calls find the connections broken: the replicas are
			// ejected, their redials fail, they back off for the hour.
			await(t, "both replicas ejected", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				c.Call(ctx, mEcho, []byte("x"), nil)
				cancel()
				st := c.Stats()
				return readyCount(c) == 0 && st.Replicas[0].Ejections > 40 && st.Replicas[1].Ejections > 40
			})
			a.start()
			if tc.wait > 0 {
				if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
					t.Fatalf("a call waiting for a replica while one is back: %v", err)
				}
			} else {
				await(t, "a call answered", func() bool {
					_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
					if err != nil && !errors.Is(err, ErrNoReplica) {
						t.Fatal(err)
					}
					return err == nil
				})
			}
			if n := readyCount(c); n != 1 {
				t.Fatalf("%d replicas ready, want the one back", n)
			}
		})
	}
}
