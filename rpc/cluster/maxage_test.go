package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Replicas that age their connections out (rpc.WithMaxConnectionAge)
// serve a steady load through the cluster client with no failed call:
// each connection's go-away makes the client dial a replacement and send
// its calls there, and a call that crossed the go-away (refused unrun)
// goes to another connection without counting as a retry. The age is
// above the ejection base given, so that no connection is taken for one
// lost at once (see WithEjection).
//
// With a single replica and one connection to it, the calls made while
// its connection goes away wait for the replacement (or go on the
// connection being dialed) rather than fail.
func TestMaxConnectionAgeNoFailedCall(t *testing.T) {
	const age = 60 * time.Millisecond
	for _, tc := range []struct {
		name     string
		replicas int
		opts     []Option
	}{
		{"one replica, one connection", 1, nil},
		{"two replicas, two connections each", 2, []Option{WithConnsPerReplica(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []*replicaSrv
			for range tc.replicas {
				r := startReplica(t, "127.0.0.1")
				r.restartWith(rpc.WithMaxConnectionAge(age, 0))
				rs = append(rs, r)
			}
			opts := append([]Option{WithEjection(0, 5*time.Millisecond, 0)}, tc.opts...)
			c := dialT(t, strings.Join(addrsOf(rs...), ","), opts...)
			stop := loadRun(c, 8, time.Minute)
			// Each replica's connections aged out several times over.
			await(t, "every replica's connections aged out several times", func() bool {
				for _, r := range rs {
					if r.server().Stats().Accepted < 8 {
						return false
					}
				}
				return true
			})
			res := stop()
			if res.failed != 0 {
				t.Fatalf("%d of %d calls failed, the first with %v", res.failed, res.calls, res.firstErr)
			}
			for _, r := range c.Stats().Replicas {
				if r.State != "ready" {
					t.Errorf("replica %s is %s after the age-outs (last error %v)", r.Addr, r.State, r.LastError)
				}
			}
			var accepted []uint64
			for _, r := range rs {
				s := r.server().Stats()
				if s.Dropped != 0 {
					t.Errorf("replica %s dropped %d connections", r.addr, s.Dropped)
				}
				accepted = append(accepted, s.Accepted)
			}
			t.Logf("%d calls; connections accepted per replica: %v", res.calls, accepted)
		})
	}
}

// goAwayOnce is a replica whose first connection, at its first call,
// sends a go-away and then refuses that call unrun (503 with the not-run
// flag), as a server does with a call that crossed the go-away of the
// connection's age (rawGoAwayFirst; rawReplica refuses what follows on
// that connection); every later connection echoes. It answers health
// checks 404 (a server without the health service: serving).
func goAwayOnce(t *testing.T) string {
	var accepted atomic.Int32
	return rawReplica(t, &accepted, func(req wire.Request) (wire.Response, rawNext) {
		switch {
		case req.Method == rpc.HealthMethod:
			return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, rawKeep
		case accepted.Load() == 1: // the first connection: no redial before its go-away
			return wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true, Body: []byte("going away")}, rawGoAwayFirst
		}
		return wire.Response{Status: rpc.StatusOK, PromiseID: req.PromiseID, Body: req.Payload}, rawKeep
	})
}

// A call that crosses the go-aways of two connections in a row (refused
// unrun by each server, which had sent its go-away first) is sent a
// third time, on a redialed connection, and succeeds: a refusal that
// crossed a go-away is no retry (the one retry a call gets without a
// policy), as a call that met the go-away before it was written is not.
// Connections made together age out together, and such a call failed
// with ErrGoAway.
func TestCallCrossingTwoGoAways(t *testing.T) {
	a, b := goAwayOnce(t), goAwayOnce(t)
	c := dialT(t, a+","+b, WithEjection(0, 5*time.Millisecond, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Older than the ejection base: their loss is a go-away, not a
	// connection lost at once (which ejects the replica).
	time.Sleep(20 * time.Millisecond)
	out, err := c.Call(ctx, 7, []byte("crossing"), nil)
	if err != nil || string(out) != "crossing" {
		t.Fatalf("the call: %q %v, want it answered on a new connection", out, err)
	}
	if st := c.Stats(); st.Retries != 0 || st.Failed != 0 {
		t.Fatalf("stats: %d retries, %d failed; want none (the refusals crossed go-aways)", st.Retries, st.Failed)
	}
}
