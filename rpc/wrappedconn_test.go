package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// noWriteDeadlineConn is a net.Conn whose write deadlines do nothing (a
// wrapper that drops them): a past deadline never ends its writes.
type noWriteDeadlineConn struct{ net.Conn }

func (c noWriteDeadlineConn) SetWriteDeadline(time.Time) error { return nil }
func (c noWriteDeadlineConn) SetDeadline(t time.Time) error    { return c.Conn.SetReadDeadline(t) }

// stuckWriteConn is a net.Conn whose writes never return, not even when
// it is closed: they wait for release.
type stuckWriteConn struct {
	net.Conn
	release <-chan struct{}
}

func (c stuckWriteConn) Write([]byte) (int, error) {
	<-c.release
	return 0, net.ErrClosed
}

// lockedConn holds one lock over Write and the setting of write
// deadlines (a wrapper that breaks net.Conn's promise that a deadline may
// be set while a Write runs): a past deadline waits for the stuck write
// it was meant to end. Close does not take the lock.
type lockedConn struct {
	net.Conn
	mu *sync.Mutex
}

func (c lockedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c lockedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c lockedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// wrapListener is a listener whose accepted connections are wrapped.
type wrapListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrapListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(nc), nil
}

// A peer sends calls and never reads their answers, over a connection on
// which the watchdog's past write deadline cannot end the server's stuck
// write: its SetWriteDeadline does nothing, or waits for the Write, or
// its Write ignores both deadlines and Close. The server sets one past
// deadline, closes the connection a write timeout after it failed to
// act, and the watchdog stops scanning for it (it used to stay on the
// watchdog's list, scanned every millisecond, for as long as the write
// stayed stuck: forever).
//
// On a loaded machine the connection may drop off the watchdog's list
// between two calls, and the write that gets stuck may begin then: it
// sets a deadline of its own, which these transports ignore (or, the one
// whose deadline waits for the Write, honor: it was set before), and no
// scan watches it. Such an attempt proves nothing, and another is made.
func TestWriteTimeoutWhenDeadlineDoesNotEndWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(nc net.Conn, release <-chan struct{}) net.Conn
	}{
		{"deadline-ignored", func(nc net.Conn, _ <-chan struct{}) net.Conn { return noWriteDeadlineConn{nc} }},
		{"deadline-waits-for-write", func(nc net.Conn, _ <-chan struct{}) net.Conn { return lockedConn{nc, new(sync.Mutex)} }},
		{"close-ignored", func(nc net.Conn, release <-chan struct{}) net.Conn { return stuckWriteConn{nc, release} }},
		{"close-waits-for-write", func(nc net.Conn, release <-chan struct{}) net.Conn {
			return closeWaitsConn(nc, release)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			untilReached(t, "the stuck write was not the one watched write the scans gave up on (it began off the watchdog's list, or another write stalled first)", func(t *testing.T) bool { return writeStuckPastDeadline(t, tc.wrap) })
		})
	}
}

