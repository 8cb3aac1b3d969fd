package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The reaper of idle workers keeps no timer while fewer than two workers
// are idle (a pending timer costs every scheduling on its P a clock read):
// it parks, a burst that leaves workers idle wakes it, it ends them down to
// one and parks again, and the next burst wakes it again. The reaper's
// second is 20 ms here (reapEveryTest); its wake-ups are counted
// (reapWakes), not seen as the flag unset, which the short period could
// hide between two looks.
func TestReaperParksAndWakes(t *testing.T) {
	reapEveryTest.Store(int64(20 * time.Millisecond))
	defer reapEveryTest.Store(0)
	s, addr, _ := testServer(t, WithPipelining(0)) // every call on a worker
	c := dial(t, addr)
	await(t, "the reaper parked before any call", func() bool { return s.reapParked.Load() })
	for round := 0; round < 2; round++ {
		wakes := s.reapWakes.Load()
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			started <- struct{}{}
			<-release
			return append(resp, req...), nil
		})
		errs := make(chan error, 2)
		for i := 0; i < 2; i++ {
			go func() {
				_, err := c.Call(context.Background(), mSlow, []byte("x"), nil)
				errs <- err
			}()
		}
		for i := 0; i < 2; i++ {
			<-started // two workers busy at once
		}
		close(release)
		for i := 0; i < 2; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		await(t, "the reaper woken by two idle workers", func() bool { return s.reapWakes.Load() > wakes })
		await(t, "the reaper ending idle workers down to one, then parking", func() bool {
			return s.idleWork.Load() <= 1 && s.reapParked.Load()
		})
	}
}

// The watchdog's timer fires, not before its delay, again after each
// reset, both the OS one (Linux: a timerfd read through the poller, so
// that no runtime timer is pending) and the time.Timer one.
func TestWDTimerFires(t *testing.T) {
	defer wdGoTimerOnly.Store(false)
	for _, goOnly := range []bool{false, true} {
		wdGoTimerOnly.Store(goOnly)
		tm := newWDTimer()
		_, isGo := tm.(*goTimer)
		isFD := !isGo
		if want := !goOnly && runtime.GOOS == "linux"; isFD != want {
			t.Fatalf("go timer only %v: timerfd %v, want %v", goOnly, isFD, want)
		}
		for i := 0; i < 3; i++ {
			const d = 2 * time.Millisecond
			t0 := time.Now()
			tm.reset(d)
			fired := make(chan struct{})
			go func() { tm.wait(); close(fired) }()
			select {
			case <-fired:
			case <-time.After(30 * time.Second):
				t.Fatalf("go timer only %v: the timer did not fire in 30 s", goOnly)
			}
			if el := time.Since(t0); el < d {
				t.Fatalf("go timer only %v: fired after %v, before its delay %v", goOnly, el, d)
			}
		}
		tm.close()
	}
}

// A handler stuck on the only connection is taken over by the watchdog's
// own timer, the time.Timer one too (the OS one is tested by the other
// watchdog tests on Linux).
func TestWatchdogGoTimer(t *testing.T) {
	wdGoTimerOnly.Store(true)
	defer wdGoTimerOnly.Store(false)
	s, addr, _ := testServer(t, WithReadTimeout(0), WithIdleTimeout(0))
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	go c.Call(context.Background(), mSlow, []byte("stuck"), nil)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("behind"), nil); err != nil || string(out) != "behind" {
		t.Fatalf("the call behind a stuck handler (not taken over in 30 s?): %q %v", out, err)
	}
}

// serverConnOf returns the server's only connection, once it has one.
func serverConnOf(t *testing.T, s *Server) *serverConn {
	t.Helper()
	var c *serverConn
	await(t, "the server's connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for sc := range s.conns {
			c = sc
		}
		return c != nil
	})
	return c
}

// While calls flow, a connection keeps no read or write deadline on its
// socket (each is a runtime timer, and a pending one costs every
// scheduling on its P a clock read): the watchdog's scans bound its waits
// and writes. Once it is quiet and off the watchdog's list, its wait has
// its read deadline again (the idle limit here).
//
// A busy connection may still drop off the list between two calls (a
// loaded machine: three scans saw no call running), and a write that
// begins then sets a deadline, rightly: an attempt whose last write began
// off the list proves nothing about the writes, and another is made.
func TestBusyConnArmsNoDeadline(t *testing.T) {
	untilReached(t, "a write began off the watchdog's list after the connection was seen on it", busyConnArmsNoDeadline)
}

