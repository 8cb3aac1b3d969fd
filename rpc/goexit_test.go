package rpc

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A handler that calls runtime.Goexit (t.FailNow in a test's handler, say)
// ends the goroutine it runs on, which no recover stops. Its call is
// answered 500 like a panicking handler's, the connection goes on (a new
// goroutine takes the read loop over when the handler ran inline), and
// nothing is left counted in flight: Shutdown returns. Before, the call
// waited for its ctx, the connection read nothing more, and Shutdown
// waited for ever.
func TestHandlerGoexit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []ServerOption
		takeOver bool // the handler waits for the watchdog to take its read loop over
	}{
		{name: "inline"},
		{name: "inline, with an observer", opts: []ServerOption{WithObserver(func(CallEvent) {})}},
		{name: "after a take-over", takeOver: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, logs := testServer(t, tc.opts...)
			var sc *serverConn
			known := make(chan struct{})
			s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				if tc.takeOver {
					<-known
					for sc.inl.Load() != readerTaken {
						runtime.Gosched()
					}
				}
				runtime.Goexit()
				return nil, nil
			})
			c := dial(t, addr)
			if out, err := c.Call(context.Background(), mEcho, []byte("first"), nil); err != nil || string(out) != "first" {
				t.Fatalf("first call: %q %v", out, err)
			}
			sc = serverConnOf(t, s)
			close(known)
			for i := range 3 { // the read loop is a new goroutine's each time
				_, err := c.Call(context.Background(), mPanic, nil, nil)
				var se *StatusError
				if !errors.As(err, &se) || se.Code != StatusInternal {
					t.Fatalf("call %d to the handler that exits: %v, want 500", i, err)
				}
				if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
					t.Fatalf("call %d after: %q %v", i, out, err)
				}
			}
			if !contains(logs.String(), "runtime.Goexit") {
				t.Fatalf("not logged: %s", logs)
			}
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The same for a call run on a worker: one read behind a call whose read
// loop is taken over goes to a worker (see request).
func TestWorkerHandlerGoexit(t *testing.T) {
	s, addr, _ := testServer(t)
	var sc *serverConn
	known := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-known
		for sc.inl.Load() != readerTaken {
			runtime.Gosched()
		}
		return append(resp, "slow"...), nil
	})
	s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-known
		if sc.inl.Load() != readerTaken { // an inline call's sequence number
			t.Error("run inline, not on a worker")
		}
		runtime.Goexit()
		return nil, nil
	})
	rc := rawDial(t, addr)
	// One write: the second request is buffered behind the first when the
	// read loop is taken over, and goes to a worker.
	batch := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1}))
	batch = append(batch, frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mPanic, PromiseID: 2}))...)
	if _, err := rc.Write(batch); err != nil {
		t.Fatal(err)
	}
	sc = serverConnOf(t, s)
	close(known)
	got := map[uint32]uint32{}
	for range 2 {
		a := rc.recvResponse()
		got[a.PromiseID] = a.Status
	}
	if got[1] != StatusOK || got[2] != StatusInternal {
		t.Fatalf("answers %v, want 1: 200 and 2: 500", got)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 3, Payload: []byte("on")}))
	if a := rc.recvResponse(); a.PromiseID != 3 || a.Status != StatusOK || string(a.Body) != "on" {
		t.Fatalf("after: %+v", a)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A stream handler that calls runtime.Goexit ends its stream with a 500,
// frees its stream slot, and lets Shutdown return.
func TestStreamHandlerGoexit(t *testing.T) {
	s, addr, logs := streamServer(t, WithMaxStreams(1))
	const sExit = 77
	s.HandleStream(sExit, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send([]byte("one"))
		runtime.Goexit()
		return nil
	})
	c := dial(t, addr)
	for i := range 3 { // one stream at a time: each end frees the slot
		st, err := c.OpenStream(context.Background(), sExit, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := recvAll(st)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != streamExitText {
			t.Fatalf("stream %d: end %v, want 500 %q", i, err, streamExitText)
		}
		if len(msgs) != 1 || string(msgs[0]) != "one" {
			t.Fatalf("stream %d: messages %q", i, msgs)
		}
	}
	if !contains(logs.String(), "runtime.Goexit") {
		t.Fatalf("not logged: %s", logs)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A server observer that calls runtime.Goexit (t.FailNow in a test's
// observer, say) as it reports a call ends the goroutine it runs on, as a
// handler's would: the call is answered 500, the observer is not called a
// second time for it, the connection goes on (inline and on a worker), and
// Shutdown returns. Before, the exit skipped the answer: the call and
// every later one on the connection waited for ever, and so did Shutdown.
func TestObserverGoexit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		takeOver bool // the handler waits for the watchdog to take its read loop over
	}{{name: "inline"}, {name: "after a take-over", takeOver: true}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen [2]int // events of mPanic, of mEcho
			s, addr, logs := testServer(t, WithObserver(func(ev CallEvent) {
				mu.Lock()
				if ev.Method == mPanic {
					seen[0]++
				} else {
					seen[1]++
				}
				mu.Unlock()
				if ev.Method == mPanic {
					runtime.Goexit()
				}
			}))
			var sc *serverConn
			known := make(chan struct{})
			s.Handle(mPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				if tc.takeOver {
					<-known
					for sc.inl.Load() != readerTaken {
						runtime.Gosched()
					}
				}
				return append(resp, "ok"...), nil
			})
			c := dial(t, addr)
			// Bounds only a broken server's wait (it hung for ever).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if out, err := c.Call(ctx, mEcho, []byte("first"), nil); err != nil || string(out) != "first" {
				t.Fatalf("first call: %q %v", out, err)
			}
			sc = serverConnOf(t, s)
			close(known)
			for i := range 3 {
				_, err := c.Call(ctx, mPanic, nil, nil)
				var se *StatusError
				if !errors.As(err, &se) || se.Code != StatusInternal {
					t.Fatalf("call %d whose observer exits: %v, want 500", i, err)
				}
				if out, err := c.Call(ctx, mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
					t.Fatalf("call %d after: %q %v", i, out, err)
				}
			}
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if seen != [2]int{3, 4} {
				t.Errorf("events (exiting, echo): %v, want [3 4]", seen)
			}
			mu.Unlock()
			if !contains(logs.String(), "observer called runtime.Goexit") {
				t.Fatalf("not logged: %s", logs)
			}
		})
	}
}

