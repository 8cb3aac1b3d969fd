package rpc

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// A caller waiting for its answer must wake as well when its ctx ends.
// A select on the slot's channel and ctx.Done() does that, at a price: in
// memory, 64 B calls from 256 callers that share a request-like ctx cost
// 1.35× the CPU of calls whose ctx cannot end (with one P; 1.5× with
// two), most of it in the select, which locks both channels, queues the
// caller on both and, once woken, takes it off the one that did not fire
// (rpc/PERF-HISTORY.md, "Calls with a ctx that can end"). When the callers
// share their ctx (a fan-out of one request's calls, an errgroup, a load
// generator), every one of them queues on the same Done channel.
//
// So the client watches such a shared ctx once, with context.AfterFunc,
// and calls under it wait on their slot's channel alone: when the ctx
// ends, the watch cancels the calls waiting with its Done (ctxEnded),
// those in a select too. A client has at most one watch. It is made for
// a ctx whose Done channel watchAfter calls in a row found in their
// slots' previous calls (a ctx that a request makes a call or a few with
// never gets one: a watch allocates), and replaced only once no call is
// registered with it. Other calls wait in a select, as before. A
// promise's call is never canceled by a watch: its wait has a ctx of its
// own. The watch keeps its ctx (and what the ctx holds) until the ctx
// ends, the client closes, or another shared ctx replaces it.
//
// The watch knows its calls by their Done channel. It relies on what
// context.Context promises: the ctx's AfterFunc runs when that channel
// closes, and a channel with a live registration is not handed to
// another ctx. A server handler's ctx (a job, reused call after call)
// keeps its channel for the job's next call only when no registration
// outlives the call (endDeadline), so a handler that calls with its ctx
// request after request would look like a shared ctx here: a handler's
// own ctx is never watched, and each request's calls end with its
// deadline. (A ctx derived from it, such as WithMetadata's, may be: the
// context package then watches the job's channel itself, which closes
// when the call that has it ends by its deadline.)

// ctxWatch is a client's watch of one ctx's end.
type ctxWatch struct {
	done <-chan struct{} // the watched ctx's Done (kept: id stays its)
	id   uintptr         // chanID(done)
	// refs counts the calls registered; -1 once retired (no call may
	// register any more).
	refs atomic.Int64
	// fired is set when the ctx ended, before the watch looks for the
	// calls to cancel: a call registered after that look cancels itself.
	fired atomic.Bool
	stop  func() bool // context.AfterFunc's; under Client.mu
}

// chanID identifies a Done channel: its address. A slot keeps it, not the
// channel, so that a slot does not keep an ended ctx's channel alive; the
// watch keeps its own channel, so no other channel can have its id.
func chanID(ch <-chan struct{}) uintptr { return *(*uintptr)(unsafe.Pointer(&ch)) }

