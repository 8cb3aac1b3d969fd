package rpc

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Tests of WithMaxConnectionAge (readtimeout.go). The ages are short, and
// every wait is on a condition (await), never on the clock.

// The ages drawn stay within age ± 10 % and spread over that range, so
// that connections accepted together do not all go away together.
func TestMaxAgeJitterWithinBounds(t *testing.T) {
	for _, age := range []time.Duration{time.Minute, 30 * time.Millisecond, 1234567, maxLimit} {
		span := age / 10
		lo, hi := age-span, age+span
		if got := ageWithin(age, 0); got != lo {
			t.Errorf("ageWithin(%v, 0) = %v, want %v", age, got, lo)
		}
		if got := ageWithin(age, uint64(2*span)); got != hi {
			t.Errorf("ageWithin(%v, 2×span) = %v, want %v", age, got, hi)
		}
		if got := ageWithin(age, math.MaxUint64); got < lo || got > hi {
			t.Errorf("ageWithin(%v, MaxUint64) = %v, outside [%v, %v]", age, got, lo, hi)
		}
		const n = 10000
		least, most := hi, lo
		var sum float64
		for range n {
			d := connAge(age)
			if d < lo || d > hi {
				t.Fatalf("connAge(%v) = %v, outside [%v, %v]", age, d, lo, hi)
			}
			least, most = min(least, d), max(most, d)
			sum += float64(d)
		}
		// Uniform over the range: the chance that 10,000 draws miss its
		// lowest (or highest) 5 % is 0.95^10000, nil.
		if least > lo+span/10 || most < hi-span/10 {
			t.Errorf("connAge(%v): %d draws spread over [%v, %v] only, want most of [%v, %v]", age, n, least, most, lo, hi)
		}
		if mean := sum / n; math.Abs(mean-float64(age)) > float64(span)/10 {
			t.Errorf("connAge(%v): mean %v, want about the age", age, time.Duration(mean))
		}
	}
	// An age too short to have a tenth: no jitter, no panic.
	for _, age := range []time.Duration{1, 9} {
		if got := connAge(age); got != age {
			t.Errorf("connAge(%v) = %v", age, got)
		}
	}
}

// Zero and negative values turn the age limit (and the grace's limit)
// off; values beyond 36 years count as 36 years, as for every limit.
func TestMaxAgeOptionValues(t *testing.T) {
	for _, tc := range []struct {
		age, grace         time.Duration
		wantAge, wantGrace time.Duration
	}{
		{0, 0, 0, 0},
		{-time.Second, -time.Second, 0, 0},
		{math.MinInt64, 5 * time.Second, 0, 5 * time.Second},
		{time.Hour, 0, time.Hour, 0},
		{math.MaxInt64, math.MaxInt64, maxLimit, maxLimit},
	} {
		o := buildServerOptions([]ServerOption{WithMaxConnectionAge(tc.age, tc.grace)})
		if o.maxAge != tc.wantAge || o.maxAgeGrace != tc.wantGrace {
			t.Errorf("WithMaxConnectionAge(%v, %v): age %v grace %v, want %v %v", tc.age, tc.grace, o.maxAge, o.maxAgeGrace, tc.wantAge, tc.wantGrace)
		}
	}
	if o := buildServerOptions(nil); o.maxAge != 0 || o.maxAgeGrace != 0 {
		t.Errorf("default: age %v grace %v, want no limit", o.maxAge, o.maxAgeGrace)
	}
	// The longest age works: no overflow into the past (a go-away at
	// once) when it is added to the clock.
	s, addr, _ := testServer(t, WithMaxConnectionAge(math.MaxInt64, math.MaxInt64))
	c := dial(t, addr)
	for range 3 {
		if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	sc := serverConnOf(t, s)
	if sc.goAwaySent.Load() || c.Draining() {
		t.Fatal("a connection with the longest age was sent a go-away")
	}
}

// blockingServer is a test server whose mSlow handler runs until release
// is closed or its ctx ends; entered gets a value as each call begins,
// ended the ctx's error (nil: released) as each returns.
func blockingServer(t *testing.T, opts ...ServerOption) (s *Server, addr string, logs *syncBuf, entered chan struct{}, ended chan error, release chan struct{}) {
	entered = make(chan struct{}, 16)
	ended = make(chan error, 16)
	release = make(chan struct{})
	s, addr, logs = testServer(t, opts...)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		entered <- struct{}{}
		select {
		case <-release:
			ended <- nil
			return append(resp, req...), nil
		case <-ctx.Done():
			ended <- ctx.Err()
			return resp, ctx.Err()
		}
	})
	return s, addr, logs, entered, ended, release
}

