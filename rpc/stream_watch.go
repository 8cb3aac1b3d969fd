package rpc

import "context"

// A client's stream must end when its ctx ends, whether or not anyone
// waits in Send or Recv: its cancel tells the server and frees its place
// (WithMaxStreams). A call needs no such hook while nobody waits for it,
// but a stream does, and context.AfterFunc, the hook the context package
// offers, allocates its record and a stop function (3 allocations per
// open). Streams that share their ctx (an application's ctx for its
// streams, a request's for the several it opens) register instead with
// one watch of that ctx, as calls that share a ctx do (ctxwatch.go): the
// client keeps at most one such watch for its streams, apart from its
// calls' (a long stream registered with it must not keep the calls' watch
// from moving to another ctx), made once streamWatchAfter opens in a row
// came with the same ctx's Done channel, and replaced only once no stream
// is registered with it. A stream with a ctx of its own (the usual
// request-scoped one) still gets an AfterFunc: the context package has no
// hook for one ctx's end that costs nothing.

// streamWatchAfter is how many opens in a row with the same Done channel
// make the client watch that channel's ctx for its streams. A watch costs
// what one AfterFunc costs, so a few opens are enough evidence.
const streamWatchAfter = 8

// streamWatchFor registers a stream opened with ctx (whose Done is done)
// with the client's stream watch of that ctx, making one when the opens
// gave evidence (see streamWatchAfter) and the client has no stream
// watch, or an idle one. nil: the stream is not watched and needs an
// AfterFunc (always when ended: the ctx ended during the open's write).
func (c *Client) streamWatchFor(ctx context.Context, done <-chan struct{}, ended bool) *ctxWatch {
	switch ctx.(type) {
	case *job, *streamCtx:
		// A handler's ctx is one call's or one stream's (see
		// watchFor): never shared.
		return nil
	}
	t := &c.streams
	id := chanID(done)
	w := t.watch.Load()
	if w == nil || w.id != id {
		if ended || !t.watchWorthy(id) || (w != nil && w.refs.Load() != 0) {
			return nil
		}
		if w = c.newStreamWatch(ctx, done, w); w == nil {
			return nil
		}
	}
	if ended || !w.enter() {
		return nil
	}
	return w
}

// watchWorthy counts an open with the Done channel id and reports
// whether streamWatchAfter opens in a row had it.
func (t *streamSet) watchWorthy(id uintptr) bool {
	if t.cand.Load() != id {
		t.cand.Store(id)
		t.candHits.Store(1)
		return false
	}
	if t.candHits.Load() >= streamWatchAfter {
		return true // saturated: no count that wraps
	}
	return t.candHits.Add(1) >= streamWatchAfter
}

// newStreamWatch replaces old (nil: none) with a watch of ctx for the
// client's streams; nil when old has streams registered or another open
// replaced it first, or the client is closed.
func (c *Client) newStreamWatch(ctx context.Context, done <-chan struct{}, old *ctxWatch) *ctxWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &c.streams
	if c.closed || t.watch.Load() != old || (old != nil && !old.retire()) {
		return nil
	}
	if old != nil {
		old.stop()
	}
	w := &ctxWatch{done: done, id: chanID(done)}
	t.watch.Store(w)
	w.stop = context.AfterFunc(ctx, func() { c.streamCtxEnded(w) })
	return w
}

// setWatch records that s, a client's stream whose open was written, is
// registered with w (streamWatchFor). A stream that ended meanwhile (the
// read loop saw the server's end: stopCtx) ends its registration here,
// and so does one whose ctx ended before streamCtxEnded could see it
// registered, which it then cancels, as its AfterFunc would have.
func (s *Stream) setWatch(w *ctxWatch) {
	s.watch.Store(w)
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	// stopCtx sets stopped before it swaps the watch out, and
	// streamCtxEnded sets fired before it looks for the streams: one of
	// each pair sees the other.
	if (stopped || w.fired.Load()) && s.watch.CompareAndSwap(w, nil) {
		w.leave()
		if !stopped {
			go s.clientCancel(noCtx, s.ctx.Err())
		}
	}
}

// streamCtxEnded runs when the ctx w watches has ended: it cancels the
// streams registered with w, as each one's AfterFunc would have, and
// drops w.
func (c *Client) streamCtxEnded(w *ctxWatch) {
	w.fired.Store(true)
	t := &c.streams
	var ended []*Stream // once per ctx's end, not per stream: may allocate
	t.mu.Lock()
	for _, s := range t.m {
		if s.watch.Load() == w && s.watch.CompareAndSwap(w, nil) {
			ended = append(ended, s)
		}
	}
	t.mu.Unlock()
	for _, s := range ended {
		w.leave()
		s.clientCancel(noCtx, s.ctx.Err())
	}
	// Dropped even while streams are registered: each was canceled above
	// or sees fired (setWatch).
	c.mu.Lock()
	if t.watch.Load() == w {
		w.retire()
		t.watch.Store(nil)
	}
	c.mu.Unlock()
}
