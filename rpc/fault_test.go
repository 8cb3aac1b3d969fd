package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

func TestServerKilledMidCall(t *testing.T) {
	s, addr, _ := testServer(t)
	started := make(chan struct{}, 8)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done() // ends when the server closes the connection
		return resp, ctx.Err()
	})
	c := dial(t, addr)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			_, err := c.Call(context.Background(), mSlow, nil, nil)
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		<-started
	}
	s.Close()
	for i := 0; i < 8; i++ {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call: %v, want ErrClosed", err)
		}
	}
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	if !c.Closed() {
		t.Fatal("Closed() false")
	}
}

func TestCancelAndDeadline(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, "late"...), nil
	})
	c := dial(t, addr)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		out, err := c.Call(ctx, mSlow, nil, []byte("mine"))
		if string(out) != "mine" {
			err = errors.New("resp changed: " + string(out))
		}
		done <- err
	}()
	await(t, "s.Stats().Calls == 1", func() bool { return s.Stats().Calls == 1 })
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("cancel: %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := c.Call(dctx, mSlow, nil, nil); err != context.DeadlineExceeded {
		t.Fatalf("deadline: %v", err)
	}
	// Other calls are unaffected; the late answers are dropped.
	if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
		t.Fatalf("after cancel: %q %v", out, err)
	}
	close(release)
	await(t, "s.Stats().OK == 3", func() bool { return s.Stats().OK == 3 })
	for i := 0; i < 100; i++ { // slots of abandoned calls are reused correctly
		if out, err := c.Call(context.Background(), mEcho, []byte{byte(i)}, nil); err != nil || out[0] != byte(i) {
			t.Fatalf("call %d: %x %v", i, out, err)
		}
	}
	c.mu.Lock()
	nslots := len(c.slots)
	c.mu.Unlock()
	nfree := idleSlots(t, c)
	if nslots != nfree {
		t.Fatalf("%d slots, %d free: abandoned slots leaked", nslots, nfree)
	}
	// A call on a done ctx fails at once.
	if _, err := c.Call(ctx, mEcho, nil, nil); err != context.Canceled {
		t.Fatal(err)
	}
}

