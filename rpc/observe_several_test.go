package rpc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// seenLog records the events observers saw, each as "tag side what".
type seenLog struct {
	mu  sync.Mutex
	all []string
}

func (l *seenLog) add(tag string, client bool, what string) {
	side := "server"
	if client {
		side = "client"
	}
	l.mu.Lock()
	l.all = append(l.all, tag+" "+side+" "+what)
	l.mu.Unlock()
}

// of returns the entries of side, in order.
func (l *seenLog) of(side string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []string
	for _, e := range l.all {
		if strings.Contains(e, " "+side+" ") {
			b = append(b, e)
		}
	}
	return strings.Join(b, ", ")
}

func (l *seenLog) observer(tag string) Observer {
	return func(ev CallEvent) { l.add(tag, ev.Client, fmt.Sprintf("call %d", ev.Status)) }
}

func (l *seenLog) streamObserver(tag string) StreamObserver {
	return func(ev StreamEvent) {
		what := "start"
		if ev.End {
			what = fmt.Sprintf("end %d", ev.Status)
		}
		l.add(tag, ev.Client, what)
	}
}

// Every observer and stream observer given to a client or a server sees
// every event, in the order given, as gRPC-go calls every stats handler
// given: a second one used to replace the first, and a nil one to remove
// it. A nil one is ignored; a panic in one keeps the event from none of
// the others.
func TestSeveralObservers(t *testing.T) {
	var l seenLog
	panicky := func(CallEvent) { panic("observer a") }
	panickyS := func(StreamEvent) { panic("stream observer a") }
	opts := []Option{
		WithObserver(l.observer("a")), WithObserver(panicky), WithObserver(nil), WithObserver(l.observer("b")),
		WithStreamObserver(l.streamObserver("a")), WithStreamObserver(nil), WithStreamObserver(panickyS),
		WithStreamObserver(l.streamObserver("b")),
	}
	var so []ServerOption
	var co []ClientOption
	for _, o := range opts {
		so, co = append(so, o), append(co, o)
	}
	_, addr, logs := streamServer(t, so...)
	c := dial(t, addr, co...)
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	// The server reports a call before it answers it, the client as the
	// call returns.
	for side, want := range map[string]string{
		"client": "a client call 200, b client call 200",
		"server": "a server call 200, b server call 200",
	} {
		if got := l.of(side); got != want {
			t.Errorf("%s events: %s, want %s", side, got, want)
		}
	}
	if n := strings.Count(logs.String(), "rpc: observer panic"); n != 1 {
		t.Errorf("%d server observer panics logged, want 1:\n%s", n, logs)
	}
	l.mu.Lock()
	l.all = nil
	l.mu.Unlock()
	st, err := c.OpenStream(context.Background(), sStatus, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); Code(err) != 418 {
		t.Fatalf("stream ended with %v, want 418", err)
	}
	want := map[string]string{
		"client": "a client start, b client start, a client end 418, b client end 418",
		"server": "a server start, b server start, a server end 418, b server end 418",
	}
	// The server reports a stream's end after it queued the end, the
	// client's read loop after Recv may have returned it: awaited.
	for _, side := range []string{"client", "server"} {
		await(t, side+"'s stream events", func() bool { return l.of(side) == want[side] })
	}
	if n := strings.Count(logs.String(), "rpc: stream observer panic"); n != 2 {
		t.Errorf("%d server stream observer panics logged, want 2:\n%s", n, logs)
	}
}

// One observer is the observer itself, called directly; none is nil.
func TestJoinObserversOneOrNone(t *testing.T) {
	var l seenLog
	one, oneS := l.observer("a"), l.streamObserver("a")
	o := buildClientOptions([]ClientOption{WithObserver(one), WithStreamObserver(oneS), WithObserver(nil)})
	if fmt.Sprintf("%p", o.observer) != fmt.Sprintf("%p", one) || fmt.Sprintf("%p", o.streamObserver) != fmt.Sprintf("%p", oneS) {
		t.Error("a lone observer is not called directly")
	}
	so := buildServerOptions([]ServerOption{WithObserver(nil), WithStreamObserver(nil)})
	if so.observer != nil || so.streamObserver != nil {
		t.Error("nil observers given make an observer")
	}
}
