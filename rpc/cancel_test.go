package rpc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	mBlock = 140 // waits for its ctx's end or for release; reports ctx.Err()
	mCheck = 141 // returns at once; fails when its ctx ended
)

// blockServer serves mBlock on a test server with opts: each call tells
// started, then waits for its ctx's end (or for release to close) and
// sends its ctx's error to ended.
func blockServer(t *testing.T, opts ...ServerOption) (addr string, started chan uint32, ended chan error, release chan struct{}) {
	s, addr, _ := testServer(t, opts...)
	started, ended, release = make(chan uint32, 256), make(chan error, 256), make(chan struct{})
	s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		_, pid, _ := CallInfo(ctx)
		started <- pid
		select {
		case <-ctx.Done():
		case <-release:
		}
		ended <- ctx.Err()
		return resp, nil
	})
	return addr, started, ended, release
}

// callThenCancel calls mBlock on c under ctx in a goroutine of its own,
// waits until the handler says it started (on started), cancels ctx and
// returns the error Call returned.
func callThenCancel[T any](t *testing.T, c *Client, ctx context.Context, cancel context.CancelFunc, started <-chan T) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil, nil)
		done <- err
	}()
	receive(t, "the handler's start", started)
	cancel()
	return receive(t, "Call's return", done)
}

// A caller's cancel reaches the handler: its ctx's Done closes and Err
// is context.Canceled, while Call returns context.Canceled at once, as
// it did before the cancel went on the wire. The first cancel on a
// connection asks the server first (the read loop sends it when the
// server's announcement comes), the second goes at once; on a server
// that runs its calls inline (the read loop taken from the handler by
// the watchdog) and on one that runs them on workers (pipelining), with
// and without a deadline on the caller's ctx.
func TestUnaryCancelReachesHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"workers", []ServerOption{WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, started, ended, release := blockServer(t, tc.opts...)
			defer close(release)
			c := dial(t, addr)
			for i, deadline := range []bool{false, true, false, true} {
				ctx, cancel := context.WithCancel(context.Background())
				if deadline {
					ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
				}
				if err := callThenCancel(t, c, ctx, cancel, started); err != context.Canceled {
					t.Fatalf("call %d: Call: %v, want context.Canceled", i, err)
				}
				if err := receive(t, "the handler's ctx's end after the caller's cancel", ended); err != context.Canceled {
					t.Fatalf("call %d: the handler's ctx ended with %v, want context.Canceled", i, err)
				}
			}
			// The connection goes on.
			if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("echo after the cancels: %q %v", out, err)
			}
		})
	}
}

// A handler that looks at its ctx only after the cancel came (it never
// armed Done before) finds it ended all the same: Err, then Done, then a
// ctx it derives from it.
func TestUnaryCancelSeenLate(t *testing.T) {
	s, addr, _ := testServer(t)
	got := make(chan error, 2)
	started := make(chan struct{})
	s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		// No Done: Err until the cancel came.
		for ctx.Err() == nil {
			time.Sleep(time.Millisecond) // polling the handler's ctx, the way a loop of work would
		}
		got <- ctx.Err()
		<-ctx.Done()
		d, stop := context.WithCancel(ctx)
		defer stop()
		<-d.Done()
		got <- d.Err()
		return resp, nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	if err := callThenCancel(t, c, ctx, cancel, started); err != context.Canceled {
		t.Fatalf("Call: %v", err)
	}
	if err := receive(t, "the handler's Err", got); err != context.Canceled {
		t.Fatalf("Err: %v", err)
	}
	if err := receive(t, "the handler's Done, then a derived ctx's end", got); err != context.Canceled {
		t.Fatalf("derived Err: %v", err)
	}
}

// Calls that share one ctx (the client watches it once, ctxwatch.go)
// are all canceled on the server when it ends.
func TestUnaryCancelSharedCtx(t *testing.T) {
	addr, started, ended, release := blockServer(t, WithPipelining(0))
	defer close(release)
	c := dial(t, addr)
	// Enough calls in a row with one ctx for the client to watch it.
	shared, cancel := context.WithCancel(context.Background())
	for range watchAfter + 1 {
		if _, err := c.Call(shared, mEcho, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	const n = 50
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Call(shared, mBlock, nil, nil)
			done <- err
		}()
	}
	for range n {
		receive(t, "a handler's start", started)
	}
	cancel()
	for range n {
		if err := receive(t, "Call's return", done); err != context.Canceled {
			t.Fatalf("Call: %v", err)
		}
	}
	for range n {
		if err := receive(t, "a handler's ctx's end", ended); err != context.Canceled {
			t.Fatalf("a handler's ctx ended with %v", err)
		}
	}
}