// Many blocked handlers on one connection: each one's read loop is handed
// to a worker in turn, and fast calls still get through.
func TestManySlowHandlersBesideFast(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	const n = 32
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			out, err := c.Call(context.Background(), mSlow, []byte{byte(i)}, nil)
			if err == nil && (len(out) != 1 || out[0] != byte(i)) {
				err = errors.New("slow call got another answer")
			}
			errs <- err
		}()
	}
	await(t, "s.Stats().Calls == n", func() bool { return s.Stats().Calls == n })
	for i := 0; i < 100; i++ {
		if out, err := c.Call(context.Background(), mEcho, []byte{byte(i)}, nil); err != nil || out[0] != byte(i) {
			t.Fatalf("fast call %d: %x %v", i, out, err)
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("slow call finished early: %v", err)
	default:
	}
	close(release)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestSlowHandlerBesideFast(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, "slow"...), nil
	})
	c := dial(t, addr)
	slow := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mSlow, nil, nil)
		if err == nil && string(out) != "slow" {
			err = errors.New("bad slow answer")
		}
		slow <- err
	}()
	await(t, "s.Stats().Calls == 1", func() bool { return s.Stats().Calls == 1 })
	for i := 0; i < 1000; i++ {
		if _, err := c.Call(context.Background(), mEcho, []byte("fast"), nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call finished early: %v", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

func TestHandlerPanic(t *testing.T) {
	s, addr, logs := testServer(t)
	s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		panic("boom")
	})
	c := dial(t, addr)
	_, err := c.Call(context.Background(), mPanic, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusInternal {
		t.Fatalf("panic answer: %v", err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("still"), nil); err != nil || string(out) != "still" {
		t.Fatalf("after panic: %q %v", out, err)
	}
	if l := logs.String(); !contains(l, "handler panic") || !contains(l, "method=3") || !contains(l, "boom") {
		t.Fatalf("log %q lacks the panic with its method", l)
	}
}

// bystander checks that an unrelated connection is unaffected.
func bystander(t *testing.T, c *Client) {
	t.Helper()
	if out, err := c.Call(context.Background(), mEcho, []byte("bystander"), nil); err != nil || string(out) != "bystander" {
		t.Fatalf("bystander: %q %v", out, err)
	}
}

func TestBadPeers(t *testing.T) {
	s, addr, logs := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(1<<20)))
	other := dial(t, addr)
	bystander(t, other)

	t.Run("oversized frame", func(t *testing.T) {
		// Beyond what the server reads past (frame.DiscardLimit; a frame
		// within it fails alone, see oversize_test.go).
		rc := rawDial(t, addr)
		var h [5]byte
		binary.LittleEndian.PutUint32(h[:], frame.DiscardLimit+1)
		h[4] = wire.KindRequest
		rc.Write(h[:])
		rc.expectClosed()
		bystander(t, other)
		if !contains(logs.String(), "frame too large") {
			t.Fatalf("no logged reason: %q", logs.String())
		}
	})
	t.Run("length 0", func(t *testing.T) {
		rc := rawDial(t, addr)
		rc.Write([]byte{0, 0, 0, 0, 1})
		rc.expectClosed()
		bystander(t, other)
	})
	t.Run("garbage", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 20; i++ {
			rc := rawDial(t, addr)
			b := make([]byte, 1+rng.IntN(300))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			rc.Write(b)
			rc.Conn.(*net.TCPConn).CloseWrite()
			for { // whatever comes back, the server must end the connection
				if _, _, ok := rc.recv(); !ok {
					break
				}
			}
		}
		rc := rawDial(t, addr)
		rc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		rc.Conn.(*net.TCPConn).CloseWrite()
		rc.expectClosed()
		bystander(t, other)
	})
	t.Run("malformed envelope with promise", func(t *testing.T) {
		rc := rawDial(t, addr)
		env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 99, Payload: []byte("abc")})
		binary.LittleEndian.PutUint32(env[16+24:], 1000) // payload length past the end
		rc.send(wire.KindRequest, env)
		r := rc.recvResponse()
		if r.Status != StatusBadRequest || r.PromiseID != 99 {
			t.Fatalf("got %+v, want 400 for promise 99", r)
		}
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 100, Payload: []byte("ok")}))
		if r := rc.recvResponse(); r.Status != StatusOK || string(r.Body) != "ok" {
			t.Fatalf("after 400: %+v", r)
		}
	})
	t.Run("malformed envelope without promise", func(t *testing.T) {
		rc := rawDial(t, addr)
		rc.send(wire.KindRequest, []byte("ZAP\x00\x02\x00\x00\xc8 not much else"))
		rc.expectClosed()
		bystander(t, other)
	})
	t.Run("pipelining off", func(t *testing.T) {
		rc := rawDial(t, addr)
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Target: 1}))
		if r := rc.recvResponse(); r.Status != StatusBadRequest {
			t.Fatalf("target without pipelining: %+v", r)
		}
	})
	t.Run("unknown kinds ignored", func(t *testing.T) {
		rc := rawDial(t, addr)
		rc.send(9, []byte("whatever"))
		rc.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1}))
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 3, Payload: []byte("k")}))
		if r := rc.recvResponse(); r.Status != StatusOK || r.PromiseID != 3 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("half close", func(t *testing.T) {
		rc := rawDial(t, addr)
		for i := uint32(1); i <= 10; i++ {
			rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte{byte(i)}}))
		}
		rc.Conn.(*net.TCPConn).CloseWrite()
		seen := map[uint32]bool{}
		for i := 0; i < 10; i++ {
			r := rc.recvResponse()
			if r.Status != StatusOK || len(r.Body) != 1 || uint32(r.Body[0]) != r.PromiseID {
				t.Fatalf("%+v", r)
			}
			seen[r.PromiseID] = true
		}
		if len(seen) != 10 {
			t.Fatalf("answers %v", seen)
		}
		rc.expectClosed()
	})
	await(t, "s.Stats().Active == 1", func() bool { return s.Stats().Active == 1 })
	if s.Stats().Dropped == 0 {
		t.Fatal("no dropped connection counted")
	}
	bystander(t, other)
}

func TestIdleConnections(t *testing.T) {
	s, addr, _ := testServer(t)
	n := 1000
	if testing.Short() {
		n = 100
	}
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	c := dial(t, addr)
	await(t, "s.Stats().Active == int64(n+1)", func() bool { return s.Stats().Active == int64(n+1) })
	bystander(t, c)
	for _, nc := range conns {
		nc.Close()
	}
	await(t, "s.Stats().Active == 1", func() bool { return s.Stats().Active == 1 })
	bystander(t, c)
}

