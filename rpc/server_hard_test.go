package rpc

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Issue 11 item 6: 64 calls whose handlers block, Shutdown while most of
// them are still queued on the connection. The calls that started are
// answered OK when their handlers return; the ones the server reads after
// its go-away are refused at once (retryable, not run), while the running
// handlers are still blocked; Shutdown returns only after the last answer,
// and no call fails with a closed connection.
func TestShutdownAnswersInFlightRefusesLater(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	var started atomic.Int64
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started.Add(1)
		<-release
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	const n = 64
	type result struct {
		out []byte
		err error
	}
	results := make(chan result, n)
	var refused atomic.Int64
	for i := 0; i < n; i++ {
		go func(i int) {
			out, err := c.Call(context.Background(), mSlow, []byte{byte(i)}, nil)
			if IsRetryable(err) {
				refused.Add(1)
			}
			results <- result{out, err}
		}(i)
	}
	await(t, "a handler to start", func() bool { return started.Load() > 0 })
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	await(t, "the client to see the go-away", c.Draining)
	// Every call either runs or is refused, with the handlers still
	// blocked: a blocked inline handler must not keep the read loop from
	// refusing the calls behind it.
	await(t, "every call to start or be refused", func() bool { return started.Load()+refused.Load() == n })
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while %d handlers were still running", err, started.Load())
	default:
	}
	close(release)
	ok, serverRefused := 0, 0
	for i := 0; i < n; i++ {
		r := <-results
		var se *StatusError
		switch {
		case r.err == nil && len(r.out) == 1:
			ok++
		case IsRetryable(r.err) && errors.As(r.err, &se):
			if se.Code != StatusUnavailable {
				t.Errorf("refusal %v is not the server's 503 refusal", r.err)
			}
			serverRefused++
		case r.err == ErrGoAway:
			// The client saw the go-away before sending: not sent.
		default:
			t.Errorf("call lost: %q %v", r.out, r.err)
		}
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if int64(ok) != started.Load() {
		t.Fatalf("%d handlers ran, %d answered OK", started.Load(), ok)
	}
	if st := s.Stats(); st.OK != uint64(ok) || st.Unavailable != uint64(serverRefused) {
		t.Fatalf("stats after Shutdown returned: %+v, want %d OK and %d refused", st, ok, serverRefused)
	}
	t.Logf("%d ran, %d refused by the server, %d not sent", ok, serverRefused, n-ok-serverRefused)
}

// A canonical peer ignores the go-away: a call it sends after the go-away
// reached it is refused at once with the not-run flag, while an earlier
// call is still running, and that earlier call is still answered.
func TestShutdownRefusesCallAfterGoAway(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		return append(resp, 's'), nil
	})
	rc := rawDial(t, addr)
	rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound, not a speed assert
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1}))
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if kind, _, ok := rc.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("want a go-away frame, got kind %d ok %v", kind, ok)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("late")}))
	r := rc.recvResponse()
	if r.PromiseID != 2 || r.Status != StatusUnavailable || !r.NotRun {
		t.Fatalf("call after go-away: %+v, want a 503 not-run refusal", r)
	}
	close(release)
	r = rc.recvResponse()
	if r.PromiseID != 1 || r.Status != StatusOK || string(r.Body) != "s" {
		t.Fatalf("running call: %+v", r)
	}
	rc.expectClosed()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

// Issue 11 item 7: a peer's kind-6 frame sent without the server's go-away
// is not an acknowledgement: later calls still run.
func TestUnsolicitedGoAwayIgnored(t *testing.T) {
	s, addr, _ := testServer(t)
	rc := rawDial(t, addr)
	rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound, not a speed assert
	rc.send(wire.KindGoAway, nil)
	for i := uint32(1); i <= 3; i++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte("x")}))
		if r := rc.recvResponse(); r.Status != StatusOK || r.PromiseID != i {
			t.Fatalf("call %d after an unsolicited go-away: %+v", i, r)
		}
	}
	if st := s.Stats(); st.Unavailable != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Issue 11 item 8: a plain handler error answers 500 with its text and is
