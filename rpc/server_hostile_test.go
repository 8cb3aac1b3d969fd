package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A handler's ctx looked at after the call ended and its job went back
// to the server-wide pool (as the goroutine context.WithCancel starts for
// a context.WithValue of it does, whenever it gets to run) is a done ctx:
// no panic, and nothing is armed for the job's next call.
func TestHandlerCtxAfterCallEnded(t *testing.T) {
	c := &serverConn{s: NewServer(), ctx: context.Background()}
	j := c.newJob()
	c.nJobs++
	j.dl.Store(monoNow() + int64(time.Hour)) // the call had a deadline...
	j.dl.Store(0)                            // ...and ended (endDeadline)
	c.putJob(j)
	select {
	case <-j.Done():
	default:
		t.Fatal("Done of a call that ended is not closed")
	}
	if j.Err() == nil {
		t.Fatal("Err of a call that ended is nil")
	}
	if _, ok := j.Deadline(); ok {
		t.Fatal("a pooled job has a deadline")
	}
	if v := j.Value("key"); v != nil {
		t.Fatalf("Value: %v", v)
	}
	ran := make(chan struct{})
	context.AfterFunc(j, func() { close(ran) })
	receive(t, "an AfterFunc of the ended call's ctx to run", ran)
	// A late Done that read the old call's deadline arms nothing.
	if ch := j.armDone(); ch != closedDone || j.armed {
		t.Fatal("a late Done armed the pooled job")
	}
}

type lateKey struct{}

// The same end to end, without help from the test: a handler that adds a
// value to its ctx and derives a timeout from it, for calls that carry a
// deadline. With one P the context package's goroutine runs after the
// read loop gave the job back to the pool. It once crashed the process
// (a nil connection in a goroutine nobody recovers), so it runs in a
// child process.
func TestHandlerCtxDerivedLate(t *testing.T) {
	if os.Getenv("RPC_LATE_CTX_CHILD") == "1" {
		runtime.GOMAXPROCS(1)
		s, addr, _ := testServer(t)
		const mLate = 9
		s.Handle(mLate, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			ctx = context.WithValue(ctx, lateKey{}, "span")
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_ = ctx
			return append(resp, req...), nil
		})
		c := dial(t, addr)
		for range 200 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			_, err := c.Call(ctx, mLate, []byte("x"), nil)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandlerCtxDerivedLate$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RPC_LATE_CTX_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		if i := bytes.Index(out, []byte("panic:")); i >= 0 {
			out = out[i:min(len(out), i+1500)]
		}
		t.Fatalf("the server process failed (%v):\n%s", err, out)
	}
}

// slowReadDeadlineConn is a server connection whose SetReadDeadline, once
// engaged, waits for release (a wrapper that logs to a slow sink, or
// holds one lock over Read and SetReadDeadline).
type slowReadDeadlineConn struct {
	net.Conn
	engaged atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (c *slowReadDeadlineConn) SetReadDeadline(t time.Time) error {
	if c.engaged.Load() {
		c.once.Do(func() { close(c.entered) })
		<-c.release
	}
	return c.Conn.SetReadDeadline(t)
}

// A connection whose SetReadDeadline blocks does not stop the watchdog's
// scans, nor another connection's calls: the scan that takes it off the
// watchdog's list sets its read deadline from a goroutine of its own.
func TestSlowReadDeadlineConnDoesNotStallOthers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowReadDeadlineConn{entered: make(chan struct{}), release: make(chan struct{})}
	s, _ := testServerOn(t, &wrapFirst{Listener: l, wrap: func(nc net.Conn) net.Conn { slow.Conn = nc; return slow }})
	t.Cleanup(func() { close(slow.release) }) // before the server's Close
	const mEngage = 9
	s.Handle(mEngage, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		slow.engaged.Store(true)
		return resp, nil
	})
	a := dial(t, l.Addr().String())
	if _, err := a.Call(context.Background(), mEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	var sc *serverConn
	await(t, "the slow connection's serverConn", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			sc = c
		}
		return sc != nil
	})
	// The call, run inline, lists the connection. A read deadline is set
	// after it when the read loop's next wait begins while the connection
	// is listed (the wait clears the deadline armed before the call), or
	// when the scan that takes it off sets the one the wait wants. Neither
	// is sure: a deadline is set lazily, only when the one in force would
	// fire later than wanted (readtimeout.go), and a read loop that comes
	// to its wait after the scans took the connection off finds the
	// deadline armed before the call, which fires earlier, and leaves it,
	// as the unlisting did. No deadline is set then until that one fires:
	// the test calls again.
	for entered := false; !entered; {
		if _, err := a.Call(context.Background(), mEngage, nil, nil); err != nil {
			t.Fatal(err)
		}
		await(t, "a read deadline to be set on the slow connection, or the connection taken off the list without one", func() bool {
			select {
			case <-slow.entered:
				entered = true
				return true
			default:
			}
			// Off the list, and no read deadline being set for it
			// (rPoking is held while the unlisting sets one).
			return !sc.wdListed.Load() && !sc.rPoking.Load()
		})
	}
	await(t, "the scans to take the slow connection off their list", func() bool { return !sc.wdListed.Load() })
	b := dial(t, l.Addr().String())
	errs := make(chan error, 1)
	go func() {
		_, err := b.Call(context.Background(), mEcho, []byte("hi"), nil)
		errs <- err
	}()
	if err := receive(t, "a call on a healthy connection", errs); err != nil {
		t.Fatal(err)
	}
}