func TestMaxConnsAndIdleTimeout(t *testing.T) {
	s, addr, _ := testServer(t, WithMaxConns(2), WithIdleTimeout(50*time.Millisecond))
	a := rawDial(t, addr)
	b := rawDial(t, addr)
	await(t, "s.Stats().Active == 2", func() bool { return s.Stats().Active == 2 })
	rejected := rawDial(t, addr)
	rejected.expectClosed()
	if s.Stats().Rejected != 1 {
		t.Fatalf("%+v", s.Stats())
	}
	// Idle connections are told to go away by the idle timeout, then
	// closed (a raw peer does not acknowledge: after the grace).
	a.expectGoAwayThenClosed()
	b.expectGoAwayThenClosed()
	await(t, "s.Stats().Active == 0", func() bool { return s.Stats().Active == 0 })
	// A connection with a long call running is not idle. (A call that
	// reaches the server an idle timeout after the dial, on a loaded
	// machine, finds the connection idle already and is refused,
	// retryable: dial again, as TestIdleTimeoutGoAway does.)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		time.Sleep(200 * time.Millisecond)
		return append(resp, 's'), nil
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := dial(t, addr)
		out, err := c.Call(context.Background(), mSlow, nil, nil)
		if err == nil && string(out) == "s" {
			break
		}
		if !IsRetryable(err) {
			t.Fatalf("long call: %q %v", out, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 30 s: every long call found its connection idle already (%v)", err)
		}
		c.Close()
	}
}

// A client that sends but never reads: the server stops reading it after
// the in-flight limit plus what the socket buffers hold, instead of
// buffering without bound.
func TestSlowReaderBackpressure(t *testing.T) {
	s, addr, _ := testServer(t, WithMaxInFlight(16))
	rc := rawDial(t, addr)
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	payload := bytes.Repeat([]byte{1}, 64<<10)
	const total = 5000 // 320 MB of answers if nothing stopped it
	var sent atomic.Int64
	go func() {
		for i := uint32(1); i <= total; i++ {
			env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: payload})
			if _, err := rc.Write(frameBytes(wire.KindRequest, env)); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until the server has stopped reading: Calls stays the same
	// for a while.
	var last uint64
	for stable := 0; stable < 50; {
		time.Sleep(5 * time.Millisecond)
		if n := s.Stats().Calls; n == last && n > 0 {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	if last >= total || sent.Load() >= total {
		t.Fatalf("server read %d calls (client sent %d): no backpressure", last, sent.Load())
	}
	t.Logf("server stopped reading after %d calls (%d sent)", last, sent.Load())
	bystander(t, dial(t, addr))
	rc.Close()
	await(t, "s.Stats().Active == 1", func() bool { return s.Stats().Active == 1 })
}

func TestWriteTimeoutDropsSlowReader(t *testing.T) {
	s, addr, _ := testServer(t, WithWriteTimeout(50*time.Millisecond))
	rc := rawDial(t, addr)
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	payload := bytes.Repeat([]byte{1}, 64<<10)
	sendCallsForever(rc, payload)
	await(t, "s.Stats().Dropped == 1", func() bool { return s.Stats().Dropped == 1 })
	await(t, "s.Stats().Active == 0", func() bool { return s.Stats().Active == 0 })
}

func TestShutdownInFlight(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		time.Sleep(time.Millisecond)
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	var ok, goAway atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var started atomic.Int64
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := []byte{byte(g), byte(i)}
				out, err := c.Call(context.Background(), mSlow, req, nil)
				started.Add(1)
				switch {
				case err == nil && bytes.Equal(out, req):
					ok.Add(1)
				case IsRetryable(err):
					goAway.Add(1)
					return
				default:
					t.Errorf("goroutine %d call %d: %q %v (lost)", g, i, out, err)
					return
				}
			}
		}(g)
	}
	await(t, "started.Load() > 200", func() bool { return started.Load() > 200 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if !c.Draining() {
		t.Fatal("client did not see the go-away")
	}
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !IsRetryable(err) && !errors.Is(err, ErrClosed) {
		t.Fatalf("after shutdown: %v", err)
	}
	t.Logf("%d answered, %d refused with go-away", ok.Load(), goAway.Load())
	if ok.Load() == 0 || goAway.Load() == 0 {
		t.Fatal("want both answered calls and go-away refusals")
	}
}

// A canonical peer ignores the go-away frame: Shutdown closes its
// connection after the grace period once its calls are answered.
func TestShutdownCanonicalPeer(t *testing.T) {
	s, addr, _ := testServer(t, WithShutdownGrace(20*time.Millisecond))
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("a")}))
	if r := rc.recvResponse(); r.Status != StatusOK {
		t.Fatal(r)
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	kind, _, ok := rc.recv()
	if !ok || kind != wire.KindGoAway {
		t.Fatalf("want a go-away frame, got kind %d ok %v", kind, ok)
	}
	rc.expectClosed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Shutdown whose ctx ends closes what is left, and its error matches
// ctx's and says what it cut: it used to return ctx's error alone, so its
// caller could not tell a server that had one idle peer left, slow to
// acknowledge the go-away, from one that dropped calls.
func TestShutdownContextExpires(t *testing.T) {
	s, addr, _ := testServer(t, WithShutdownGrace(time.Hour))
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-ctx.Done()
		return resp, nil
	})
	c := dial(t, addr)
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), mSlow, nil, nil); errc <- err }()
	idle := rawDial(t, addr) // ignores the go-away: waits for the grace
	rawCall(t, idle, 1, nil)
	await(t, "the slow call to start", func() bool { return s.Stats().Calls == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want an error matching context.DeadlineExceeded", err)
	}
	if !contains(err.Error(), "2 connections closed undrained (1 with calls running") {
		t.Fatalf("Shutdown: %q does not say what it cut", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("call cut by forced close: %v", err)
	}
}

// Close during Shutdown cuts it short: Shutdown used to return nil once
// Close had closed the connections it was draining, as if they had
// drained; it now returns an error matching ErrServerClosed, and so does
// a Shutdown after Close.
func TestShutdownCutByClose(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-ctx.Done() // Close
		return resp, nil
	})
	c := dial(t, addr)
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), mSlow, nil, nil); errc <- err }()
	await(t, "the call to start", func() bool { return s.Stats().Calls == 1 })
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	await(t, "the client to see the go-away", c.Draining)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a call running", err)
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := receive(t, "Shutdown to return", shut); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Shutdown cut short by Close: %v, want an error matching ErrServerClosed", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("call cut by Close: %v", err)
	}
	if err := s.Shutdown(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Shutdown after Close: %v, want an error matching ErrServerClosed", err)
	}
}