// beganFirst waits for the call whose result comes on res to begin in
// its handler (entered) and reports true, or for it to be refused as
// sent after the go-away of the connection's age (ErrGoAway) and
// reports false: on a loaded machine the short age may pass before the
// call is written, and the attempt is made again (untilReached).
func beganFirst(t *testing.T, entered <-chan struct{}, res <-chan error) bool {
	t.Helper()
	var err error
	refused := false
	await(t, "the call to begin or be refused", func() bool {
		select {
		case <-entered:
			return true
		case err = <-res:
			refused = true
			return true
		default:
			return false
		}
	})
	if refused && !errors.Is(err, ErrGoAway) {
		t.Fatalf("the call failed before it began: %v", err)
	}
	return !refused
}

// notFirst is what an attempt of these tests missed when it was not
// reached.
const notFirst = "the age passed before the call (or stream) was written: it was refused unrun"

// A connection past its age is sent the go-away; the call it was running
// goes on and is answered, new calls on it fail unsent with ErrGoAway, and
// the connection closes once the call is answered (this package's client
// acknowledges the go-away), with nothing dropped. The read timeout of an
// hour keeps the read loop from waking on its own while the call runs:
// the call's end wakes it (wakeRead).
func TestMaxAgeGoAwayInFlightCallCompletes(t *testing.T) {
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs, entered, _, release := blockingServer(t, WithMaxConnectionAge(20*time.Millisecond, 0), WithReadTimeout(time.Hour))
		c := dial(t, addr)
		res := make(chan error, 1)
		go func() {
			out, err := c.Call(context.Background(), mSlow, []byte("in flight"), nil)
			if err == nil && string(out) != "in flight" {
				err = errors.New("wrong answer " + string(out))
			}
			res <- err
		}()
		if !beganFirst(t, entered, res) {
			return false
		}
		await(t, "the go-away of the connection's age", c.Draining)
		if _, err := c.Call(context.Background(), mEcho, []byte("new"), nil); !errors.Is(err, ErrGoAway) || !IsRetryable(err) {
			t.Fatalf("a call after the go-away: %v, want ErrGoAway (retryable)", err)
		}
		if c.Closed() {
			t.Fatal("the connection closed with its call still running")
		}
		close(release)
		if err := receive(t, "the slow call's answer", res); err != nil {
			t.Fatalf("the call in flight at the go-away: %v", err)
		}
		await(t, "the aged connection's close", func() bool { return s.Stats().Active == 0 && c.Closed() })
		if st := s.Stats(); st.Dropped != 0 || st.OK != 1 {
			t.Fatalf("stats %+v, want 1 OK and nothing dropped; log: %s", st, logs)
		}
		return true
	})
}