// writeStuckPastDeadline is one attempt of
// TestWriteTimeoutWhenDeadlineDoesNotEndWrite over the connections wrap
// makes; false when the stuck write began off the watchdog's list, or
// when another write of the connection stalled for the write timeout,
// was given a past deadline, and went on.
func writeStuckPastDeadline(t *testing.T, wrap func(nc net.Conn, release <-chan struct{}) net.Conn) bool {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 50 * time.Millisecond
	release := make(chan struct{})
	s, _ := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return wrap(nc, release) }},
		WithWriteTimeout(timeout))
	t.Cleanup(func() { close(release) }) // before the server closes
	// A stream whose handler waits for a message that never comes.
	const sWait = 50
	recvErr := make(chan error, 1)
	s.HandleStream(sWait, func(ctx context.Context, init []byte, st *Stream) error {
		_, err := st.Recv(nil)
		recvErr <- err
		return err
	})
	rc := rawDial(t, l.Addr().String())
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sWait, PromiseID: 1}))
	await(t, "the stream's handler to start", func() bool { return s.Stats().Streams.Active == 1 })
	sc := serverConnOf(t, s)
	sendCallsForever(rc, bytes.Repeat([]byte{1}, 1000))
	// A write that began off the list is not watched (wsince stays 0):
	// here nothing ends it (but on the transport whose deadline waits for
	// the Write: that write's own deadline, set before it, does, and the
	// drop tells below). The writer role held with no watched write under
	// way, look after look for four write timeouts, is such a write stuck.
	var unwatched time.Time  // since when the looks saw one, zero none
	slow := map[int64]bool{} // the watched writes seen under way for half the write timeout (their wsince)
	dropped := false
	await(t, "the server to drop the connection its write is stuck on", func() bool {
		if s.Stats().Dropped == 1 {
			dropped = true
			return true
		}
		if ws := sc.out.wsince.Load(); ws != 0 && monoNow()-ws >= int64(timeout/2) {
			slow[ws] = true
		}
		sc.out.mu.Lock()
		writing := sc.out.flushing
		sc.out.mu.Unlock()
		if !writing || sc.out.wsince.Load() != 0 {
			unwatched = time.Time{}
			return false
		}
		if unwatched.IsZero() {
			unwatched = time.Now()
		}
		return time.Since(unwatched) >= 4*timeout
	})
	if !dropped {
		t.Logf("a write that began off the watchdog's list is stuck: no scan watches it")
		rc.Close()
		return false
	}
	await(t, "the watchdog to park", func() bool { return s.wdParked.Load() })
	n := sc.writePokes.Load()
	if n == 0 {
		// No scan ended a write: the writer's own write failed, and it
		// took the outbox's lock after that, before the close.
		sc.out.mu.Lock()
		wdl := sc.out.wdl
		sc.out.mu.Unlock()
		if !wdl.IsZero() {
			// Only a write that begins off the list sets one: the
			// deadline that waits for the Write, set before it, ended it.
			t.Logf("the stuck write began off the watchdog's list: its own deadline ended it")
			return false
		}
	}
	if n > 1 && len(slow) > 1 {
		// One past deadline per stall: an earlier write stalled for the
		// write timeout and went on (the peer's socket took a few more
		// bytes) after its own.
		t.Logf("%d past deadlines set, for %d writes that stalled", n, len(slow))
		return false
	}
	if n != 1 {
		t.Errorf("%d past deadlines set for the one stuck write, want 1", n)
	}
	// The stream's handler learns of the close, even when the
	// socket's Close waits for the stuck write.
	if err := receive(t, "the stream's Recv to fail", recvErr); !errors.Is(err, ErrClosed) {
		t.Errorf("Recv on the dropped connection: %v, want ErrClosed", err)
	}
	return true
}

// Serve takes a listener whose dynamic type is not comparable (a struct
// value with a func field, as wrapListener is): it used to panic, keeping
// its listeners in a map keyed by the interface value.
func TestServeListenerOfUncomparableType(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return nc }}) // Serve's error is checked at the end
	c := dial(t, l.Addr().String())
	if out, err := c.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		t.Fatalf("call: %q, %v", out, err)
	}
}

