package rpc

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A peer that keeps sending, but whose writes end inside a frame (the next
// frame's first bytes arrive with the end of the previous one), is not
// idle: the idle timeout must count from the moment the server starts
// waiting, not from the last time its read buffer happened to be empty.
func TestIdleTimeoutStraddlingFrames(t *testing.T) {
	const idle = 500 * time.Millisecond
	s, addr, logs := testServer(t, WithIdleTimeout(idle))
	rc := rawDial(t, addr)

	const n = 40 // n × pause is well past the idle timeout
	const pause = 25 * time.Millisecond
	var stream []byte
	for i := uint32(1); i <= n; i++ {
		env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte("straddle")})
		stream = append(stream, frameBytes(wire.KindRequest, env)...)
	}
	flen := len(stream) / n
	answers := make(chan uint32, n)
	go func() {
		defer close(answers)
		for {
			kind, env, ok := rc.recv()
			if !ok {
				return
			}
			if r, err := wire.ParseResponse(env); kind == wire.KindResponse && err == nil {
				answers <- r.PromiseID
			}
		}
	}()
	// Each write carries the second half of one frame and the first half
	// of the next: the server never sees its buffer empty between frames.
	at := flen / 2
	if _, err := rc.Write(stream[:at]); err != nil {
		t.Fatal(err)
	}
	for at < len(stream) {
		time.Sleep(pause)
		end := min(at+flen, len(stream))
		if _, err := rc.Write(stream[at:end]); err != nil {
			t.Fatalf("write after %d bytes: %v; stats %+v; log: %s", at, err, s.Stats(), logs)
		}
		at = end
	}
	for i := 0; i < n; i++ {
		if _, ok := <-answers; !ok {
			t.Fatalf("connection closed after %d answers of %d; stats %+v; log: %s", i, n, s.Stats(), logs)
		}
	}
}

// An idle connection is not woken by its read deadline before its idle
// limit. One that ran its calls one at a time gives its job back as it
// waits and is not woken at all (it used to be woken once, a read timeout
// after its last call: with 10,000 sessions calling every few seconds,
// 1,000 wake-ups a second); one that held several jobs (a call ran on a
// worker) is woken once, a read timeout after its last call, to give them
// back. (Before that, every read timeout, which made 10,000 idle
// connections cost CPU: BenchmarkIdleCPU.)
func TestIdleConnNotWoken(t *testing.T) {
	const rt = 20 * time.Millisecond
	s, addr, _ := testServer(t, WithReadTimeout(rt), WithIdleTimeout(0))
	c := dial(t, addr)
	for i := 0; i < 3; i++ {
		if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * rt) // twenty read timeouts of silence
	if got := s.readWakes.Load(); got != 0 {
		t.Fatalf("a connection that ran one call at a time was woken %d times in 20 read timeouts, want 0", got)
	}

	// Two jobs: a call the watchdog took over, and one behind it.
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	slow := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mSlow, []byte("slow"), nil)
		slow <- err
	}()
	await(t, "the slow call", func() bool { return s.Stats().Calls == 4 })
	if _, err := c.Call(context.Background(), mEcho, []byte("behind"), nil); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	// The wake-up that gives the jobs back is the first with no call
	// running: those that came while the slow call still ran (a test
	// goroutine a read timeout late to release it) gave back only the
	// jobs unused, and the next one came a read timeout later. The
	// slow call's job goes back to the free list before its end is
	// counted, and the wake-up empties the list.
	sc := serverConnOf(t, s)
	await(t, "the slow call's end on the server", func() bool { return sc.inflight.Load() == 0 })
	await(t, "the wake-up that gives the jobs back", func() bool {
		sc.free.mu.Lock()
		defer sc.free.mu.Unlock()
		return len(sc.free.jobs) == 0
	})
	n := s.readWakes.Load()
	time.Sleep(20 * rt)
	if got := s.readWakes.Load() - n; got != 0 {
		t.Fatalf("an idle connection was woken %d times in 20 read timeouts after giving its jobs back, want 0", got)
	}
	// A frame that begins and then stalls still meets the read timeout.
	rc := rawDial(t, addr)
	env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("stalled")})
	if _, err := rc.Write(frameBytes(wire.KindRequest, env)[:7]); err != nil {
		t.Fatal(err)
	}
	rc.expectClosed()
}

