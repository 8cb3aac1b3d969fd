package cluster

import (
	"context"
	"math"
	"testing"
	"time"
)

// A resolver that flaps (drops an address, then gives it again a moment
// later) does not make its replica look fresh: the client remembers, for
// the back-off's cap, a dropped replica's row of ejections and the rest
// of its back-off, and its latency when it was admitted. Before, the
// replica given again was a new one: an ejected replica (here, for a
// minute) was dialed and admitted at once with no row, and an admitted
// one lost its latency (unknown again, P2C weighing load alone).
func TestResolverFlapKeepsReplicaState(t *testing.T) {
	down, up := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	push := NewPush(down.addr, up.addr)
	c := dialT(t, "svc", WithResolver(push), WithHealthCheck(time.Hour, 0),
		WithEjection(1, time.Minute, 10*time.Minute))
	// The other replica dies: a call finds its connection broken, and
	// its redial fails; ejected, it backs off for a minute.
	down.kill()
	await(t, "the dead replica ejected", func() bool {
		c.Call(context.Background(), mEcho, []byte("x"), nil)
		return replicaState(c, down.addr) == "ejected"
	})
	before := c.Stats().Replicas
	// A latency known for the admitted replica, slow enough to matter.
	const avg = float64(7 * time.Millisecond)
	lat := &replicaOf(c, up.addr).lat
	lat.avg.Store(math.Float64bits(avg))
	lat.at.Store(now())
	lat.seen.Store(2)
	// The dead replica comes back up (it would be admitted at once if
	// dialed), and the resolver drops each address and gives it again.
	down.start()
	await(t, "the dead replica's address dropped", func() bool {
		push.Set(up.addr) // delivered once the client watches
		return len(c.Stats().Replicas) == 1
	})
	push.Set(up.addr, down.addr)
	push.Set(down.addr)
	push.Set(down.addr, up.addr)
	after := c.Stats().Replicas
	if len(after) != 2 {
		t.Fatalf("after the flaps: %+v", after)
	}
	for i, rs := range after {
		if rs.Addr == down.addr {
			if rs.State != "ejected" || rs.Ejections != before[i].Ejections || rs.Ejections == 0 {
				t.Errorf("the ejected replica given again: %s with %d ejections in a row; before it was dropped: %s with %d", rs.State, rs.Ejections, before[i].State, before[i].Ejections)
			}
		}
	}
	await(t, "the admitted replica admitted again", func() bool { return replicaState(c, up.addr) == "ready" })
	for _, cn := range c.ready.Load().conns {
		switch {
		case cn.Addr() == down.addr:
			t.Errorf("the replica given again in its back-off was admitted")
		case cn.Latency() != time.Duration(avg):
			t.Errorf("the admitted replica given again has latency %v, want its own, %v", cn.Latency(), time.Duration(avg))
		}
	}
}

// The memory of dropped replicas is bounded: at most as many as
// WithMaxReplicas, the oldest forgotten first, each for the back-off's
// cap (or to the end of its own back-off) at most.
func TestGoneReplicasBounded(t *testing.T) {
	c := &Client{o: buildOptions([]Option{WithMaxReplicas(3), WithEjection(0, 0, time.Hour)})}
	for i := range 10 {
		// Each backing off a second longer than the one before: their
		// order does not hang on the clock's resolution.
		r := &replica{c: c, addr: "10.0.0." + itoa(i) + ":1", ejections: i, backoffEnd: now() + int64(2*time.Hour+time.Duration(i)*time.Second)}
		c.rememberLocked(r)
		if len(c.gone) > 3 {
			t.Fatalf("%d remembered, more than WithMaxReplicas allows", len(c.gone))
		}
	}
	for i := 7; i < 10; i++ {
		if _, ok := c.gone["10.0.0."+itoa(i)+":1"]; !ok {
			t.Errorf("the replica dropped %d of 10 forgotten before older ones: %v", i+1, c.gone)
		}
	}
	// One whose time is up is forgotten.
	g := c.gone["10.0.0.9:1"]
	g.until = now() - 1
	c.gone["10.0.0.9:1"] = g
	r := &replica{c: c, addr: "10.0.0.9:1"}
	c.recallLocked(r)
	if r.ejections != 0 || r.state != stateConnecting {
		t.Errorf("a replica given again after its memory's time: %d ejections, %s", r.ejections, r.state)
	}
	if _, ok := c.gone["10.0.0.9:1"]; ok {
		t.Error("still remembered once recalled")
	}
}

// A replica dropped as it is ejected, before its back-off began (run was
// on its way to it), is remembered with the back-off it was about to
// begin: given again, it is not dialed at once. CI once saw the flap
// test above lose the back-off in that window.
func TestGoneBeforeBackoffBegan(t *testing.T) {
	c := &Client{o: buildOptions([]Option{WithEjection(1, time.Minute, 10*time.Minute)})}
	r := &replica{c: c, addr: "10.0.0.1:1", state: stateEjected, ejections: 2, backoffDue: true}
	c.rememberLocked(r)
	again := &replica{c: c, addr: r.addr}
	c.recallLocked(again)
	if again.state != stateEjected || again.ejections != 2 {
		t.Fatalf("given again: %s with %d ejections in a row, want ejected with 2", again.state, again.ejections)
	}
	if left := time.Duration(again.resume - now()); left < time.Minute {
		t.Errorf("given again with %v of back-off left, want the 2 minutes of its second ejection's", left)
	}
}

// A replica dropped after its back-off was over, as it was dialed and
// probed (still ejected until it is admitted), is remembered with no
// back-off left: given again, it is dialed at once, as it was about to
// be, with its row of ejections. It used to be remembered with a whole
// new back-off, as if it had just been ejected, and so backed off twice
// for one ejection. One given again and dropped before run began the
// rest of its back-off keeps that rest.
func TestGoneAfterBackoffServed(t *testing.T) {
	c := &Client{o: buildOptions([]Option{WithEjection(1, time.Minute, 10*time.Minute)})}
	r := &replica{c: c, addr: "10.0.0.1:1", state: stateEjected, ejections: 2}
	c.rememberLocked(r)
	again := &replica{c: c, addr: r.addr}
	c.recallLocked(again)
	if again.state == stateEjected || again.ejections != 2 {
		t.Fatalf("given again: %s with %d ejections in a row, want not ejected (no back-off left) with 2", again.state, again.ejections)
	}
	// Given again with 3 minutes of back-off left, dropped before run
	// began to wait them out, given again once more.
	again.state, again.resume = stateEjected, now()+int64(3*time.Minute)
	c.rememberLocked(again)
	third := &replica{c: c, addr: r.addr}
	c.recallLocked(third)
	if third.state != stateEjected || third.resume != again.resume {
		t.Fatalf("given again a third time: %s, its back-off ending %v after the one it took over; want ejected, the same end",
			third.state, time.Duration(third.resume-again.resume))
	}
}