// A client whose connection ignores write deadlines, or sets them only
// between writes, to a server that never reads: the beat's past deadline
// does not end the stuck write, so a write timeout later the beat closes
// the connection and the calls fail with ErrClosed, saying why. (They
// used to wait for the answer timeout, or for ever while the server kept
// sending.)
//
// When the socket's Close itself waits for the stuck write, the calls
// still fail, except the one whose goroutine is the one stuck in the
// Write (it returns when the Write does), and a new call fails at once.
// (The close used to come first, under the client's mutex: every call
// waited for it.)
func TestClientWriteTimeoutWhenDeadlineDoesNotEndWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(nc net.Conn, release <-chan struct{}) net.Conn
		// inWrite: calls whose goroutine is stuck in the Write.
		inWrite int
	}{
		{"deadline-ignored", func(nc net.Conn, _ <-chan struct{}) net.Conn { return noWriteDeadlineConn{nc} }, 0},
		{"deadline-waits-for-write", func(nc net.Conn, _ <-chan struct{}) net.Conn { return lockedConn{nc, new(sync.Mutex)} }, 0},
		{"close-waits-for-write", func(nc net.Conn, release <-chan struct{}) net.Conn {
			return closeWaitsConn(nc, release)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := deafListener(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			c := NewClient(tc.wrap(nc, release), WithWriteTimeout(50*time.Millisecond), WithAnswerTimeout(time.Hour))
			defer func() {
				close(release)
				c.Close()
			}()
			req := bytes.Repeat([]byte{1}, 1<<20)
			errs := startCalls(c, req, 8)
			for range 8 - tc.inWrite {
				err := receive(t, "the calls to fail", errs)
				if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "did not end the write") {
					t.Errorf("call: %v, want ErrClosed for the write deadline that did not end the write", err)
				}
			}
			if !c.Closed() {
				t.Fatal("client not Closed")
			}
			// A call made now fails at once, whatever the socket's Close
			// is doing.
			errs = startCalls(c, req, 1)
			if err := receive(t, "a call on the closed client to fail", errs); !errors.Is(err, ErrClosed) {
				t.Errorf("call on the closed client: %v, want ErrClosed", err)
			}
		})
	}
}

// noWriteDeadlineUnwrap is noWriteDeadlineConn that unwraps with
// NetConn to the socket it wraps: resumableConn takes it for that socket,
// so a call's ctx bounds its writes with deadlines, which it drops.
// writes counts the Writes begun.
type noWriteDeadlineUnwrap struct {
	noWriteDeadlineConn
	writes *atomic.Int32
}

func (c noWriteDeadlineUnwrap) NetConn() net.Conn { return c.Conn }

func (c noWriteDeadlineUnwrap) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A call whose ctx can end writes under deadlines of its own (its ctx's,
// the write timeout's) on a connection taken for resumable; over one
// that drops them, to a server that never reads, the write never
// returned: the call stayed blocked past the write timeout (and past its
// ctx's end), for ever. The beat sees such writes too: a write timeout
// after its past deadline did nothing, it closes the connection, and
// the call fails with ErrClosed saying why.
func TestClientCtxWriteWhenDeadlineDoesNotEndWrite(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		name := "deadline"
		if cancelled {
			name = "canceled"
		}
		t.Run(name, func(t *testing.T) {
			addr := deafListener(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			wc := noWriteDeadlineUnwrap{noWriteDeadlineConn{nc}, new(atomic.Int32)}
			if !resumableConn(wc) {
				t.Fatal("the wrapper is not taken for the socket it unwraps to")
			}
			c := NewClient(wc, WithWriteTimeout(50*time.Millisecond), WithAnswerTimeout(time.Hour))
			defer c.Close()
			// A deadline far beyond the write timeout; or none, and
			// canceled once the write has begun (its deadline would
			// make it a poll every cancelPoll).
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			if cancelled {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			errs := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mEcho, bytes.Repeat([]byte{1}, 8<<20), nil)
				errs <- err
			}()
			if cancelled {
				await(t, "the call's write to begin", func() bool { return wc.writes.Load() != 0 })
				cancel()
			}
			err = receive(t, "the call whose write ignores its deadlines to return", errs)
			if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "did not end the write") {
				t.Errorf("call: %v, want ErrClosed for the write deadline that did not end the write", err)
			}
			if !c.Closed() {
				t.Error("client not Closed")
			}
		})
	}
}

