package rpc

import (
	"context"
	"errors"
	"testing"
)

// Streams opened one after another with one ctx register with the
// client's watch of that ctx (no AfterFunc each); its end cancels every
// one of them, as their AfterFuncs did: Recv returns the ctx's error, the
// server's handlers see their ctx end, and the streams leave the set. A
// stream opened with a ctx of its own still ends with it. The watch of
// the streams is not the calls': calls under another shared ctx get
// theirs meanwhile.
func TestStreamWatchCancels(t *testing.T) {
	s, addr, _ := streamServer(t)
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 2 * streamWatchAfter
	var sts []*Stream
	for i := range n {
		st, err := c.OpenStream(ctx, sBlock, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := st.Recv(nil); err != nil || string(m) != "x" {
			t.Fatalf("stream %d: Recv %q %v", i, m, err)
		}
		sts = append(sts, st)
	}
	w := c.streams.watch.Load()
	if w == nil || w.id != chanID(ctx.Done()) {
		t.Fatal("no watch of the streams' shared ctx")
	}
	watched := 0
	for _, st := range sts {
		if st.watch.Load() == w {
			watched++
		}
	}
	if watched < n-streamWatchAfter || int(w.refs.Load()) != watched {
		t.Fatalf("%d of %d streams registered with the watch (%d refs), want at least %d", watched, n, w.refs.Load(), n-streamWatchAfter)
	}
	// A stream with a ctx of its own: an AfterFunc, as before.
	own, ownCancel := context.WithCancel(context.Background())
	st, err := c.OpenStream(own, sBlock, []byte("y"))
	if err != nil {
		t.Fatal(err)
	}
	if st.watch.Load() != nil {
		t.Fatal("a stream with a ctx of its own registered with the watch")
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "y" {
		t.Fatalf("own ctx: Recv %q %v", m, err)
	}
	before := s.Stats().Streams
	ownCancel()
	if _, err := st.Recv(nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("own ctx: Recv %v, want context.Canceled", err)
	}
	cancel()
	for i, st := range sts {
		if _, err := st.Recv(nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("stream %d: Recv after the cancel: %v, want context.Canceled", i, err)
		}
	}
	await(t, "the streams to leave the set", func() bool { return c.Streams() == 0 })
	await(t, "the watch dropped", func() bool { return c.streams.watch.Load() == nil })
	await(t, "the handlers to see their ctx end", func() bool {
		return s.Stats().Streams.Canceled-before.Canceled == n+1
	})
	if r := w.refs.Load(); r > 0 {
		t.Fatalf("%d registrations left on the dropped watch", r)
	}
}