// enter registers a call with w; false once w is retired.
func (w *ctxWatch) enter() bool {
	for {
		n := w.refs.Load()
		if n < 0 {
			return false
		}
		if w.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// leave ends a registration of enter.
func (w *ctxWatch) leave() { w.refs.Add(-1) }

// retire makes w take no more calls; false when calls are registered.
func (w *ctxWatch) retire() bool { return w.refs.CompareAndSwap(0, -1) }

// watchAfter is how many calls in a row, each in a slot whose previous
// call had the same Done channel, make the client watch that channel's
// ctx. A ctx that a request makes a few calls with one after the other
// does not get a watch (it would allocate one per request); one that
// calls share, fanned out or one after the other, gets one within its
// first watchAfter calls.
const watchAfter = 64

// watchFor registers a call made with ctx (whose Done is done) with the
// client's watch of that ctx, making one when enough calls in a row gave
// evidence that the ctx is shared (sameDone: the call's slot's previous
// call had the same Done; see watchAfter) and the client has no watch,
// an idle one or one whose ctx ended. nil: the call is not watched and
// waits in a select.
func (c *Client) watchFor(ctx context.Context, done <-chan struct{}, sameDone bool) *ctxWatch {
	if _, ok := ctx.(*job); ok {
		// A handler's ctx is one call's, however often its job's Done
		// channel comes round (see endDeadline): it is never shared,
		// and a watch of it would last one request.
		return nil
	}
	id := chanID(done)
	w := c.watch.Load()
	if w == nil || w.id != id {
		if !sameDone || !c.watchWorthy(id) || (w != nil && w.refs.Load() != 0) {
			return nil
		}
		if w = c.newWatch(ctx, done, w); w == nil {
			return nil
		}
	}
	if !w.enter() {
		return nil
	}
	return w
}

// watchWorthy counts a call whose slot's previous call had the same Done
// channel (id), and reports whether watchAfter such calls in a row had
// it.
func (c *Client) watchWorthy(id uintptr) bool {
	if c.cand.Load() != id {
		c.cand.Store(id)
		if c.candHits.Load() != 1 {
			// Mostly 1 already: callers with ctxs of their own take
			// turns here, each resetting the count (a store saved).
			c.candHits.Store(1)
		}
		return false
	}
	if c.candHits.Load() >= watchAfter {
		// Saturated (a busy watch holds the place): no count that
		// wraps round to negative after 2³¹ calls.
		return true
	}
	return c.candHits.Add(1) >= watchAfter
}

// newWatch replaces old (nil: none) with a watch of ctx, whose Done is
// done; nil when old has calls or another caller replaced it first, or
// the client is closed.
func (c *Client) newWatch(ctx context.Context, done <-chan struct{}, old *ctxWatch) *ctxWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.watch.Load() != old || (old != nil && !old.retire()) {
		return nil
	}
	if old != nil {
		old.stop()
	}
	w := &ctxWatch{done: done, id: chanID(done)}
	c.watch.Store(w)
	w.stop = context.AfterFunc(ctx, func() { c.ctxEnded(w) })
	return w
}

// ctxEnded runs when the ctx w watches has ended: it cancels the calls
// waiting under w (slotCanceled: the caller takes it from there, see
// waitWatched) and drops w.
func (c *Client) ctxEnded(w *ctxWatch) {
	w.fired.Store(true)
	if t := c.table.Load(); t != nil {
		for _, s := range *t {
			v := s.st.Load()
			if v&slotStateMask != slotWaiting {
				continue
			}
			// The call's pid first, then its Done: the pair is that
			// call's, or a later one's (then the state changed, and the
			// compare-and-swap fails).
			pid := uint32(v >> 32)
			if s.donePid.Load() != pid || s.doneID.Load() != w.id {
				continue
			}
			if s.st.CompareAndSwap(v, v&^slotStateMask|slotCanceled) {
				s.ch <- struct{}{}
			}
		}
	}
	// Dropped even while calls are registered: each was canceled above
	// or sees fired, and the ctx's AfterFunc has run (nothing to stop).
	// Kept, the watch would hold the ended ctx until another shared ctx
	// replaced it.
	c.mu.Lock()
	if c.watch.Load() == w {
		w.retire()
		c.watch.Store(nil)
	}
	c.mu.Unlock()
}

// waitWatched is wait for a call registered with w (watchFor).
func (c *Client) waitWatched(ctx context.Context, w *ctxWatch, s *slot, resp []byte) ([]byte, error) {
	if w.fired.Load() && c.abandonCanceled(ctx, s) {
		// The ctx ended, and the watch may have looked before this call
		// was waiting: it cancels itself.
		w.leave()
		return resp, ctx.Err()
	}
	<-s.ch
	w.leave()
	return c.taken(ctx, s, resp)
}

// stopWatch stops the client's watch (the client is closing). Called with
// c.mu held.
func (c *Client) stopWatch() {
	if w := c.watch.Load(); w != nil {
		w.stop()
		c.watch.Store(nil)
	}
}