// The same with a canonical peer, which neither acknowledges the go-away
// nor stops sending: the call in flight is answered, one sent after the
// go-away is refused unrun (503 with the not-run flag), and the
// connection is closed the shutdown grace after the last call that ran.
func TestMaxAgeGoAwayCanonicalPeer(t *testing.T) {
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs, entered, _, release := blockingServer(t, WithMaxConnectionAge(20*time.Millisecond, 0), WithShutdownGrace(50*time.Millisecond), WithReadTimeout(time.Hour))
		rc := rawDial(t, addr)
		rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a generous wait for each frame (none: the test fails)
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1, Payload: []byte("slow")}))
		if kind, env, ok := rc.recv(); !ok || kind != wire.KindGoAway {
			t.Fatalf("got frame kind %d (%x) ok %v, want the age's go-away", kind, env, ok)
		}
		// A call read before the go-away was sent began before it (the
		// read loop runs its handler before it waits again).
		select {
		case <-entered:
		default:
			if r := rc.recvResponse(); r.PromiseID != 1 || !r.NotRun {
				t.Fatalf("the call sent as the age passed: %+v, want it run or refused unrun", r)
			}
			rc.Close()
			return false
		}
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("late")}))
		if r := rc.recvResponse(); r.PromiseID != 2 || r.Status != StatusUnavailable || !r.NotRun {
			t.Fatalf("the call after the go-away: %+v, want 503 not run", r)
		}
		close(release)
		if r := rc.recvResponse(); r.PromiseID != 1 || r.Status != StatusOK || string(r.Body) != "slow" {
			t.Fatalf("the call in flight: %+v, want OK", r)
		}
		rc.expectClosed()
		if st := s.Stats(); st.Dropped != 0 {
			t.Fatalf("stats %+v, want nothing dropped; log: %s", st, logs)
		}
		return true
	})
}

// The grace ends a connection whose call never ends: the call fails at
// its client with ErrClosed, its handler's ctx is done, and the close is
// logged and counted as dropped.
func TestMaxAgeGraceClosesStuckCall(t *testing.T) {
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs, entered, ended, _ := blockingServer(t, WithMaxConnectionAge(20*time.Millisecond, 50*time.Millisecond))
		c := dial(t, addr)
		res := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), mSlow, []byte("never ends"), nil)
			res <- err
		}()
		if !beganFirst(t, entered, res) {
			return false
		}
		if err := receive(t, "the stuck call's end", res); !errors.Is(err, ErrClosed) || !contains(err.Error(), "after the server's go-away") {
			t.Fatalf("the stuck call: %v, want ErrClosed saying the server cut it after its go-away", err)
		}
		if !c.Draining() {
			t.Fatal("the connection was closed without a go-away first")
		}
		if err := receive(t, "the handler's return", ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler's ctx: %v, want canceled", err)
		}
		await(t, "the close in the stats", func() bool { st := s.Stats(); return st.Dropped == 1 && st.Active == 0 })
		if !contains(logs.String(), "max connection age") {
			t.Fatalf("log %q does not say why the connection was closed", logs)
		}
		return true
	})
}

// A stream open at the go-away goes on and ends cleanly; the connection
// closes after it.
func TestMaxAgeStreamInFlightCompletes(t *testing.T) {
	const mStream = 90
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs := testServer(t, WithMaxConnectionAge(20*time.Millisecond, 0), WithReadTimeout(time.Hour))
		s.HandleStream(mStream, func(_ context.Context, _ []byte, st *Stream) error {
			for {
				m, err := st.Recv(nil)
				if err != nil {
					return nil // the client's CloseSend
				}
				if err := st.Send(m); err != nil {
					return err
				}
			}
		})
		c := dial(t, addr)
		st, err := c.OpenStream(context.Background(), mStream, nil)
		if err == nil {
			// A round trip: the stream runs (its open was not refused
			// after the go-away).
			if err = st.Send([]byte("before")); err == nil {
				_, err = st.Recv(nil)
			}
		}
		if err != nil {
			if c.Draining() || c.Closed() {
				return false
			}
			t.Fatalf("%v (draining %v closed %v) stats %+v log %s", err, c.Draining(), c.Closed(), s.Stats(), logs)
		}
		await(t, "the go-away of the connection's age", c.Draining)
		for _, m := range []string{"after", "the", "go-away"} {
			if err := st.Send([]byte(m)); err != nil {
				t.Fatalf("Send %q: %v", m, err)
			}
			got, err := st.Recv(nil)
			if err != nil || string(got) != m {
				t.Fatalf("Recv: %q %v, want %q", got, err, m)
			}
		}
		// The end goes out; the server may close the connection, its
		// last stream ended, before CloseSend has returned: CloseSend
		// then reports the close (an error of the client's, see the
		// report), but the stream's clean end came first.
		if err := st.CloseSend(); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatal(err)
		} else if err != nil {
			t.Logf("CloseSend: %v", err)
		}
		if _, err := st.Recv(nil); err != io.EOF {
			t.Fatalf("Recv after the handler returned: %v, want io.EOF (a clean end)", err)
		}
		await(t, "the aged connection's close", func() bool { return s.Stats().Active == 0 })
		if st := s.Stats(); st.Dropped != 0 {
			t.Fatalf("stats %+v, want nothing dropped; log: %s", st, logs)
		}
		return true
	})
}

