package rpc

import (
	"context"
	"errors"
	"runtime"
	"testing"

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
