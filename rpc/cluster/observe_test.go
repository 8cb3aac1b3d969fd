package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// callLog keeps the events of the test's calls (not the health checks).
type callLog struct {
	mu  sync.Mutex
	evs []rpc.CallEvent
}

func (l *callLog) observe(ev rpc.CallEvent) {
	if ev.Method == rpc.HealthMethod {
		return
	}
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *callLog) take() []rpc.CallEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	l.evs = nil
	return evs
}

// An observer given to the connections sees each promise call on the
// wire once, through the cluster's Send as through a connection's: the
// promise when its Wait returns or at its Release, a call pipelined on it
// as it returns. Each row drives one path; its events are checked in
// their order.
func TestSendObservedOnce(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	r.restartWith(rpc.WithPipelining(8))
	var log callLog
	c := dialT(t, "static:///"+r.addr, WithClientOptions(rpc.WithObserver(log.observe)))
	ctx := context.Background()
	type want struct {
		method, status uint32
		in, out        int
		err            error
	}
	for _, tc := range []struct {
		name  string
		drive func(t *testing.T, p rpc.Promise)
		want  []want
	}{{
		name: "Send, Wait",
		drive: func(t *testing.T, p rpc.Promise) {
			if out, err := p.Wait(ctx); err != nil || string(out) != "abc" {
				t.Fatalf("Wait: %q %v", out, err)
			}
		},
		want: []want{{method: mEcho, status: rpc.StatusOK, in: 3, out: 3}},
	}, {
		name:  "Send, Release",
		drive: func(t *testing.T, p rpc.Promise) { p.Release() },
		want:  []want{{method: mEcho, out: 3, err: rpc.ErrPromiseReleased}},
	}, {
		name: "Send, Promise.Call, Wait",
		drive: func(t *testing.T, p rpc.Promise) {
			if out, err := p.Call(ctx, mEcho, nil); err != nil || string(out) != "abc" {
				t.Fatalf("Promise.Call: %q %v", out, err)
			}
			if _, err := p.Wait(ctx); err != nil {
				t.Fatalf("Wait: %v", err)
			}
		},
		want: []want{{method: mEcho, status: rpc.StatusOK, in: 3}, {method: mEcho, status: rpc.StatusOK, in: 3, out: 3}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Send(ctx, mEcho, []byte("abc"), nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.drive(t, p)
			evs := log.take()
			if len(evs) != len(tc.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.want), evs)
			}
			for i, w := range tc.want {
				ev := evs[i]
				if !ev.Client || ev.Method != w.method || ev.Status != w.status || ev.BytesIn != w.in || ev.BytesOut != w.out ||
					(w.err != nil) != (ev.Err != nil) || w.err != nil && !errors.Is(ev.Err, w.err) {
					t.Errorf("event %d: %+v, want %+v", i, ev, w)
				}
			}
		})
	}
}