// busyConnArmsNoDeadline is one attempt of TestBusyConnArmsNoDeadline;
// false when a write began off the watchdog's list after the connection
// was seen on it (the last one may have).
func busyConnArmsNoDeadline(t *testing.T) bool {
	s, addr, _ := testServer(t, WithIdleTimeout(time.Hour))
	stop := keepCalling(dial(t, addr), 1, []byte("x"))
	sc := serverConnOf(t, s)
	var off int64 // the writes begun off the list, read before wdListed
	noDeadlines := func() bool {
		off = sc.out.offList.Load()
		sc.rdMu.Lock()
		defer sc.rdMu.Unlock()
		return sc.wdListed.Load() && sc.rdLimit.Load() != 0 && sc.armed == 0 && !sc.rdPast
	}
	await(t, "a wait of the busy connection with no read deadline", noDeadlines)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The answers' writes set no write deadline either (writer role: read
	// once the calls are over and the writes done). The last write began
	// on the list when none began off it since the connection was seen
	// listed: if any began since, so did the last; if none did, the last
	// began before and was listed, since a connection joins the list only
	// with an inline call, whose answer is written later.
	listed := sc.out.offList.Load() == off
	if listed && !sc.out.wdl.IsZero() {
		t.Fatalf("the busy connection's writes set a write deadline: %v", sc.out.wdl)
	}
	// Its read deadline is the one its wait wants, or, when the
	// connection left the list before that wait began, the one set for an
	// earlier wait, which fires a little earlier and is kept (armLocked:
	// deadlineFired sets the next).
	await(t, "the quiet connection off the list with its idle deadline set", func() bool {
		sc.rdMu.Lock()
		defer sc.rdMu.Unlock()
		return !sc.wdListed.Load() && sc.armed != 0 && sc.armed <= sc.rdLimit.Load()
	})
	return listed
}

// A listed connection's wait that is due is ended by a scan (pokeRead):
// a read deadline in the past; one not due is left alone, and the scan that
// takes the connection off the list sets the read deadline its wait wants.
func TestPokeReadAndUnlist(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &serverConn{nc: a}
	read := func() chan error {
		errc := make(chan error, 1)
		go func() {
			var buf [1]byte
			_, err := a.Read(buf[:])
			errc <- err
		}()
		return errc
	}
	c.wdListed.Store(true)
	now := monoNow()
	c.deadline(now + int64(time.Hour))
	if c.armed != 0 || c.rdLimit.Load() != now+int64(time.Hour) {
		t.Fatalf("listed: armed %d, limit %d; want no deadline and the limit published", c.armed, c.rdLimit.Load())
	}
	errc := read()
	c.pokeRead(now) // not due
	c.deadline(now + 1)
	c.pokeRead(now + 1) // due
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("poked wait: %v, want a deadline error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the poked wait did not end in 30 s")
	}
	if c.readPokes.Load() != 1 {
		t.Fatalf("%d pokes, want 1", c.readPokes.Load())
	}
	// The next wait clears the past deadline.
	c.deadline(now + int64(time.Hour))
	if c.rdPast || c.armed != 0 {
		t.Fatal("the poked deadline was not cleared for the next wait")
	}
	errc = read()
	b.Write([]byte{1})
	if err := <-errc; err != nil {
		t.Fatalf("a wait after the poke: %v", err)
	}
	// Off the list: the wait's own deadline.
	c.wdListed.Store(false)
	c.unlistRead()
	if c.armed != now+int64(time.Hour) {
		t.Fatalf("unlisted: armed %d, want %d", c.armed, now+int64(time.Hour))
	}
	c.deadline(now + 2) // due already
	errc = read()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("unlisted wait: %v, want a deadline error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the unlisted wait's deadline did not fire in 30 s")
	}
}

// A frame that begins and stalls after calls on the connection (listed,
// so its wait has no read deadline until it leaves the list) is still
// dropped by the read timeout.
func TestStalledFrameAfterCalls(t *testing.T) {
	s, addr, _ := testServer(t, WithReadTimeout(50*time.Millisecond))
	rc := rawDial(t, addr)
	for i := uint32(1); i <= 3; i++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte("x")}))
		rc.recvResponse()
	}
	env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 9, Payload: []byte("stalled")})
	if _, err := rc.Write(frameBytes(wire.KindRequest, env)[:7]); err != nil {
		t.Fatal(err)
	}
	rc.expectClosed()
	await(t, "the drop counted", func() bool { return s.Stats().Dropped == 1 })
}