// cancelTestCall is the request frame body of a call with promise pid.
func cancelTestCall(method, pid uint32, payload []byte) []byte {
	return wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: pid, Payload: payload})
}

// Cancels for calls that are not running (unknown ids, id 0, a body
// shorter than an id, an answered call's id, thousands of them) are
// harmless: nothing is answered for them, the connection stays, and the
// calls that follow, one of them with the answered call's id, run with
// a live ctx.
func TestCancelUnknownHarmless(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"workers", []ServerOption{WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, logs := testServer(t, tc.opts...)
			s.Handle(mCheck, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("ctx ended: %w", err)
				}
				return append(resp, req...), nil
			})
			r := rawDial(t, addr)
			r.send(wire.KindRequest, cancelTestCall(mCheck, 9, []byte("a")))
			if a := r.recvResponse(); a.Status != StatusOK || a.PromiseID != 9 {
				t.Fatalf("first call: %d %d %q", a.Status, a.PromiseID, a.Body)
			}
			var flood []byte
			flood = append(flood, frameBytes(wire.KindCancel, wire.AppendCancel(nil, 9))...) // answered
			flood = append(flood, frameBytes(wire.KindCancel, wire.AppendCancel(nil, 0))...)
			flood = append(flood, frameBytes(wire.KindCancel, []byte{1, 2})...)
			flood = append(flood, frameBytes(wire.KindCancel, append(wire.AppendCancel(nil, 9), "more"...))...)
			for i := range 5000 {
				flood = append(flood, frameBytes(wire.KindCancel, wire.AppendCancel(nil, uint32(1000+i)))...)
			}
			flood = append(flood, frameBytes(wire.KindRequest, cancelTestCall(mCheck, 9, []byte("b")))...)
			if _, err := r.Write(flood); err != nil {
				t.Fatal(err)
			}
			a := r.recvResponse()
			if a.Status != StatusOK || a.PromiseID != 9 || string(a.Body) != "b" {
				t.Fatalf("call after the cancels: status %d promise %d body %q; want 200 9 \"b\"", a.Status, a.PromiseID, a.Body)
			}
			if l := logs.String(); l != "" {
				t.Errorf("logged: %s", l)
			}
		})
	}
}

// The reuse race, on the wire: a cancel read after the call it names was
// answered, or while it ends, followed at once by a new call with the
// same promise id, never cancels the new call; the wire's order tells
// them apart (the server reads the cancel before the new call exists).
// A peer that reuses one id, round after round: a call, a cancel of its
// id and another call with that id, in one write; the calls after a
// cancel never see their ctx end, whichever goroutine ran the one before
// and however its end raced with the cancel (the job the cancel marked
// as its call ended may take the next call). Each round waits for its
// answers: a cancel of an id that two running calls share names both (a
// zapcodec client never reuses an id before its answer came).
func TestCancelReuseRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"workers", []ServerOption{WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, _ := testServer(t, tc.opts...)
			var mu sync.Mutex
			var hit []string
			s.Handle(mCheck, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				if string(req) == "after" {
					if err := ctx.Err(); err != nil {
						mu.Lock()
						hit = append(hit, err.Error())
						mu.Unlock()
					}
				}
				return append(resp, req...), nil
			})
			r := rawDial(t, addr)
			const rounds = 2000
			r.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang guard
			var b []byte
			for i := range rounds {
				b = b[:0]
				b = append(b, frameBytes(wire.KindRequest, cancelTestCall(mCheck, 7, []byte("before")))...)
				b = append(b, frameBytes(wire.KindCancel, wire.AppendCancel(nil, 7))...)
				b = append(b, frameBytes(wire.KindRequest, cancelTestCall(mCheck, 7, []byte("after")))...)
				if _, err := r.Write(b); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if a := r.recvResponse(); a.Status != StatusOK {
						t.Fatalf("round %d: status %d %q", i, a.Status, a.Body)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hit) > 0 {
				t.Fatalf("%d calls read after a cancel of their id saw their ctx end (%s)", len(hit), hit[0])
			}
		})
	}
}