// A server stream observer that calls runtime.Goexit as it sees a
// stream's start ends the stream as a handler's exit does (500, the
// handler does not run), and one that exits as it sees the end leaves
// the stream ended: either way the stream slot is freed and Shutdown
// returns. Before, the stream stayed open and counted in flight.
func TestStreamObserverGoexit(t *testing.T) {
	for _, atEnd := range []bool{false, true} {
		t.Run(map[bool]string{false: "start", true: "end"}[atEnd], func(t *testing.T) {
			s, addr, logs := streamServer(t, WithMaxStreams(1), WithStreamObserver(func(ev StreamEvent) {
				if ev.End == atEnd {
					runtime.Goexit()
				}
			}))
			const sExit = 77
			ran := make(chan struct{}, 3)
			s.HandleStream(sExit, func(ctx context.Context, init []byte, st *Stream) error {
				ran <- struct{}{}
				return nil
			})
			c := dial(t, addr)
			// Bounds only a broken server's wait (it hung for ever).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := range 3 { // one stream at a time: each end frees the slot
				st, err := c.OpenStream(ctx, sExit, nil)
				if err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				_, err = recvAll(st)
				var se *StatusError
				switch {
				case !atEnd && (!errors.As(err, &se) || se.Code != StatusInternal):
					t.Fatalf("stream %d: end %v, want 500", i, err)
				case atEnd && err != io.EOF:
					t.Fatalf("stream %d: end %v, want a clean end", i, err)
				}
			}
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 0, true: 3}[atEnd]; len(ran) != want {
				t.Errorf("the handler ran %d times, want %d", len(ran), want)
			}
			if !atEnd && !contains(logs.String(), "stream observer called runtime.Goexit") {
				t.Fatalf("not logged: %s", logs)
			}
		})
	}
}

