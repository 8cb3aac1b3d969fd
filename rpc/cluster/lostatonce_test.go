package cluster

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A connection lost at once (it went away, was refused a call unrun, or
// was closed by its server, sooner than the ejection base after it was
// made) is judged by its age when the client saw it lost, not by its age
// when the replica's goroutine gets to redial it. The judgement was made
// at the redial: a goroutine woken later than the base (a loaded
// machine, 250 ms held in a scratch edit with a 200 ms base) found the
// connection old and redialed it with no health check, and calls reached
// a server that refused them.
//
// connectHook stands for that late goroutine: before each connect of the
// bad replica it moves the birth of its connections already seen lost an
// hour back, which to anything that reads the birth from then on is an
// hour passed since the loss. The base is a minute, so that the loss
// itself is seen well within it however loaded the machine. The bad
// replica loses its connection at the first call it gets, after its
// health check: one lost during its health check is not admitted at all
// (replica.connect looks before it puts it in), and so never gets a
// call to fail.
func TestLostAtOnceJudgedWhenSeen(t *testing.T) {
	health := func(req wire.Request) (wire.Response, bool) {
		// 404: a server without the health service counts as serving.
		return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, req.Method == rpc.HealthMethod
	}
	// A call that reaches the bad replica fails (500): only a
	// connection redialed with no health check gives it one.
	fail := func(req wire.Request) wire.Response {
		return wire.Response{Status: rpc.StatusInternal, PromiseID: req.PromiseID, Body: []byte("reached a server lost at once")}
	}
	for _, tc := range []struct {
		name, why string
		// calls: a call on the bad replica must not fail; a connection
		// closed by its server breaks the call written before the
		// client saw the close (it may have run), which fails.
		calls  bool
		answer func(req wire.Request) (wire.Response, rawNext)
	}{
		{"go-away", "went away", true, func(req wire.Request) (wire.Response, rawNext) {
			if resp, ok := health(req); ok {
				return resp, rawKeep
			}
			// Refused unrun, as a server going away refuses a call that
			// crossed its go-away, which it sent first: sent again
			// elsewhere. (With the go-away after the refusal, the
			// replica's goroutine, poked by the caller's refusal, could
			// judge the connection before the read loop had read the
			// go-away: "refused a call unrun", about 1 run in 300 under
			// -race and load.)
			return wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true, Body: []byte("going away")}, rawGoAwayFirst
		}},
		{"refusal", "refused a call unrun", false, func(req wire.Request) (wire.Response, rawNext) {
			if resp, ok := health(req); ok {
				return resp, rawKeep
			}
			return wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true, Body: []byte("going away")}, rawKeep
		}},
		{"close", "lost", false, func(req wire.Request) (wire.Response, rawNext) {
			if resp, ok := health(req); ok {
				return resp, rawKeep
			}
			return fail(req), rawClose
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := rawReplica(t, nil, tc.answer)
			good := startReplica(t, "127.0.0.1")
			var aged atomic.Int32
			hook := func(r *replica) {
				if r.addr != bad {
					return
				}
				r.c.mu.Lock()
				for _, cn := range r.conns {
					if cn != nil && cn.gone.Load() {
						cn.born = cn.born.Add(-time.Hour)
						aged.Add(1)
					}
				}
				r.c.mu.Unlock()
			}
			connectHook.Store(&hook)
			t.Cleanup(func() { connectHook.Store(nil) }) // after the client's Close
			c := dialT(t, "static:///"+bad+","+good.addr, WithEjection(0, time.Minute, time.Minute))
			stop := loadRun(c, 4, 30*time.Second)
			await(t, "the bad replica ejected", func() bool { return c.Stats().Ejections > 0 })
			res := stop()
			t.Logf("%d calls, %d failed; %d lost connections aged", res.calls, res.failed, aged.Load())
			if aged.Load() == 0 {
				t.Fatal("no connection seen lost before its redial: the test did not reach what it tests")
			}
			for _, r := range c.Stats().Replicas {
				if r.Addr == bad && (r.LastError == nil || !strings.Contains(r.LastError.Error(), "connection "+tc.why)) {
					t.Fatalf("the bad replica was ejected for %v, want its connection %s at once", r.LastError, tc.why)
				}
			}
			if tc.calls && res.failed != 0 {
				t.Fatalf("%d calls failed: %v", res.failed, res.firstErr)
			}
		})
	}
}