// Calls refused after the go-away do not restart the grace: a canonical
// peer, which ignores the go-away and polls more often than the grace,
// still has its connection closed and Shutdown returns.
func TestShutdownRefusalsDoNotRestartGrace(t *testing.T) {
	s, addr, _ := testServer(t, WithShutdownGrace(200*time.Millisecond))
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("a")}))
	if r := rc.recvResponse(); r.Status != StatusOK {
		t.Fatal(r)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // reads everything
		for {
			if _, _, ok := rc.recv(); !ok {
				return
			}
		}
	}()
	go func() { // a request every 20 ms
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := uint32(2); ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte("p")})
			if _, err := rc.Write(frameBytes(wire.KindRequest, env)); err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	if err := receive(t, "Shutdown to return", done); err != nil {
		t.Fatal(err)
	}
}

// Err reports the deadline only once Done is closed, as the context
// package promises: here the call's timer is an hour out when Err finds
// the deadline passed.
func TestHandlerCtxErrClosesDone(t *testing.T) {
	c := &serverConn{s: NewServer(), ctx: context.Background()}
	j := c.newJob()
	j.dl.Store(monoNow() + int64(time.Hour))
	done := j.Done() // arms the call's timer
	j.dl.Store(monoNow() - 1)
	if err := j.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err: %v", err)
	}
	select {
	case <-done:
	default:
		t.Fatal("Err reports the deadline while Done is open")
	}
	j.endDeadline()
}

// A TLS connection whose handshake has not finished when Shutdown begins
// ran no call: it is closed once the grace has passed, as a quiet
// connection is. Shutdown used to wait for its handshake to end (the read
// timeout), its go-away being written behind the handshake. One whose
// handshake finishes after the go-away still gets the go-away first, and
// its calls are refused as not run.
func TestShutdownDuringTLSHandshake(t *testing.T) {
	cert, roots := selfSigned(t)
	serverTLS := WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})
	for _, tc := range []struct {
		name      string
		grace     time.Duration
		handshake bool // the peer finishes its handshake after the go-away
	}{
		{"never finishes", DefaultShutdownGrace, false},
		{"finishes after the go-away", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The handshake may take an hour (WithReadTimeout bounds it).
			s, addr, _ := testServer(t, serverTLS, WithReadTimeout(time.Hour), WithShutdownGrace(tc.grace))
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			await(t, "the connection to be accepted", func() bool { return s.Stats().Active == 1 })
			done := make(chan error, 1)
			go func() { done <- s.Shutdown(context.Background()) }()
			if !tc.handshake {
				if err := receive(t, "Shutdown to return", done); err != nil {
					t.Fatal(err)
				}
				(&rawConn{t, nc}).expectClosed()
				return
			}
			await(t, "the go-away", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				for c := range s.conns {
					return c.goAwaySent.Load()
				}
				return false
			})
			tlc := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
			if err := tlc.Handshake(); err != nil {
				t.Fatal(err)
			}
			rc := &rawConn{t, tlc}
			if kind, _, ok := rc.recv(); !ok || kind != wire.KindGoAway {
				t.Fatalf("first frame: kind %d (ok %v), want the go-away", kind, ok)
			}
			rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("late")}))
			if r := rc.recvResponse(); r.Status != StatusUnavailable || !r.NotRun {
				t.Fatalf("call after the go-away: %+v, want 503 not run", r)
			}
			rc.send(wire.KindGoAway, nil) // acknowledged: closed at once
			rc.expectClosed()
			if err := receive(t, "Shutdown to return", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}