// A peer that sends calls and never reads is dropped by the write timeout
// although the server's writes set no write deadline: the watchdog's scans
// end the write that takes no byte (pokeWrite). (A write that a scan's
// poke found taking bytes may then set a deadline at its bound in all,
// when that comes before the next poke; never one for the write timeout.)
//
// When the write that gets stuck began while the connection was off the
// watchdog's list (it dropped off between two calls, on a loaded
// machine), its own write deadline ends it, rightly, and no scan does:
// another attempt is made.
func TestWriteTimeoutByScans(t *testing.T) {
	untilReached(t, "the stuck write began off the watchdog's list (its own deadline ended it)", writeTimeoutByScans)
}

// writeTimeoutByScans is one attempt of TestWriteTimeoutByScans; false
// when the stuck write began off the watchdog's list.
func writeTimeoutByScans(t *testing.T) bool {
	s, addr, _ := testServer(t, WithWriteTimeout(100*time.Millisecond))
	rc := rawDial(t, addr)
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	sc := serverConnOf(t, s)
	payload := bytes.Repeat([]byte{1}, 1000) // answers written from the read loop's buffer
	sendCallsForever(rc, payload)
	await(t, "the non-reading peer dropped", func() bool { return s.Stats().Dropped == 1 })
	if sc.writePokes.Load() == 0 {
		if !sc.out.wdl.IsZero() {
			return false
		}
		t.Fatal("dropped, but no scan ended a write, and no write deadline was set")
	}
	if !sc.out.wdl.IsZero() && !sc.out.wdlCtx {
		// The one a write sets after a scan's poke, at its bound in
		// all (writeWatched), is exact (wdlCtx).
		t.Fatalf("a write deadline for the write timeout was set: %v", sc.out.wdl)
	}
	return true
}

// Over TLS too, a busy connection's answers are written without a write
// deadline (the scans bound the writes): crypto/tls cannot go on with a
// write a deadline cut, but neither can it with one the write timeout
// old, which is all the scans cut. (An attempt whose last write began off
// the watchdog's list proves nothing: see TestBusyConnArmsNoDeadline.)
func TestBusyTLSConnArmsNoWriteDeadline(t *testing.T) {
	untilReached(t, "a write began off the watchdog's list after the connection was seen on it", busyTLSConnArmsNoWriteDeadline)
}