// logged with the method and the peer's address; WithHideErrors sends a
// generic text instead (and still logs); a StatusError keeps its code and
// message and is not logged.
func TestHandlerErrorText(t *testing.T) {
	for _, hide := range []bool{false, true} {
		var opts []ServerOption
		if hide {
			opts = append(opts, WithHideErrors())
		}
		s, addr, logs := testServer(t, opts...)
		s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			return resp, errors.New("db: connection refused")
		})
		s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			return resp, Errorf(StatusForbidden, "no entry")
		})
		c := dial(t, addr)
		_, err := c.Call(context.Background(), mFail, nil, nil)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusInternal {
			t.Fatalf("hide=%v: %v, want status 500", hide, err)
		}
		want := "db: connection refused"
		if hide {
			want = internalErrorText
		}
		if se.Message != want {
			t.Fatalf("hide=%v: message %q, want %q", hide, se.Message, want)
		}
		local := c.nc.LocalAddr().String()
		await(t, "the handler error in the log", func() bool { return contains(logs.String(), "db: connection refused") })
		log := logs.String()
		if !contains(log, "method=2") || !contains(log, local) {
			t.Fatalf("hide=%v: log lacks the method or the peer %s: %s", hide, local, log)
		}
		_, err = c.Call(context.Background(), mSlow, nil, nil)
		if !errors.As(err, &se) || se.Code != StatusForbidden || se.Message != "no entry" {
			t.Fatalf("hide=%v: status error: %v", hide, err)
		}
		if contains(logs.String(), "no entry") {
			t.Fatalf("a StatusError was logged: %s", logs.String())
		}
	}
}

type ctxKey struct{}

// Issue 11 item 9: the handler's ctx carries the base context's values,
// CallInfo works through wrapping, and the ctx is done when the
// connection dies.
func TestHandlerContext(t *testing.T) {
	var gotListener atomic.Bool
	s, addr, _ := testServer(t, WithBaseContext(func(l net.Listener) context.Context {
		gotListener.Store(l != nil)
		return context.WithValue(context.Background(), ctxKey{}, "base")
	}))
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if v, _ := ctx.Value(ctxKey{}).(string); v != "base" {
			return resp, Errorf(StatusBadRequest, "Value %v", ctx.Value(ctxKey{}))
		}
		wrapped := context.WithValue(ctx, struct{ k int }{1}, 2)
		m, p, ok := CallInfo(wrapped)
		if !ok || m != 5 || p == 0 {
			return resp, Errorf(StatusBadRequest, "CallInfo through WithValue: %d %d %v", m, p, ok)
		}
		inner, cancel := context.WithCancel(wrapped)
		defer cancel()
		if _, _, ok := CallInfo(inner); !ok {
			return resp, Errorf(StatusBadRequest, "CallInfo through WithCancel")
		}
		if _, ok := ctx.Deadline(); ok {
			return resp, Errorf(StatusBadRequest, "deadline without one")
		}
		return resp, nil
	})
	c := dial(t, addr)
	if _, err := c.Call(context.Background(), 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !gotListener.Load() {
		t.Fatal("the base context function did not get the listener")
	}

	// Done when the connection dies (reset by the peer).
	started := make(chan struct{})
	ended := make(chan error, 1)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return resp, nil
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1}))
	<-started
	rc.Conn.(*net.TCPConn).SetLinger(0)
	rc.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("ctx done with a nil Err")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's ctx was not done 30 s after its connection was reset")
	}
}

// The base context's cancellation reaches the handler's ctx.
func TestHandlerContextBaseCancel(t *testing.T) {
	base, cancelBase := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, 1))
	s, addr, _ := testServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	started := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-ctx.Done()
		return resp, Errorf(StatusUnavailable, "canceled: %v", ctx.Err())
	})
	c := dial(t, addr)
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), mSlow, nil, nil); errc <- err }()
	<-started
	cancelBase()
	select {
	case err := <-errc:
		if err == nil || !contains(err.Error(), "canceled") {
			t.Fatalf("call: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's ctx was not done 30 s after its base context was canceled")
	}
}

// Issue 11 item 10: Serve backs off on EMFILE / ENFILE instead of
// returning.
func TestServeBacksOffOnEMFILE(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: l, fails: 4}
	s := NewServer(WithLogger(discardLogger()))
	s.Handle(mEcho, echo)
	served := make(chan error, 1)
	go func() { served <- s.Serve(fl) }()
	defer func() {
		s.Close()
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v after Close", err)
		}
	}()
	c := dial(t, l.Addr().String())
	if out, err := c.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v on a temporary accept error", err)
		default:
		}
		t.Fatalf("call: %q %v", out, err)
	}
	if fl.failed.Load() != 4 {
		t.Fatalf("%d accept errors", fl.failed.Load())
	}
}