func TestPipelining(t *testing.T) {
	s, addr, _ := testServer(t, WithPipelining(8))
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, "from-target"...), nil
	})
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(StatusForbidden, "no")
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 10}))
	// Depends on 10, which has not answered yet: waits.
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 11, Target: 10, Payload: []byte("ignored")}))
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mFail, PromiseID: 12}))
	r := rc.recvResponse()
	if r.PromiseID != 12 || r.Status != StatusForbidden {
		t.Fatalf("%+v", r)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 13, Target: 12}))
	if r := rc.recvResponse(); r.PromiseID != 13 || r.Status != StatusBadRequest {
		t.Fatalf("dependent on a failed call: %+v", r)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 14, Target: 999}))
	if r := rc.recvResponse(); r.PromiseID != 14 || r.Status != StatusBadRequest {
		t.Fatalf("dependent on an unknown call: %+v", r)
	}
	close(release)
	got := map[uint32]string{}
	for i := 0; i < 2; i++ {
		r := rc.recvResponse()
		if r.Status != StatusOK {
			t.Fatalf("%+v", r)
		}
		got[r.PromiseID] = string(r.Body)
	}
	if got[10] != "from-target" || got[11] != "from-target" {
		t.Fatalf("answers %q", got)
	}
	// After more than the table size of calls, promise 10 is forgotten.
	for i := uint32(20); i < 30; i++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i}))
		rc.recvResponse()
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 31, Target: 10}))
	if r := rc.recvResponse(); r.Status != StatusBadRequest {
		t.Fatalf("evicted target: %+v", r)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 32, Target: 29}))
	if r := rc.recvResponse(); r.Status != StatusOK || r.PromiseID != 32 {
		t.Fatalf("recent target: %+v", r)
	}
}

func TestRequestTooLargeKeepsConnection(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(1024)))
	if _, err := c.Call(context.Background(), mEcho, make([]byte, 2000), nil); err == nil {
		t.Fatal("no error for a request over the frame limit")
	}
	bystander(t, c)
}

func TestTooManyPending(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return resp, nil
	})
	c := dial(t, addr, WithMaxPending(2))
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { _, err := c.Call(context.Background(), mSlow, nil, nil); errs <- err }()
	}
	await(t, "s.Stats().Calls == 2", func() bool { return s.Stats().Calls == 2 })
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrTooManyPending) {
		t.Fatal(err)
	}
	close(release)
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