// Clients keep working across age-outs with no failed call: callers that
// send a call refused with ErrGoAway (not run) again on a new connection,
// as an application over one rpc.Client does (rpc/cluster does it
// itself), lose none, while connections go away under a steady load.
func TestMaxAgeClientKeepsWorking(t *testing.T) {
	s, addr, logs := testServer(t, WithMaxConnectionAge(30*time.Millisecond, 0))
	var mu sync.Mutex
	cur := dial(t, addr)
	conn := func(old *Client) *Client {
		mu.Lock()
		defer mu.Unlock()
		if cur == old && (old.Draining() || old.Closed()) {
			cur = dial(t, addr)
		}
		return cur
	}
	var calls, resent, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := []byte{byte(g), 0}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req[1] = byte(i)
				for {
					c := conn(nil)
					out, err := c.Call(context.Background(), mEcho, req, nil)
					if errors.Is(err, ErrGoAway) {
						resent.Add(1)
						conn(c)
						continue
					}
					if err == nil && string(out) != string(req) {
						err = errors.New("wrong answer")
					}
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, &err)
					}
					calls.Add(1)
					break
				}
			}
		}()
	}
	await(t, "four connections aged out under load", func() bool { return s.Stats().Accepted >= 5 })
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d calls failed, the first with %v; log: %s", n, calls.Load(), *firstErr.Load(), logs)
	}
	if st := s.Stats(); st.Dropped != 0 {
		t.Fatalf("stats %+v, want nothing dropped; log: %s", st, logs)
	}
	t.Logf("%d calls over %d connections, %d sent again after a go-away", calls.Load(), s.Stats().Accepted, resent.Load())
}

// An aged connection that is idle gets its go-away at its age, not at the
// idle timeout, and closes at once once acknowledged.
func TestMaxAgeIdleConnection(t *testing.T) {
	s, addr, logs := testServer(t, WithMaxConnectionAge(20*time.Millisecond, 0), WithIdleTimeout(time.Hour))
	c := dial(t, addr)
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	await(t, "the idle connection's go-away and close", func() bool { return c.Draining() && s.Stats().Active == 0 })
	if st := s.Stats(); st.Dropped != 0 {
		t.Fatalf("stats %+v, want nothing dropped; log: %s", st, logs)
	}
}

// awaitClosed waits for the server to close rc's connection, discarding
// what it still sends; it fails the test when 30 s pass first (a wait
// for an event, not a time limit: see await).
func awaitClosed(t *testing.T, rc *rawConn) {
	t.Helper()
	rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, rc); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("gave up after 30 s waiting for the server to close the connection")
		}
	}
}

// A connection whose read loop waits inside a frame at its age, as one
// whose peer streams large messages may do at every wait, gets the
// go-away all the same, and the grace closes it with the frame still
// unfinished (the read timeout of an hour would not). The read loop only
// looked at the age between frames: such a connection escaped it.
func TestMaxAgeMidFrame(t *testing.T) {
	s, addr, logs := testServer(t, WithMaxConnectionAge(20*time.Millisecond, 100*time.Millisecond), WithReadTimeout(time.Hour))
	rc := rawDial(t, addr)
	whole := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: make([]byte, 4096)}))
	if _, err := rc.Write(whole[:100]); err != nil {
		t.Fatal(err)
	}
	rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if kind, env, ok := rc.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("got frame kind %d (%x) ok %v, want the age's go-away with a frame under way (no frame in 30 s: none)", kind, env, ok)
	}
	awaitClosed(t, rc)
	await(t, "the close in the stats", func() bool { st := s.Stats(); return st.Dropped == 1 && st.Active == 0 })
	if l := logs.String(); !contains(l, "max connection age") || !contains(l, "100 bytes of a frame received") {
		t.Fatalf("log %q does not say the grace cut a frame under way", l)
	}
}