// The watchdog looks only at the connections that ran calls lately: with
// one busy connection and many idle ones, its ticks do not visit the idle
// ones (it used to scan every connection at every tick, under the server
// mutex).
func TestWatchdogSkipsIdleConns(t *testing.T) {
	s, addr, _ := testServer(t)
	const idle = 100
	for i := range idle {
		rc := rawDial(t, addr)
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: uint32(i + 1), Payload: []byte("x")}))
		rc.recvResponse()
	}
	c := dial(t, addr)
	call := func() {
		if _, err := c.Call(context.Background(), mEcho, []byte("busy"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Calls on one connection keep the watchdog ticking; after a few
	// ticks the idle connections have left its list.
	ticks := func(n int64) (looks, scans int64) {
		s.wdMu.Lock()
		l0, s0 := s.wdLooks, s.wdScans
		s.wdMu.Unlock()
		deadline := time.Now().Add(30 * time.Second)
		for {
			call()
			s.wdMu.Lock()
			looks, scans = s.wdLooks-l0, s.wdScans-s0
			s.wdMu.Unlock()
			if scans >= n {
				return looks, scans
			}
			if time.Now().After(deadline) {
				t.Fatalf("the watchdog ticked %d times in 30 s of calls, want %d", scans, n)
			}
		}
	}
	ticks(2 * wdForget)
	looks, scans := ticks(50)
	// The busy connection, at most, at each tick (when it is between
	// calls, not even that; twice when a call begins just as a scan takes
	// it off the list: the scan looks at it again as busy). Idle ones
	// listed would add a hundred a tick.
	if looks > 2*scans {
		t.Fatalf("the watchdog looked at %d connections in %d ticks with 1 busy and %d idle connections; want at most two a tick", looks, scans, idle)
	}
}

// While calls flow, the read loops make the watchdog's scans as they block
// (scanDue) and the watchdog's own timer backs off (a timer due within a
// millisecond made every sleep of every thread arm a kernel timer:
// docs/BENCHMARK-HISTORY.md, "Many sessions"). A handler that does not
// return is still taken over, both while another connection keeps calling
// and after its calls stop (the backstop), and the calls behind it on its
// connection are answered.
func TestWatchdogScansFromReadLoops(t *testing.T) {
	// No read or idle deadline: no read loop wakes up on its own to scan.
	s, addr, _ := testServer(t, WithReadTimeout(0), WithIdleTimeout(0))
	release := make(chan struct{})
	defer close(release)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	stopBusy := keepCalling(dial(t, addr), 1, []byte("busy"))
	await(t, "a scan by a read loop", func() bool { return s.wdByLoop.Load() != 0 })

	// Taken over while the other connection calls.
	slowBehind := func(c *Client, tag byte) {
		t.Helper()
		slow := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), mSlow, []byte{tag}, nil)
			slow <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := 0; i < 10; i++ {
			if out, err := c.Call(ctx, mEcho, []byte{tag, byte(i)}, nil); err != nil || len(out) != 2 || out[1] != byte(i) {
				t.Fatalf("call %d behind a stuck handler (not taken over in 30 s?): %x %v", i, out, err)
			}
		}
		select {
		case err := <-slow:
			t.Fatalf("the stuck call returned: %v", err)
		default:
		}
	}
	slowBehind(dial(t, addr), 1)

	// The other connection stops: the watchdog's timer takes over again.
	if err := stopBusy(); err != nil {
		t.Fatal(err)
	}
	slowBehind(dial(t, addr), 2)
}

// A handler that begins inline just as the watchdog parks, and so does
// not see it parked (it wakes only a parked watchdog), is still taken
// over: the watchdog looks again after it marks itself parked. (The look
// was a scan, which skipped itself when the previous scan was less than
// a tick before, and the watchdog parked with the handler stuck.)
func TestWatchdogParkRace(t *testing.T) {
	var hookp *func(*Server)
	// No read or idle deadline, and no other connection: nothing but the
	// watchdog can take the handler over.
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
	hooked := make(chan struct{})
	hook := func(ws *Server) {
		if ws != s || !wdBeforePark.CompareAndSwap(hookp, nil) {
			return // another test's server, or done
		}
		go c.Call(context.Background(), mSlow, []byte("stuck"), nil)
		<-started // the read loop is in the handler: it found the watchdog not parked
		close(hooked)
	}
	hookp = &hook
	wdBeforePark.Store(hookp)
	defer wdBeforePark.Store(nil)
	select {
	case <-hooked:
	case <-time.After(30 * time.Second):
		t.Fatal("the watchdog did not park in 30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("behind"), nil); err != nil || string(out) != "behind" {
		t.Fatalf("the call behind a handler that began as the watchdog parked (not taken over in 30 s?): %q %v", out, err)
	}
}

// A connection that held many jobs gives them back once quiet even with
// the read timeout off (and the idle limit too): it is woken
// DefaultReadTimeout after its last call, as it is a read timeout after
// it otherwise. It kept the jobs of its busiest moment, each with its
// buffers, until its idle limit (or for ever without one). The test
// lowers the 10 s to 100 ms (quietWakeTest) and waits for the wake-up
// that finds the connection quiet with all its calls read (jobsBackTest),
// not for a period: the connection must then hold no job.
func TestJobsGivenBackWithoutReadTimeout(t *testing.T) {
	quietWakeTest.Store(int64(100 * time.Millisecond))
	defer quietWakeTest.Store(0)
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"no read timeout", []ServerOption{WithReadTimeout(-1)}},
		{"no limits", []ServerOption{WithReadTimeout(-1), WithIdleTimeout(-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const calls = 64
			s, addr, _ := testServer(t, tc.opts...)
			// held: the jobs a quiet wake-up left the connection, sent
			// once all the calls were read (the read loop's count not
			// yet added to the server's included; no other connection
			// calls this server).
			held := make(chan int, 1)
			hook := func(c *serverConn) {
				if c.s != s || c.s.stats.calls.Load()+c.local.calls < calls {
					return
				}
				select {
				case held <- c.nJobs:
				default:
				}
			}
			jobsBackTest.Store(&hook)
			defer jobsBackTest.Store(nil)
			s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				time.Sleep(20 * time.Millisecond) // the calls overlap: a job each
				return append(resp, req...), nil
			})
			c := dial(t, addr)
			before, _ := heapAfterGC()
			p := bytes.Repeat([]byte{1}, 200<<10)
			var wg sync.WaitGroup
			for range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := c.Call(context.Background(), mSlow, p, nil); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n := receive(t, "a wake-up that finds the connection quiet after its calls", held); n != 0 {
				t.Fatalf("the quiet connection still holds %d jobs", n)
			}
			after, _ := heapAfterGC()
			grew := int64(after) - int64(before)
			t.Logf("heap growth once quiet: %d KiB", grew>>10)
			if grew > 2<<20 {
				t.Fatalf("the quiet connection holds %d KiB more than before its calls", grew>>10)
			}
		})
	}
}