// busyTLSConnArmsNoWriteDeadline is one attempt of
// TestBusyTLSConnArmsNoWriteDeadline; false when a write began off the
// watchdog's list after the connection was last seen on it.
func busyTLSConnArmsNoWriteDeadline(t *testing.T) bool {
	tlsServer, tlsClient := tlsOptions(t)
	s, addr, _ := testServer(t, tlsServer)
	c := dial(t, addr, tlsClient)
	stop := keepCalling(c, 2, []byte("x"))
	sc := serverConnOf(t, s)
	await(t, "the busy connection on the watchdog's list", sc.wdListed.Load)
	calls := s.Stats().Calls
	await(t, "100 more calls", func() bool { return s.Stats().Calls >= calls+100 })
	var off int64 // the writes begun off the list, read before wdListed
	await(t, "the busy connection on the watchdog's list again", func() bool {
		off = sc.out.offList.Load()
		return sc.wdListed.Load()
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The last write began on the list (see busyConnArmsNoDeadline).
	listed := sc.out.offList.Load() == off
	if listed && !sc.out.wdl.IsZero() {
		t.Fatalf("the busy TLS connection's writes set a write deadline: %v", sc.out.wdl)
	}
	return listed
}

// A peer that completes the TLS handshake, sends calls and never reads
// is dropped by the scans' write timeout, no write deadline having been
// set by the writes themselves. (Unless the stuck write began off the
// watchdog's list: see TestWriteTimeoutByScans.)
func TestWriteTimeoutByScansTLS(t *testing.T) {
	untilReached(t, "the stuck write began off the watchdog's list (its own deadline ended it)", writeTimeoutByScansTLS)
}

// writeTimeoutByScansTLS is one attempt of TestWriteTimeoutByScansTLS;
// false when the stuck write began off the watchdog's list.
func writeTimeoutByScansTLS(t *testing.T) bool {
	cert, roots := selfSigned(t)
	s, addr, _ := testServer(t, WithWriteTimeout(100*time.Millisecond),
		WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The peer's receive buffer is left as it is: shrunk (as
	// TestWriteTimeoutByScans does), the answers it does not read
	// overfilled it on loopback, so that it dropped the server's segments
	// and with them the window the server opened by reading; its calls
	// then stalled halfway through a record for seconds (retransmissions
	// backing off), the server waited in a read and no write of its was
	// stuck, and the read timeout dropped the connection.
	tc := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	sc := serverConnOf(t, s)
	payload := bytes.Repeat([]byte{1}, 1000)
	sendCallsForever(tc, payload)
	await(t, "the non-reading TLS peer dropped", func() bool { return s.Stats().Dropped == 1 })
	if sc.writePokes.Load() == 0 {
		if !sc.out.wdl.IsZero() {
			return false
		}
		t.Fatal("dropped, but no scan ended a write, and no write deadline was set")
	}
	return true
}

// Handlers run inline that panic, among calls that do not, from many
// callers at once (so that panics fall inside read batches, with answers
// of earlier calls of the batch not yet written): each panicking call is
// answered 500, every other call gets its answer, and the connection goes
// on. The read loop recovers them with one deferred recover for its life
// (readGuarded), not one per call.
func TestInlinePanicsInBatches(t *testing.T) {
	s, addr, logs := testServer(t)
	s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		panic("boom")
	})
	c := dial(t, addr)
	const callers, calls = 32, 50
	errs := make(chan error, callers)
	for g := 0; g < callers; g++ {
		go func() {
			for i := 0; i < calls; i++ {
				if (g+i)%3 == 0 {
					_, err := c.Call(context.Background(), mPanic, []byte("x"), nil)
					var se *StatusError
					if !errors.As(err, &se) || se.Code != StatusInternal {
						errs <- fmt.Errorf("caller %d, call %d: panic answered %v, want 500", g, i, err)
						return
					}
					continue
				}
				want := []byte{byte(g), byte(i)}
				if out, err := c.Call(context.Background(), mEcho, want, nil); err != nil || !bytes.Equal(out, want) {
					errs <- fmt.Errorf("caller %d, call %d: %x %v", g, i, out, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < callers; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Internal == 0 || st.Dropped != 0 {
		t.Fatalf("stats %+v: want the panics answered 500 and no connection dropped", st)
	}
	if !contains(logs.String(), "handler panic") {
		t.Fatal("the panics were not logged")
	}
}

// A handler that panics after the watchdog took its read loop over is
// answered 500 like a worker's call, and its goroutine (no longer the
// read loop's) leaves the read loop; the calls behind it were answered
// meanwhile and later ones are too.
func TestInlinePanicAfterTakeover(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		panic("late boom")
	})
	c := dial(t, addr)
	slow := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mPanic, []byte("x"), nil)
		slow <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("behind"), nil); err != nil || string(out) != "behind" {
		t.Fatalf("the call behind a stuck handler (not taken over in 30 s?): %q %v", out, err)
	}
	close(release)
	var se *StatusError
	if err := <-slow; !errors.As(err, &se) || se.Code != StatusInternal {
		t.Fatalf("the handler that panicked after the take-over: %v, want 500", err)
	}
	for i := 0; i < 10; i++ {
		if out, err := c.Call(ctx, mEcho, []byte{byte(i)}, nil); err != nil || len(out) != 1 || out[0] != byte(i) {
			t.Fatalf("call %d after: %x %v", i, out, err)
		}
	}
	if st := s.Stats(); st.Dropped != 0 {
		t.Fatalf("stats %+v: a connection was dropped", st)
	}
	// The call taken over ended its unit of inflight (a worker's call
	// does): the quiet connection counts none.
	sc := serverConnOf(t, s)
	await(t, "no call in flight on the quiet connection", func() bool { return sc.inflight.Load() == 0 })
}

// A handler registered while a connection is open and busy is found by
// every call sent after Handle returned (the read loop keeps a copy of the
// handler table, taken again after each read from the socket), and one
// removed is not found any more.
func TestHandleWhileBusy(t *testing.T) {
	s, addr, _ := testServer(t)
	c := dial(t, addr)
	stop := keepCalling(c, 4, []byte("busy"))
	for m := uint32(100); m < 150; m++ {
		tag := byte(m)
		s.Handle(m, func(ctx context.Context, req, resp []byte) ([]byte, error) { return append(resp, tag), nil })
		if out, err := c.Call(context.Background(), m, nil, nil); err != nil || len(out) != 1 || out[0] != tag {
			t.Fatalf("method %d, called right after Handle returned: %x %v", m, out, err)
		}
		s.Handle(m, nil)
		var se *StatusError
		if _, err := c.Call(context.Background(), m, nil, nil); !errors.As(err, &se) || se.Code != StatusNotFound {
			t.Fatalf("method %d, called right after it was removed: %v, want 404", m, err)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