// A client stream observer that calls runtime.Goexit (t.FailNow) as it
// sees a stream's start ends the goroutine of OpenStream, which never
// gets the stream: the stream's lock is released and its slot freed, so
// the client opens the next stream and closes; with interceptors, whose
// chain cancels the stream it opened, too. Before, the observer ran
// under the stream's lock, which the exit left held: the chain's cancel
// waited for it for ever, and without a chain the slot stayed taken.
func TestClientStreamObserverGoexit(t *testing.T) {
	for _, chained := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "interceptor"}[chained], func(t *testing.T) {
			s, addr, _ := streamServer(t)
			s.HandleStream(77, func(ctx context.Context, init []byte, st *Stream) error { return nil })
			var exit atomic.Bool
			exit.Store(true)
			opts := []ClientOption{WithMaxStreams(1), WithStreamObserver(func(ev StreamEvent) {
				if !ev.End && exit.Load() {
					runtime.Goexit()
				}
			})}
			if chained {
				opts = append(opts, WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
					return open(ctx, method, init)
				}))
			}
			c := dial(t, addr, opts...)
			// Bounds only a broken client's wait (it hung for ever).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			exited := make(chan struct{})
			go func() {
				defer close(exited)
				c.OpenStream(ctx, 77, nil)
				t.Error("OpenStream returned: the observer did not exit")
			}()
			receive(t, "the exit of OpenStream", exited)
			exit.Store(false)
			st, err := c.OpenStream(ctx, 77, nil)
			if err != nil {
				t.Fatalf("the next stream: %v", err)
			}
			if _, err := recvAll(st); err != io.EOF {
				t.Fatalf("the next stream ended with %v", err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A server observer that calls runtime.Goexit as its read loop reports a
// call or a stream open answered without a handler (here a method it
// has none for) ends the read loop: the connection closes, so the call
// fails at once instead of waiting for ever, another connection is
// served, and Shutdown returns. Before, the connection hung, and
// Shutdown with it.
func TestReadLoopObserverGoexit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "call", true: "stream"}[stream], func(t *testing.T) {
			const unknown = 99
			s, addr, logs := streamServer(t,
				WithObserver(func(ev CallEvent) {
					if ev.Method == unknown {
						runtime.Goexit()
					}
				}),
				WithStreamObserver(func(ev StreamEvent) {
					if ev.Method == unknown {
						runtime.Goexit()
					}
				}))
			// Bounds only a broken server's wait (it hung for ever).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := dial(t, addr)
			var err error
			if stream {
				var st *Stream
				if st, err = c.OpenStream(ctx, unknown, nil); err == nil {
					_, err = recvAll(st)
				}
			} else {
				_, err = c.Call(ctx, unknown, nil, nil)
			}
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("the call or stream the observer exits for: %v, want ErrClosed", err)
			}
			if out, err := dial(t, addr).Call(ctx, mEcho, []byte("next"), nil); err != nil || string(out) != "next" {
				t.Fatalf("a call on another connection: %q %v", out, err)
			}
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if !contains(logs.String(), "observer called runtime.Goexit") {
				t.Fatalf("not logged: %s", logs)
			}
		})
	}
}

// A client stream observer that calls runtime.Goexit (t.FailNow) as the
// client's read loop reports a stream's end (the server's end frame) ends
// the read loop: the connection is closed, so a call waiting on it, and
// the calls after, fail with ErrClosed instead of waiting for ever, the
// exit is logged, and Close returns. The same when the exit comes as the
// connection's close reports the end of the streams still open: the
// socket is closed all the same, and every stream ends. Before, the
// connection was left open and unread.
func TestClientStreamObserverGoexitAtEnd(t *testing.T) {
	for _, atClose := range []bool{false, true} {
		t.Run(map[bool]string{false: "server's end", true: "connection's close"}[atClose], func(t *testing.T) {
			logs := defaultLog(t)
			s, addr, _ := streamServer(t)
			release := make(chan struct{})
			opened := make(chan struct{})
			s.HandleStream(77, func(ctx context.Context, init []byte, st *Stream) error {
				if atClose {
					<-ctx.Done()
					return nil
				}
				// The end, at which the observer exits and the connection
				// closes, once OpenStream returned: one still under way
				// (its writer yet to see that the open left) fails with
				// that close.
				select {
				case <-opened:
				case <-ctx.Done():
				}
				return nil
			})
			s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				<-release
				return append(resp, req...), nil
			})
			defer close(release)
			c := dial(t, addr, WithStreamObserver(func(ev StreamEvent) {
				if ev.End {
					runtime.Goexit()
				}
			}))
			// Bounds only a broken client's wait (it hung for ever).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			calls := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mSlow, []byte("x"), nil)
				calls <- err
			}()
			var others []*Stream
			if atClose {
				for range 3 {
					st, err := c.OpenStream(ctx, 77, nil)
					if err != nil {
						t.Fatal(err)
					}
					others = append(others, st)
				}
				closed := make(chan struct{})
				go func() {
					defer close(closed)
					c.Close() // its goroutine runs the observer, which exits
				}()
				receive(t, "the end of the goroutine that closed the client", closed)
			} else {
				if _, err := c.OpenStream(ctx, 77, nil); err != nil {
					t.Fatal(err)
				}
				close(opened)
			}
			if err := receive(t, "the call waiting on the connection", calls); !errors.Is(err, ErrClosed) {
				t.Fatalf("the call waiting on the connection: %v, want ErrClosed", err)
			}
			for i, st := range others {
				if _, err := recvAll(st); !errors.Is(err, ErrClosed) {
					t.Fatalf("stream %d: %v, want ErrClosed", i, err)
				}
			}
			if _, err := c.Call(ctx, mEcho, nil, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("a call after: %v, want ErrClosed", err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !atClose && !contains(logs.String(), "stream observer called runtime.Goexit") {
				t.Fatalf("not logged: %s", logs)
			}
		})
	}
}