// cancelServer accepts one connection and answers like a server that
// announces cancels (announce) or like a canonical one (which ignores
// kinds 7 and 12): each request with method mEcho is answered at once,
// the others only when the test sends their promise id to answer. Every
// frame the client sent goes to frames. When the test ends, its connection
// is closed and the test waits until its goroutines have returned (the
// one answering from answer ran on past the test's end, blocked for good
// where the test did not close answer).
type cancelServer struct {
	l        net.Listener
	announce bool
	frames   chan [2][]byte // kind, body
	answer   chan uint32
	stop     chan struct{} // closed when the test ends
}

func newCancelServer(t *testing.T, announce bool) *cancelServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &cancelServer{l: l, announce: announce, frames: make(chan [2][]byte, 64), answer: make(chan uint32, 8), stop: make(chan struct{})}
	var running sync.WaitGroup
	running.Add(1)
	go func() {
		defer running.Done()
		f.serve(&running)
	}()
	t.Cleanup(func() {
		close(f.stop)
		l.Close()
		ended := make(chan struct{})
		go func() {
			running.Wait()
			close(ended)
		}()
		receive(t, "the cancel server's goroutines to return", ended)
	})
	return f
}

// serve serves one connection; running counts the goroutines it starts.
func (f *cancelServer) serve(running *sync.WaitGroup) {
	nc, err := f.l.Accept()
	if err != nil {
		return
	}
	defer nc.Close()
	done := make(chan struct{})
	defer close(done)
	var wmu sync.Mutex
	write := func(kind byte, body []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		nc.Write(frameBytes(kind, body))
	}
	running.Add(2)
	go func() {
		defer running.Done()
		for {
			select {
			case pid, ok := <-f.answer:
				if !ok {
					return
				}
				write(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid}))
			case <-done:
				return
			}
		}
	}()
	go func() {
		defer running.Done()
		select {
		case <-f.stop:
			nc.Close() // ends the read below
		case <-done:
		}
	}()
	r := &rawConn{nil, nc}
	for {
		kind, body, ok := r.recv()
		if !ok {
			return
		}
		select {
		case f.frames <- [2][]byte{{kind}, body}:
		case <-f.stop:
			return
		}
		switch kind {
		case wire.KindRequest:
			req, err := wire.ParseRequest(body)
			if err == nil && req.Method == mEcho {
				write(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: req.PromiseID}))
			}
		case wire.KindPing:
			if f.announce && string(body) == wire.CancelQuestion {
				write(wire.KindCancel, wire.AppendCancel(nil, 0))
				write(wire.KindPong, body)
			}
		}
	}
}

// next returns the next frame the client sent.
func (f *cancelServer) next(t *testing.T) (byte, []byte) {
	t.Helper()
	fr := receive(t, "a frame from the client", f.frames)
	return fr[0][0], fr[1]
}

// The client sends cancels only to a server that announced it takes
// them. To a canonical-like server (it ignores the question) nothing of
// kind 12 goes, however many calls are canceled: the first cancel asks
// once (a ping, which a canonical server ignores), and the rest send
// nothing at all. To a server that answers the question with the
// announcement, the cancel of the call canceled before it came goes as
// it comes, and later ones at once: [u32 promise id] in kind 12.
func TestCancelOnlyToAnnouncedServer(t *testing.T) {
	for _, announce := range []bool{false, true} {
		t.Run(fmt.Sprintf("announce=%v", announce), func(t *testing.T) {
			f := newCancelServer(t, announce)
			c := dial(t, f.l.Addr().String())
			var pids []uint32
			for i := range 3 {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := c.Call(ctx, mBlock, nil, nil)
					done <- err
				}()
				k, body := f.next(t)
				if k != wire.KindRequest {
					t.Fatalf("frame kind %d, want the request", k)
				}
				req, _ := wire.ParseRequest(body)
				pids = append(pids, req.PromiseID)
				cancel()
				if err := receive(t, "Call's return", done); err != context.Canceled {
					t.Fatalf("Call: %v", err)
				}
				if i == 0 {
					k, body = f.next(t)
					if k != wire.KindPing || string(body) != wire.CancelQuestion {
						t.Fatalf("after the first cancel: kind %d %q, want the question", k, body)
					}
				}
				if announce {
					k, body = f.next(t)
					if want := frameBytes(wire.KindCancel, wire.AppendCancel(nil, req.PromiseID)); !bytes.Equal(frameBytes(k, body), want) {
						t.Fatalf("call %d: got frame %x, want the cancel %x", i, frameBytes(k, body), want)
					}
				}
				// A call answered in between marks where the frames of
				// this round end.
				if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
					t.Fatal(err)
				}
				if k, body = f.next(t); k != wire.KindRequest {
					t.Fatalf("frame kind %d (%x), want the next request", k, body)
				}
			}
			// The late answers free the slots; nothing more is sent.
			for _, pid := range pids {
				f.answer <- pid
			}
			await(t, "the late answers", func() bool { return c.abandoned.Load() == 0 })
			close(f.answer)
			c.Close()
			for _, fr := range drain(f.frames) {
				t.Errorf("after the exchange: kind %d %x", fr[0][0], fr[1])
			}
		})
	}
}

