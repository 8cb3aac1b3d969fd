package rpc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wantCall is what a client's observer must report for one call.
type wantCall struct {
	method, status uint32
	in, out        int
	err            error // the event's Err matches it (errors.Is); nil: none unless status is not 200
}

// span bounds an event in time: it started by sent (the Send had
// returned) and ended no earlier than waited (its Wait or Release had
// begun). The zero span bounds nothing.
type span struct{ sent, waited time.Time }

// promiseRig is a client with an observer on a pipelining server (see
// pipelineServer) whose mLookup first calls gate.
type promiseRig struct {
	c   *Client
	log *eventLog
	ctx context.Context
}

func newPromiseRig(t *testing.T, gate func() error) *promiseRig {
	cl, _ := pipelineServer(t, gate)
	log := &eventLog{}
	return &promiseRig{c: dial(t, cl.Addr().String(), WithObserver(log.observe)), log: log, ctx: context.Background()}
}

// held is a gate that holds mLookup until the test ends.
func held(t *testing.T) func() error {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the server's Close: registered after it
	return func() error { <-release; return nil }
}

// send sends mLookup("k") and returns its promise, failing the test on
// an error.
func (r *promiseRig) send(t *testing.T) Promise {
	t.Helper()
	p, err := r.c.Send(r.ctx, mLookup, []byte("k"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wait waits for p and returns the span of its event.
func (r *promiseRig) wait(ctx context.Context, p Promise, sent time.Time) span {
	waited := time.Now()
	p.Wait(ctx)
	return span{sent, waited}
}

// lookup is the event of a Send of mLookup("k") answered "id:k".
var lookup = wantCall{method: mLookup, status: StatusOK, in: len("id:k"), out: 1}

// A client's observer sees every call on the wire once, promise calls
// included: a Promise.Call as it returns, a promise of Send or
// Promise.Send as its Wait returns (started at the Send) or at its
// Release, a Send that fails as it fails. Each row drives one path and
// returns the spans of its events, in their order (nil: none checked).
func TestClientObserverSeesPromiseCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gate  func(t *testing.T) func() error
		drive func(t *testing.T, r *promiseRig) []span
		want  []wantCall
	}{{
		name: "Send, Wait: 200",
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			return []span{r.wait(r.ctx, p, time.Now())}
		},
		want: []wantCall{lookup},
	}, {
		name: "Send, Wait: an error answer",
		gate: func(*testing.T) func() error { return func() error { return Errorf(409, "conflict") } },
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			return []span{r.wait(r.ctx, p, time.Now())}
		},
		want: []wantCall{{method: mLookup, status: 409, in: len("conflict"), out: 1}},
	}, {
		name: "Send, Wait whose ctx ends first",
		gate: held,
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			return []span{r.wait(ctx, p, time.Now())}
		},
		want: []wantCall{{method: mLookup, out: 1, err: context.Canceled}},
	}, {
		name: "Send, Release",
		gate: held,
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent, released := time.Now(), time.Now()
			p.Release()
			return []span{{sent, released}}
		},
		want: []wantCall{{method: mLookup, out: 1, err: ErrPromiseReleased}},
	}, {
		name: "Send, Wait, then Wait and Release again: one event",
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			s := r.wait(r.ctx, p, time.Now())
			if _, err := p.Wait(r.ctx); err != errNoPromise {
				t.Errorf("second Wait: %v", err)
			}
			p.Release()
			return []span{s}
		},
		want: []wantCall{lookup},
	}, {
		name: "Send fails: ctx done",
		drive: func(t *testing.T, r *promiseRig) []span {
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			if _, err := r.c.Send(ctx, mLookup, []byte("k"), nil); err != context.Canceled {
				t.Fatalf("Send: %v", err)
			}
			return nil
		},
		want: []wantCall{{method: mLookup, err: context.Canceled}}, // nothing sent
	}, {
		name: "Send fails: client closed",
		drive: func(t *testing.T, r *promiseRig) []span {
			r.c.Close()
			if _, err := r.c.Send(r.ctx, mLookup, []byte("k"), nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("Send: %v", err)
			}
			return nil
		},
		want: []wantCall{{method: mLookup, err: ErrClosed}}, // nothing sent
	}, {
		name: "Promise.Call: 200",
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			if out, err := p.Call(r.ctx, mFetch, nil); err != nil || string(out) != "fetched(id:k)" {
				t.Fatalf("Promise.Call: %q %v", out, err)
			}
			return []span{{}, r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{{method: mFetch, status: StatusOK, in: len("fetched(id:k)")}, lookup},
	}, {
		name: "Promise.Call on a failed call: 400",
		gate: func(*testing.T) func() error { return func() error { return Errorf(409, "conflict") } },
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			if _, err := p.Call(r.ctx, mFetch, nil); Code(err) != StatusBadRequest {
				t.Fatalf("Promise.Call: %v", err)
			}
			return []span{{}, r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{
			{method: mFetch, status: StatusBadRequest, in: len("promise target failed or unknown")},
			{method: mLookup, status: 409, in: len("conflict"), out: 1},
		},
	}, {
		name: "Promise.Call fails: client closed",
		gate: held,
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			r.c.Close()
			if _, err := p.Call(r.ctx, mFetch, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("Promise.Call: %v", err)
			}
			return []span{{}, r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{{method: mFetch, err: ErrClosed}, {method: mLookup, out: 1, err: ErrClosed}},
	}, {
		name: "Promise.Send, Wait",
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			q, err := p.Send(r.ctx, mWrap, nil)
			if err != nil {
				t.Fatal(err)
			}
			sentQ := time.Now()
			return []span{r.wait(r.ctx, q, sentQ), r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{{method: mWrap, status: StatusOK, in: len("[id:k]")}, lookup},
	}, {
		name: "Promise.Send, Release",
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			q, err := p.Send(r.ctx, mWrap, nil)
			if err != nil {
				t.Fatal(err)
			}
			sentQ, released := time.Now(), time.Now()
			q.Release()
			return []span{{sentQ, released}, r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{{method: mWrap, err: ErrPromiseReleased}, lookup},
	}, {
		name: "Promise.Send fails: client closed",
		gate: held,
		drive: func(t *testing.T, r *promiseRig) []span {
			p := r.send(t)
			sent := time.Now()
			r.c.Close()
			if _, err := p.Send(r.ctx, mWrap, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("Promise.Send: %v", err)
			}
			return []span{{}, r.wait(r.ctx, p, sent)}
		},
		want: []wantCall{{method: mWrap, err: ErrClosed}, {method: mLookup, out: 1, err: ErrClosed}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			gate := func() error { return nil }
			if tc.gate != nil {
				gate = tc.gate(t)
			}
			r := newPromiseRig(t, gate)
			spans := tc.drive(t, r)
			// Each event is reported before its call returns.
			evs := r.log.take()
			if len(evs) != len(tc.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.want), evs)
			}
			for i, w := range tc.want {
				var s span
				if i < len(spans) {
					s = spans[i]
				}
				checkClientEvent(t, evs[i], w, r.c.peer.String(), s)
			}
		})
	}
}

// checkClientEvent fails the test unless ev is w, seen by a client whose
// peer is peer, within s.
func checkClientEvent(t *testing.T, ev CallEvent, w wantCall, peer string, s span) {
	t.Helper()
	if !ev.Client || ev.Method != w.method || ev.Status != w.status || ev.BytesIn != w.in || ev.BytesOut != w.out {
		t.Errorf("event %+v, want %+v", ev, w)
	}
	switch {
	case w.err != nil && !errors.Is(ev.Err, w.err):
		t.Errorf("event error %v, want %v", ev.Err, w.err)
	case w.err == nil && (ev.Err == nil) != (w.status == StatusOK):
		t.Errorf("event error %v with status %d", ev.Err, ev.Status)
	case w.status != StatusOK && w.status != 0 && Code(ev.Err) != w.status:
		t.Errorf("event error %v, want a *StatusError of %d", ev.Err, w.status)
	}
	if ev.Start.IsZero() || ev.Duration < 0 || ev.Peer == nil || ev.Peer.String() != peer {
		t.Errorf("event start %v, duration %v, peer %v (want %s)", ev.Start, ev.Duration, ev.Peer, peer)
	}
	if !s.sent.IsZero() && (ev.Start.After(s.sent) || ev.Start.Add(ev.Duration).Before(s.waited)) {
		t.Errorf("event from %v for %v: not begun by the Send's return (%v) or ended before the Wait or Release (%v)",
			ev.Start, ev.Duration, s.sent, s.waited)
	}
}

// A panic in a client's observer on a promise call is recovered and
// logged: the caller of Send, Wait, Release and Promise.Call gets its
// result as if the observer had returned.
func TestClientObserverPanicOnPromise(t *testing.T) {
	log := defaultLog(t)
	var seen atomic.Int64
	cl, _ := pipelineServer(t, func() error { return nil })
	c := dial(t, cl.Addr().String(), WithObserver(func(ev CallEvent) {
		seen.Add(1)
		panic("promise observer")
	}))
	ctx := context.Background()
	p, err := c.Send(ctx, mLookup, []byte("k"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Call(ctx, mFetch, nil); err != nil || string(out) != "fetched(id:k)" {
		t.Fatalf("Promise.Call: %q %v", out, err)
	}
	if out, err := p.Wait(ctx); err != nil || string(out) != "id:k" {
		t.Fatalf("Wait: %q %v", out, err)
	}
	q, err := c.Send(ctx, mLookup, []byte("q"), nil)
	if err != nil {
		t.Fatal(err)
	}
	q.Release()
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Send(done, mLookup, nil, nil); err != context.Canceled {
		t.Fatalf("Send on a done ctx: %v", err)
	}
	if n := seen.Load(); n != 4 {
		t.Errorf("the observer ran %d times, want 4", n)
	}
	if l := log.String(); strings.Count(l, "rpc: observer panic") != 4 || !strings.Contains(l, "promise observer") {
		t.Errorf("client log lacks the observer's panics: %.500s", l)
	}
	waitIdle(t, c)
	if out, err := c.Call(ctx, mLookup, []byte("z"), nil); err != nil || string(out) != "id:z" {
		t.Fatalf("next call: %q %v", out, err)
	}
}
