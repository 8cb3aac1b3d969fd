package rpc

import (
	"context"
	"errors"
	"sync"
	"testing"
)

type eventLog struct {
	mu  sync.Mutex
	evs []CallEvent
}

func (l *eventLog) observe(ev CallEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) take() []CallEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	l.evs = nil
	return evs
}

// The observer sees, on both sides over TCP, the method, status, payload
// bytes each way, duration and peer of each call.
func TestObserver(t *testing.T) {
	var srv, cli eventLog
	s, addr, _ := testServer(t, WithObserver(srv.observe))
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(409, "conflict!")
	})
	block := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-block
		return resp, nil
	})
	c := dial(t, addr, WithObserver(cli.observe))
	ctx := context.Background()
	if _, err := c.Call(ctx, mEcho, make([]byte, 100), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, mFail, []byte("abc"), nil); Code(err) != 409 {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, 77, nil, nil); Code(err) != StatusNotFound {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := c.Call(cctx, mSlow, nil, nil)
		done <- err
	}()
	await(t, "s.Stats().Calls == 4", func() bool { return s.Stats().Calls == 4 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v", err)
	}
	close(block)
	// A call whose ctx ended before it was sent sends nothing.
	if _, err := c.Call(cctx, mEcho, []byte("never"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("call under an ended ctx: %v", err)
	}
	await(t, "4 server events", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.evs) == 4 })

	ce := cli.take()
	if len(ce) != 5 {
		t.Fatalf("client saw %d events, want 5: %+v", len(ce), ce)
	}
	want := []struct {
		method, status uint32
		out, in        int
	}{{mEcho, 200, 100, 100}, {mFail, 409, 3, 9}, {77, 404, 0, len("no such method")}, {mSlow, 0, 0, 0}, {mEcho, 0, 0, 0}}
	for i, w := range want {
		e := ce[i]
		if !e.Client || e.Method != w.method || e.Status != w.status || e.BytesOut != w.out || e.BytesIn != w.in {
			t.Errorf("client event %d: %+v, want %+v", i, e, w)
		}
		if e.Start.IsZero() || e.Duration < 0 || e.Peer == nil || e.Peer.String() != addr {
			t.Errorf("client event %d: start %v duration %v peer %v", i, e.Start, e.Duration, e.Peer)
		}
		if (e.Err == nil) != (w.status == 200) {
			t.Errorf("client event %d: err %v", i, e.Err)
		}
	}
	if !errors.Is(ce[3].Err, context.Canceled) {
		t.Errorf("canceled call's event: %v", ce[3].Err)
	}
	se := srv.take()
	// The 404 ran no handler, and is seen all the same (Duration 0).
	wantS := []struct {
		method, status uint32
		in, out        int
	}{{mEcho, 200, 100, 100}, {mFail, 409, 3, 9}, {77, 404, 0, len(NoSuchMethod)}, {mSlow, 200, 0, 0}}
	if len(se) != 4 {
		t.Fatalf("server saw %d events: %+v", len(se), se)
	}
	for i, w := range wantS {
		e := se[i]
		if e.Client || e.Method != w.method || e.Status != w.status || e.BytesIn != w.in || e.BytesOut != w.out || e.Err != nil {
			t.Errorf("server event %d: %+v, want %+v", i, e, w)
		}
		if e.Start.IsZero() || e.Duration < 0 || e.Peer == nil || e.Peer.String() != c.nc.LocalAddr().String() {
			t.Errorf("server event %d: start %v duration %v peer %v", i, e.Start, e.Duration, e.Peer)
		}
	}
}