// The beat gives up on a write it interrupted once the write is still
// under way a write timeout after the kick: it reports so once. (Beats
// by hand, with made-up times.)
func TestWatchWriteReportsIgnoredKick(t *testing.T) {
	const timeout = time.Hour
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	o := &outbox{}
	o.setup(noWriteDeadlineConn{a}, timeout, 1<<20)
	o.ww = &writeWatch{}
	errc := startWrite(t, o, []byte("never read"))
	for _, now := range []int64{1000, 1000 + int64(timeout)} {
		if o.watchWrite(now) {
			t.Fatalf("watchWrite(%d) gave up before the kick", now)
		}
	}
	await(t, "the kick to land", func() bool { return o.ww.state.Load()&writeKicked != 0 })
	kicked := 2000 + int64(timeout)
	for _, now := range []int64{kicked, kicked + int64(timeout) - 1} {
		if o.watchWrite(now) {
			t.Fatalf("watchWrite gave up %d ns after the kick was seen", now-kicked)
		}
	}
	if !o.watchWrite(kicked + int64(timeout)) {
		t.Fatal("watchWrite did not give up a write timeout after the kick")
	}
	if o.watchWrite(kicked + 2*int64(timeout)) {
		t.Fatal("watchWrite gave up twice on one write")
	}
	b.Close() // the stuck write ends
	if err := <-errc; err == nil {
		t.Fatal("write to a closed pipe succeeded")
	}
}

// slowCloseConn is a net.Conn whose Close waits for release (as a TLS
// connection's does, up to 5 s, while its close-notify alert waits for a
// peer that does not read); closing counts the Closes begun.
type slowCloseConn struct {
	net.Conn
	closing *atomic.Int32
	release <-chan struct{}
}

func (c slowCloseConn) Close() error {
	c.closing.Add(1)
	<-c.release
	return c.Conn.Close()
}

// Close and Shutdown close a server's connections in parallel: with two
// connections whose Close blocks, both Closes begin before either
// returns. (They were closed one after the other: a server with many
// peers that stopped reading took 5 s per TLS connection to close.) The
// peers are raw connections that do not acknowledge the go-away, so that
// Shutdown closes them itself, after the grace.
func TestServerClosesConnsInParallel(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*Server) error
	}{
		{"Close", (*Server).Close},
		{"Shutdown", func(s *Server) error { return s.Shutdown(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var closing atomic.Int32
			release := make(chan struct{})
			released := sync.OnceFunc(func() { close(release) })
			s, _ := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn {
				return slowCloseConn{nc, &closing, release}
			}}, WithShutdownGrace(time.Millisecond))
			t.Cleanup(released) // before the server closes
			for range 2 {
				rawDial(t, l.Addr().String())
			}
			await(t, "the two connections", func() bool { return s.Stats().Active == 2 })
			stopped := make(chan error, 1)
			go func() { stopped <- tc.stop(s) }()
			await(t, "both connections' Close to begin", func() bool { return closing.Load() == 2 })
			select {
			case err := <-stopped:
				t.Fatalf("%s returned (%v) before the connections' Close did", tc.name, err)
			default:
			}
			released()
			if err := receive(t, tc.name+" to return", stopped); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if n := s.Stats().Active; n != 0 {
				t.Fatalf("%d connections still counted after %s", n, tc.name)
			}
		})
	}
}

// closeWaitsConn returns a connection whose writes never return and whose
// Close also waits for release (a wrapper holding one lock over Write and
// Close): closing it blocks for as long as its write is stuck.
func closeWaitsConn(nc net.Conn, release <-chan struct{}) net.Conn {
	return stuckSlowCloseConn{slowCloseConn{nc, new(atomic.Int32), release}}
}

// stuckSlowCloseConn is slowCloseConn whose writes wait for release.
type stuckSlowCloseConn struct{ slowCloseConn }

func (c stuckSlowCloseConn) Write([]byte) (int, error) {
	<-c.release
	return 0, net.ErrClosed
}

// failWriteConn is slowCloseConn whose writes fail at once (a transport
// that broke): the Close that follows the failed write waits for release.
type failWriteConn struct{ slowCloseConn }

var errTransportBroke = errors.New("transport broke")

func (c failWriteConn) Write([]byte) (int, error) { return 0, errTransportBroke }

