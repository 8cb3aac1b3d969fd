package cluster

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// A replica ejected again and again for failed calls, with no call
// answered between, counts its ejections in a row (ReplicaStats.Ejections,
// on which its back-off depends): admitted again, passing the probe, is no
// end to the row. An answered call ends it, and so does a health check
// passed after a full interval admitted.
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
			// The back-off (100 ms ±20 %) is longer than the 60 ms
			// health interval: a tick comes during every back-off.
			c := dialT(t, r.addr, WithHealthCheck(tc.interval, time.Second),
				WithEjection(2, 100*time.Millisecond, 10*time.Second), WithMaxEjected(1))
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