// drain returns what ch holds now, without waiting.
func drain[T any](ch chan T) []T {
	var out []T
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// The question and the announcement against a real server: the server
// answers the question with the announcement before the pong, and
// nothing else changes on the wire.
func TestCancelAnnouncement(t *testing.T) {
	_, addr, _ := testServer(t)
	r := rawDial(t, addr)
	r.send(wire.KindPing, []byte(wire.CancelQuestion))
	r.send(wire.KindPing, []byte("other"))
	want := [][]byte{
		frameBytes(wire.KindCancel, []byte{0, 0, 0, 0}),
		frameBytes(wire.KindPong, []byte(wire.CancelQuestion)),
		frameBytes(wire.KindPong, []byte("other")),
	}
	for i, w := range want {
		k, body, ok := r.recv()
		if !ok || !bytes.Equal(frameBytes(k, body), w) {
			t.Fatalf("frame %d: %x (ok %v), want %x", i, frameBytes(k, body), ok, w)
		}
	}
}

// A call whose deadline passed sends no cancel, even to a server that
// takes them: the request carried the deadline, and the server ends the
// handler's ctx by it with context.DeadlineExceeded (a cancel would
// race it, and the handler would see context.Canceled instead). Nor
// does it ask the question.
func TestCancelNotSentForDeadline(t *testing.T) {
	f := newCancelServer(t, true)
	c := dial(t, f.l.Addr().String())
	ctx := &passCtx{Context: context.Background(), done: make(chan struct{})}
	res := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil, nil)
		res <- err
	}()
	if k, _ := f.next(t); k != wire.KindRequest {
		t.Fatalf("frame kind %d, want the request", k)
	}
	close(ctx.done) // its deadline passes
	if err := receive(t, "Call's return", res); err != context.DeadlineExceeded {
		t.Fatalf("Call: %v, want context.DeadlineExceeded", err)
	}
	// The next frame is the next call's request: nothing in between.
	if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	if k, body := f.next(t); k != wire.KindRequest {
		t.Fatalf("frame kind %d (%x) after a call's deadline passed, want the next request", k, body)
	}
	if st := c.cancelSt.Load(); st != cancelUnasked {
		t.Fatalf("cancel state %d, want unasked", st)
	}
}

// passCtx is a ctx with a deadline an hour away that passes when the
// test closes done: Err is then context.DeadlineExceeded.
type passCtx struct {
	context.Context
	done chan struct{}
}

func (x *passCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (x *passCtx) Done() <-chan struct{}       { return x.done }
func (x *passCtx) Err() error {
	select {
	case <-x.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A handler that returns its ctx's error after its caller canceled the
// call is no handler error: not logged, answered and observed 499
// (StatusCanceled), as gRPC-go reports codes.Canceled.
func TestUnaryCancelHandlerErrorNotLogged(t *testing.T) {
	events := make(chan CallEvent, 4)
	s, addr, logs := testServer(t, WithObserver(func(ev CallEvent) {
		if ev.Method == mBlock {
			events <- ev
		}
	}))
	started := make(chan struct{}, 1)
	s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("stopped: %w", ctx.Err())
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	if err := callThenCancel(t, c, ctx, cancel, started); err != context.Canceled {
		t.Fatalf("Call: %v", err)
	}
	if ev := receive(t, "the server's event", events); ev.Status != StatusCanceled {
		t.Fatalf("the server's event: status %d, want %d", ev.Status, StatusCanceled)
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged: %s", l)
	}
}