// A write fails on a connection whose Close then blocks (as a TLS
// connection's does, up to 5 s, sending its close-notify alert to a peer
// that stopped reading): the server drops the connection, and the
// client's call fails, without waiting for the Close. (The writer closed
// the connection under the write queue's lock: the server's read loop,
// or the calling goroutine, waited for the Close, and a TLS peer that
// stopped reading was dropped 5 s after its write timeout.)
func TestWriteFailureDoesNotWaitForClose(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var closing atomic.Int32
		release := make(chan struct{})
		s, _ := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn {
			return failWriteConn{slowCloseConn{nc, &closing, release}}
		}})
		t.Cleanup(func() { close(release) }) // before the server closes
		rc := rawDial(t, l.Addr().String())
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("hi")}))
		await(t, "the server to drop the connection its write failed on", func() bool {
			return s.Stats().Dropped == 1
		})
		// The drop may be counted before the socket's Close begins: the
		// failed write's (outbox.broke) and the connection's close run
		// it in goroutines of their own.
		await(t, "the connection's Close to begin", func() bool { return closing.Load() > 0 })
	})
	t.Run("client", func(t *testing.T) {
		nc, err := net.Dial("tcp", deafListener(t))
		if err != nil {
			t.Fatal(err)
		}
		var closing atomic.Int32
		release := make(chan struct{})
		c := NewClient(failWriteConn{slowCloseConn{nc, &closing, release}})
		defer func() {
			close(release)
			c.Close()
		}()
		errs := startCalls(c, []byte("hi"), 1)
		if err := receive(t, "the call to fail", errs); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), errTransportBroke.Error()) {
			t.Fatalf("call over a broken transport: %v, want ErrClosed for the failed write", err)
		}
		if !c.Closed() {
			t.Fatal("client not Closed")
		}
	})
}

// wrapDialer is a Dialer whose connections are wrapped.
type wrapDialer struct {
	net.Dialer
	wrap func(net.Conn) net.Conn
}

func (d *wrapDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return d.wrap(nc), nil
}

// WithDialer takes any Dialer: Dial's calls go over the connection it
// returns (here one that counts the bytes written); a nil *net.Dialer is
// the default one.
func TestDialWithDialer(t *testing.T) {
	_, addr, _ := testServer(t)
	var written atomic.Int64
	d := &wrapDialer{wrap: func(nc net.Conn) net.Conn { return countingConn{nc, &written} }}
	c := dial(t, addr, WithDialer(d))
	if out, err := c.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		t.Fatalf("call: %q, %v", out, err)
	}
	if written.Load() == 0 {
		t.Fatal("the call did not go through the dialer's connection")
	}
	c2 := dial(t, addr, WithDialer((*net.Dialer)(nil)))
	if _, err := c2.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil {
		t.Fatalf("call with a nil *net.Dialer: %v", err)
	}
}

// countingConn counts the bytes written to it.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// noAddrConn is a connection without a remote address.
type noAddrConn struct{ net.Conn }

func (noAddrConn) RemoteAddr() net.Addr { return nil }

// A connection whose RemoteAddr is nil (a wrapper's) is logged with an
// empty address: the logs of a handler's panic and error, and of the
// connection's close, called String on it and panicked, which crashed the
// process (the panic log runs in the read loop's recover).
func TestNilRemoteAddrLogs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, logs := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return noAddrConn{nc} }})
	s.Handle(mPanic, func(context.Context, []byte, []byte) ([]byte, error) { panic("boom") })
	s.Handle(mSlow, func(context.Context, []byte, []byte) ([]byte, error) { return nil, errors.New("plain") })
	rc := rawDial(t, l.Addr().String())
	for pid, m := range []uint32{mPanic, mSlow} {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: m, PromiseID: uint32(pid + 1)}))
		if r := rc.recvResponse(); r.Status != StatusInternal {
			t.Fatalf("method %d: %+v, want 500", m, r)
		}
	}
	rc.Write([]byte{0, 0, 0, 0, wire.KindRequest}) // an empty frame: dropped, logged
	rc.expectClosed()
	await(t, "the close to be logged", func() bool { return contains(logs.String(), "closing connection") })
	if !contains(logs.String(), "handler panic") || !contains(logs.String(), "handler error") {
		t.Fatalf("log:\n%s", logs)
	}
}
