package cluster

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// closer is a server that answers the health check 404 (serving) and
// closes the connection as soon as it has read any other request: the
// call may have run. It counts those requests in n and the connections
// it accepted in accepted.
func closer(t *testing.T, n, accepted *atomic.Int32) string {
	return rawReplica(t, accepted, func(req wire.Request) (wire.Response, rawNext) {
		if req.Method != rpc.HealthMethod {
			n.Add(1)
			return wire.Response{}, rawDrop // read, maybe run, never answered
		}
		return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, rawKeep
	})
}

// A replica that closes the connection after reading a request: the call
// may have run there, so it is never sent again (each call reaches the
// servers once), and it fails with an error matching rpc.ErrClosed.
func TestMayHaveRunNeverRetried(t *testing.T) {
	var n1, n2, a1, a2 atomic.Int32
	c := dialT(t, "static:///"+closer(t, &n1, &a1)+","+closer(t, &n2, &a2),
		WithEjection(0, 50*time.Millisecond, 100*time.Millisecond), WithWaitForReady(5*time.Second))
	const calls = 20
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := c.Call(ctx, mEcho, []byte("x"), nil)
		cancel()
		if !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("call %d: %v, want an error matching rpc.ErrClosed", i, err)
		}
		if got := n1.Load() + n2.Load(); got != int32(i+1) {
			t.Fatalf("after %d calls the servers read %d requests", i+1, got)
		}
	}
	if st := c.Stats(); st.Retries != 0 || st.Failed != calls {
		t.Fatalf("stats %+v", st)
	}
}

// Every replica down after Dial: calls fail at once with ErrNoReplica
// (WithWaitForReady 0), the client redials with a back-off (not in a
// loop), and Close leaves no goroutine behind.
func TestAllReplicasDown(t *testing.T) {
	base := runtime.NumGoroutine()
	var n, accepted atomic.Int32
	bad := closer(t, &n, &accepted) // accepts, and closes on the first call
	r := startReplica(t, "127.0.0.1")
	c, err := Dial(context.Background(), "static:///"+bad+","+r.addr,
		WithEjection(1, 100*time.Millisecond, time.Second), WithMaxEjected(1))
	if err != nil {
		t.Fatal(err)
	}
	r.kill()
	// Fail calls until both replicas are out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
		if errors.Is(err, ErrNoReplica) {
			break
		}
		if err == nil {
			t.Fatal("a call succeeded with every replica down")
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 30 s: calls still fail with %v, not ErrNoReplica", err)
		}
	}
	before := accepted.Load()
	for range 1000 {
		if _, err := c.Call(context.Background(), mEcho, nil, nil); err == nil {
			t.Fatal("a call succeeded with every replica down")
		}
	}
	time.Sleep(500 * time.Millisecond)
	if d := accepted.Load() - before; d > 10 {
		t.Fatalf("%d connections in 0.5 s to a replica that drops every call: redialed in a loop", d)
	}
	c.Close()
	r.stop()
	deadline = time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base+4 { // closer's accept loop and conns end at Cleanup
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("gave up after 30 s: %d goroutines, %d before\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close while calls wait on a replica that never answers: they all
// return with an error matching rpc.ErrClosed.
func TestCloseDuringCalls(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	r.delay.Store(int64(time.Hour))
	c, err := Dial(context.Background(), r.addr)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 50)
	for range 50 {
		go func() {
			_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
			errs <- err
		}()
	}
	await(t, "the calls to be on the wire", func() bool { return r.calls.Load() == 50 || c.Stats().Replicas[0].InFlight == 50 })
	go c.Close()
	for range 50 {
		select {
		case err := <-errs:
			if !errors.Is(err, rpc.ErrClosed) {
				t.Fatalf("call during Close: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("gave up after 30 s: calls still waiting after Close")
		}
	}
}