type failingListener struct {
	net.Listener
	fails  int64
	failed atomic.Int64
}

func (f *failingListener) Accept() (net.Conn, error) {
	if n := f.failed.Add(1); n <= f.fails {
		errno := syscall.EMFILE
		if n%2 == 0 {
			errno = syscall.ENFILE
		}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	}
	f.failed.Add(-1)
	return f.Listener.Accept()
}

// Issue 11 item 10: once a connection is known dead (an answer could not
// be written), the requests it still has buffered are not run. Call 1 runs
// on a worker (the watchdog took the read loop from it); call 2 runs
// inline and waits for its ctx, which is done once the connection is
// closed; calls 3..200 sit in the read buffer behind it. The peer resets
// the connection and call 1's answer fails: call 2 returns, and none of
// the calls behind it may run on the dead connection.
//
// The watchdog may take the read loop from call 2 too (it waits in its
// handler), before the connection is known dead: the calls behind it
// then go to workers while it lives, as calls do, and one whose worker
// began it just as the connection closed may see its ctx done at once
// (the worker looks at the connection before it runs a call, but the
// close may come between the look and the handler). Such a connection
// shows nothing of the buffered requests of a dead one, and is not
// judged: the test counts the take-overs of each.
func TestDeadConnBufferedRequestsNotRun(t *testing.T) {
	s, addr, _ := testServer(t)
	const conns = 8
	var gates, startedA, startedB [conns]chan struct{}
	for i := range gates {
		gates[i], startedA[i], startedB[i] = make(chan struct{}), make(chan struct{}), make(chan struct{})
	}
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(startedA[req[0]])
		<-gates[req[0]]
		return append(resp, make([]byte, 1024)...), nil
	})
	const mWaitDead = 6
	s.Handle(mWaitDead, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(startedB[req[0]])
		<-ctx.Done()
		return resp, nil
	})
	var total atomic.Int64
	var ran [conns]atomic.Int64
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		total.Add(1)
		if ctx.Err() != nil {
			ran[req[0]].Add(1) // run although its connection was known dead
		}
		return resp, nil
	})
	// The take-overs of each connection's read loop, on s.wdMu (the hook
	// runs under it, in a scan).
	takeovers := map[*serverConn]int{}
	s.wdMu.Lock()
	s.takeoverHook = func(c *serverConn) { takeovers[c]++ }
	s.wdMu.Unlock()
	var scs [conns]*serverConn
	takenOver := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.inl.Load() == readerTaken {
				return true
			}
		}
		return false
	}
	for i := 0; i < conns; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1, Payload: []byte{byte(i)}})))
		<-startedA[i]
		await(t, "the watchdog to hand the read loop over", takenOver)
		s.mu.Lock()
		for c := range s.conns { // the one open: the last closed before
			scs[i] = c
		}
		s.mu.Unlock()
		burst := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mWaitDead, PromiseID: 2, Payload: []byte{byte(i)}}))
		for p := uint32(3); p <= 200; p++ {
			burst = append(burst, frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mFail, PromiseID: p, Payload: []byte{byte(i)}}))...)
		}
		nc.Write(burst)
		<-startedB[i]
		nc.(*net.TCPConn).SetLinger(0)
		nc.Close() // reset: the answer to call 1 cannot be written
		close(gates[i])
		await(t, "the dead connection to close", func() bool { return s.Stats().Active == 0 })
	}
	time.Sleep(100 * time.Millisecond) // let a read loop that went on show itself
	judged := 0
	for i, c := range scs {
		s.wdMu.Lock()
		n := takeovers[c]
		s.wdMu.Unlock()
		if n > 1 {
			t.Logf("connection %d: the read loop was taken from call 2 too (%d of its calls saw the close as they began)", i, ran[i].Load())
			continue
		}
		judged++
		if n := ran[i].Load(); n != 0 {
			t.Errorf("connection %d: %d buffered requests ran after the connection was closed", i, n)
		}
	}
	t.Logf("%d of %d connections judged; %d of the buffered calls ran in all", judged, conns, total.Load())
}