// A connection that runs calls all the while (one held running, and echo
// calls back to back, which the read loop runs inline under the
// watchdog's watch) gets its go-away at its age all the same: a busy
// connection does not escape its age as it escapes the idle timeout. Its
// calls then finish, and it closes with nothing dropped.
func TestMaxAgeBusyConnection(t *testing.T) {
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs, entered, _, release := blockingServer(t, WithMaxConnectionAge(30*time.Millisecond, 0), WithIdleTimeout(time.Hour))
		c := dial(t, addr)
		res := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), mSlow, []byte("held"), nil)
			res <- err
		}()
		if !beganFirst(t, entered, res) {
			return false
		}
		calls := 0
		giveUp := time.Now().Add(30 * time.Second)
		for {
			_, err := c.Call(context.Background(), mEcho, []byte("busy"), nil)
			if errors.Is(err, ErrGoAway) {
				break
			}
			if err != nil {
				t.Fatalf("echo call %d: %v", calls, err)
			}
			calls++
			if time.Now().After(giveUp) {
				t.Fatalf("gave up after 30 s (%d calls) waiting for the go-away of a busy connection", calls)
			}
		}
		if !c.Draining() {
			t.Fatal("a call failed with ErrGoAway on a connection not told to go away")
		}
		close(release)
		if err := receive(t, "the held call's answer", res); err != nil {
			t.Fatalf("the call held running across the go-away: %v", err)
		}
		await(t, "the aged connection's close", func() bool { return s.Stats().Active == 0 && c.Closed() })
		if st := s.Stats(); st.Dropped != 0 {
			t.Fatalf("stats %+v, want nothing dropped; log: %s", st, logs)
		}
		t.Logf("%d echo calls before the go-away", calls)
		return true
	})
}

// A stream still open when the grace ends is cut: its handler's ctx is
// done, the client's Recv fails with an error matching ErrClosed that
// says the server cut it after its go-away, and the close is logged and
// counted as dropped.
func TestMaxAgeGraceCutsStream(t *testing.T) {
	const mStream = 91
	untilReached(t, notFirst, func(t *testing.T) bool {
		s, addr, logs := testServer(t, WithMaxConnectionAge(20*time.Millisecond, 100*time.Millisecond))
		ended := make(chan error, 1)
		s.HandleStream(mStream, func(ctx context.Context, _ []byte, st *Stream) error {
			m, err := st.Recv(nil)
			if err == nil {
				err = st.Send(m)
			}
			if err != nil {
				return err
			}
			<-ctx.Done()
			ended <- ctx.Err()
			return ctx.Err()
		})
		c := dial(t, addr)
		st, err := c.OpenStream(context.Background(), mStream, nil)
		if err == nil {
			if err = st.Send([]byte("open")); err == nil {
				_, err = st.Recv(nil)
			}
		}
		if err != nil {
			if c.Draining() || c.Closed() {
				return false
			}
			t.Fatal(err)
		}
		recvd := make(chan error, 1)
		go func() {
			_, err := st.Recv(nil)
			recvd <- err
		}()
		err = receive(t, "the stream's cut", recvd)
		if !errors.Is(err, ErrClosed) || !errors.Is(err, io.EOF) || !contains(err.Error(), "after the server's go-away") {
			t.Fatalf("Recv on the stream cut at the grace: %v, want ErrClosed saying the server cut it after its go-away", err)
		}
		if !c.Draining() {
			t.Fatal("the stream was cut without a go-away first")
		}
		if err := receive(t, "the handler's end", ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler's ctx: %v, want canceled", err)
		}
		await(t, "the close in the stats", func() bool { st := s.Stats(); return st.Dropped == 1 && st.Active == 0 })
		if !contains(logs.String(), "max connection age") {
			t.Fatalf("log %q does not say why the connection was closed", logs)
		}
		t.Logf("Recv: %v", err)
		return true
	})
}
