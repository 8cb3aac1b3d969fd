package rpc

import (
	"context"
	"errors"
)

// Client-side promise pipelining (docs/wire.md §6).
//
// [Client.Send] sends a call without waiting for its answer and returns a
// [Promise]. [Promise.Call] (or [Promise.Send]) sends a second call whose
// input is the first call's answer: the request carries the promise's id
// as its target and an empty payload, and a server with [WithPipelining]
// runs it on the first call's OK body once that is ready, on its own
// side. Both requests leave before either answer comes back: one round
// trip instead of two. A server without pipelining refuses the second
// call with 400; so does one whose first call failed (the second call
// does not run).
//
//	p, err := c.Send(ctx, mLookup, req, nil)   // answer not awaited yet
//	if err != nil { ... }
//	out, err := p.Call(ctx, mFetch, nil)       // runs on Lookup's answer
//	first, err1 := p.Wait(ctx)                 // or p.Release()
//
// A promise holds its call's slot until [Promise.Wait] takes the answer
// or [Promise.Release] drops it: call exactly one of them, once, for
// every promise Send returned (a pending promise counts toward
// [WithMaxPending]). Pipelined calls may be sent on a promise at any time
// before or after that, as long as the server still remembers the call
// (it keeps the last WithPipelining table size calls per connection).

// Promise is a call sent with [Client.Send] (or a Sender such as
// rpc/cluster's Client) whose answer
// has not been taken yet. It is a small value: copy it freely, but call
// Wait or Release once in all: of several calls, on any copies and from
// any goroutines, at once or not, the first is served and the others are
// refused (Wait returns an error, Release does nothing). A promise
// neither waited for nor released keeps its call's place in the
// client's table of pending calls for the life of the connection
// (counted by [Client.Pending] and [Client.Promises], and toward
// [WithMaxPending]). The zero Promise is invalid (its methods return an
// error).
type Promise struct {
	c   *Client
	s   *slot
	pid uint32
	// method, start (monoNow at Send) and sent (the request payload's
	// length) are for the observer's event at Wait or Release; set only
	// on a client with an observer.
	method uint32
	resp   []byte
	start  int64
	sent   uint32
	// epoch is the slot's count of generation wraps at Send: with pid, it
	// names the slot's use (see owned).
	epoch uint32
	// bp is the pooled buffer of a promise of SendPooled: *bp is the
	// request, resp its spare room. WaitPooled hands it back, Release
	// puts it in the pool; nil for other promises.
	bp *[]byte
}

// Sender sends calls without waiting for their answers (promise
// pipelining); *Client and rpc/cluster's Client implement it. Generated
// clients use it for their Send<Method> methods.
type Sender interface {
	// Send sends a call and returns its promise; see Client.Send.
	Send(ctx context.Context, method uint32, req, resp []byte) (Promise, error)
}

var _ Sender = (*Client)(nil)

// ErrNoSender is returned by a generated client's Send<Method> when its
// Caller cannot send without waiting (it is not a [Sender]).
var ErrNoSender = errors.New("rpc: the Caller does not implement rpc.Sender (promise pipelining)")

// errNoPromise is returned by the methods of a zero Promise, and by Wait
// or Release on a promise already waited for or released.
var errNoPromise = errors.New("rpc: invalid promise (zero, or already waited for or released)")

// ErrPromiseReleased is the Err of a client's [CallEvent] for a promise
// given up with [Promise.Release]: the call was sent and its answer, if
// one came, was dropped unread, by the caller's choice rather than
// because the call failed (its Status is 0). No method returns it.
var ErrPromiseReleased = errors.New("rpc: promise released without taking its answer")

// Send sends a call like [Client.Call] but does not wait for its answer:
// it returns once the request is queued (written, or being written). The
// answer will be appended to resp, which belongs to the promise until
// Wait returns it; req is not kept. ctx bounds the sending (and its
// deadline, cap and metadata go into the request as with Call); the wait
// has its own ctx (see [Promise.Wait]). When ctx ends during the write
// the call is abandoned and Send returns ctx's error (the request may
// still reach the server).
//
// The client's interceptors ([WithClientInterceptors]) do not run for a
// call sent with Send, nor for one pipelined on its promise
// ([Promise.Call], [Promise.Send]): the request carries the cap and
// metadata of the ctx given here ([WithCap], [WithMetadata]) and nothing
// else, so what an interceptor adds to its calls (an auth token, say)
// must be added to this ctx by the caller (an interceptor returns the
// answer, which Send does not wait for: see [ClientInterceptor] for why
// no promise call runs them). The observer ([WithObserver])
// sees the call once: when Wait returns (Start at Send, Duration until
// the answer, or ctx's error), at Release (Status 0, Err
// [ErrPromiseReleased]), or here when Send fails.
func (c *Client) Send(ctx context.Context, method uint32, req, resp []byte) (Promise, error) {
	return c.sendPromise(ctx, method, 0, req, resp)
}

// sendPromise is Send of a call pipelined on target (0: none). With an
// observer the promise records what its event at Wait or Release needs,
// and a send that fails is reported at once, as unary reports a call
// that fails before it is sent; without one, that costs a nil check (on
// a local: made twice, rather than a call level more).
func (c *Client) sendPromise(ctx context.Context, method, target uint32, req, resp []byte) (Promise, error) {
	obs := c.opts.observer
	var start int64
	if obs != nil {
		start = monoNow()
	}
	// Not watchDone: the promise's wait has a ctx of its own, which
	// the end of ctx must not cancel.
	s, err := c.send(ctx, ctx.Done(), nil, method, target, req, resp, false)
	sent := 0 // nothing when send failed
	if err == nil {
		sent = len(req)
		if err = ctx.Err(); err != nil {
			c.drop(s, s.pid)
		}
	}
	if err != nil {
		if obs != nil {
			observeCall(obs, c.clientEvent(method, start, sent, resp, resp, err), nil)
		}
		return Promise{}, err
	}
	c.promises.Add(1)
	s.spent.Store(0) // a pid 65,536 uses old may be this one's
	p := Promise{c: c, s: s, pid: s.pid, resp: resp, epoch: s.epoch.Load()}
	if obs != nil {
		p.method, p.start, p.sent = method, start, uint32(len(req))
	}
	return p, nil
}

// ID returns the promise id of the call: what a pipelined call carries as
// its target. 0 for the zero Promise.
func (p Promise) ID() uint32 { return p.pid }

// Client returns the connection the call went out on; calls pipelined on
// the promise must go out on the same one (Promise.Call sees to that).
func (p Promise) Client() *Client { return p.c }

// owned reports whether p's slot still serves p's call (best effort: it
// catches a second Wait or Release after the slot was reused, even 65,536
// uses later, when the slot's pid is p's again: the epoch differs). A
// slot freed by p's Wait and not yet reused keeps p's pid and the
// delivered state (see slotIdle): owned is true, and spend refuses it
// (spent is p's pid).
func (p Promise) owned() bool {
	if p.c == nil {
		return false
	}
	v := p.s.st.Load()
	if uint32(v>>32) != p.pid || p.s.epoch.Load() != p.epoch {
		return false
	}
	st := v & slotStateMask
	return st == slotWaiting || st == slotDelivered
}

// spend claims p for its one Wait or Release: false when one began
// already, on this copy of p or another, in this goroutine or another
// (two goroutines waiting for one signal would leave one of them waiting
// on the slot's next call, or for ever). Called after owned, and checks
// it again once claimed: between the two, another copy's Wait may have
// taken the answer and the slot gone to the client's next promise, whose
// Send cleared spent; the claim would then take that promise's call (its
// answer, and a buffer of SendPooled handed back twice).
func (p Promise) spend() bool {
	v := p.s.spent.Load()
	if v == p.pid || !p.s.spent.CompareAndSwap(v, p.pid) {
		return false
	}
	if p.owned() {
		return true
	}
	// The slot serves another call: leave its spent as it was (that
	// call's pid may be p's, 65,536 uses later).
	p.s.spent.CompareAndSwap(p.pid, v)
	return false
}

// Wait waits for the call's answer and returns the resp given to Send
// with the answer body appended, with the errors of [Client.Call]. When
// ctx ends first the call is abandoned (its late answer is dropped) and
// Wait returns ctx's error. Either way the promise is spent.
//
// For a promise of [SendPooled] (a generated client's Send<Method>), the
// answer is in a pooled buffer that Wait does not give back to the pool
// (the garbage collector takes it): see [Promise.WaitPooled].
func (p Promise) Wait(ctx context.Context) ([]byte, error) {
	out, _, err := p.WaitPooled(ctx)
	return out, err
}

// SendPooled is for generated code: s.Send of the request buf, encoded
// into *bp (bp from [GetBuffer]; buf may have grown out of it), whose
// answer is appended to buf's spare room. The promise owns bp until
// [Promise.WaitPooled] hands it back or [Promise.Release] puts it in the
// pool; when the send fails, SendPooled puts it back at once. bp and buf
// must not be used afterwards.
func SendPooled(ctx context.Context, s Sender, method uint32, bp *[]byte, buf []byte) (Promise, error) {
	p, err := s.Send(ctx, method, buf, buf[len(buf):])
	if err != nil {
		PutBuffer(bp, buf, nil)
		return p, err
	}
	*bp = buf
	p.bp = bp
	return p, nil
}

// WaitPooled is [Promise.Wait] for generated code: it also returns the
// buffer the promise owned ([SendPooled]; nil for other promises, and
// when this call did not serve the promise: a second Wait), into which
// out was read. The caller decodes out, then gives the buffer back with
// PutBuffer(bp, *bp, out); neither may be used afterwards. The client no
// longer writes to it, also when ctx ended first.
func (p Promise) WaitPooled(ctx context.Context) (out []byte, bp *[]byte, err error) {
	if !p.owned() || !p.spend() {
		if p.bp != nil {
			// Not p.resp: its memory may be back in the pool already.
			return nil, nil, errNoPromise
		}
		return p.resp, nil, errNoPromise
	}
	out, err = p.c.wait(ctx, ctx.Done(), p.s, p.resp)
	p.c.promises.Add(-1) // counted until the answer is taken
	if obs := p.c.opts.observer; obs != nil {
		p.observe(obs, out, err)
	}
	return out, p.bp, err
}

// observe reports to obs the end of p's call, which returned out and err
// (see Client.Send).
func (p Promise) observe(obs Observer, out []byte, err error) {
	observeCall(obs, p.c.clientEvent(p.method, p.start, int(p.sent), p.resp, out, err), nil)
}

// Release gives up the call's answer without waiting for it: the slot is
// freed when the answer comes (or at once if it came). Calls pipelined on
// the promise are not affected: the server still runs them on the
// answer. The promise is spent. The observer sees the call end here, with
// Err [ErrPromiseReleased].
func (p Promise) Release() {
	if !p.owned() || !p.spend() {
		return
	}
	p.c.promises.Add(-1)
	p.c.drop(p.s, p.pid)
	if obs := p.c.opts.observer; obs != nil {
		p.observe(obs, p.resp, ErrPromiseReleased)
	}
	if p.bp != nil {
		// The client no longer writes to it (drop).
		PutBuffer(p.bp, *p.bp, nil)
	}
}

// drop abandons the call pid in s, or frees s when its answer already
// came. It does nothing when s no longer serves pid: a promise released
// twice, or after its Wait returned (misuse, which must neither wait
// forever for a signal already taken nor give up another call's). A
// promise's call is never canceled by a watch: its slot is waiting or
// delivered.
func (c *Client) drop(s *slot, pid uint32) {
	w := uint64(pid) << 32
	if s.st.CompareAndSwap(w|slotWaiting, w|slotAbandoned) {
		c.abandoned.Add(1)
		return
	}
	// Delivered: claimed here, so that a second drop finds it taken.
	// Its signal is sent, or about to be.
	if !s.st.CompareAndSwap(w|slotDelivered, w|slotIdle) {
		return
	}
	<-s.ch
	c.release(s)
}

// Call sends a call to method whose input is the answer of p's call
// (promise pipelining: the request's target is p's id, its payload empty)
// on p's connection, waits for its answer and appends it to resp, like
// [Client.Call]. It does not wait for p's own answer first, so p's call
// and this one take one round trip together. A 400 answer means the
// server does not pipeline ([WithPipelining]), or p's call failed or is
// too old for it to remember. p is not spent.
//
// As for [Client.Send], the client's interceptors do not run, though
// Call waits for its answer: the request's payload is p's answer, on the
// server, which an interceptor could not see nor change, and Send, the
// first call of the pair, cannot run them (see [ClientInterceptor]). The
// request carries the cap and metadata of ctx. The observer sees the
// call as one made with [Client.Call], with BytesOut 0 (its input is
// p's answer, which stays on the server).
func (p Promise) Call(ctx context.Context, method uint32, resp []byte) ([]byte, error) {
	if p.c == nil {
		return resp, errNoPromise
	}
	if obs := p.c.opts.observer; obs != nil {
		return p.c.observedCall(obs, ctx, method, p.pid, nil, resp)
	}
	// c.call by hand, as in Client.Call: the caller parks in wait, and a
	// frame between the two costs a mispredicted return after it wakes.
	done := ctx.Done()
	s, err := p.c.send(ctx, done, done, method, p.pid, nil, resp, false)
	if err != nil {
		return resp, err
	}
	return p.c.wait(ctx, done, s, resp)
}

// Send is [Promise.Call] without the wait: it returns the pipelined call's
// own promise, on which further calls may be pipelined (a chain of calls,
// each on the previous answer, in one round trip). p is not spent. The
// returned promise is observed as one of [Client.Send], with BytesOut 0.
func (p Promise) Send(ctx context.Context, method uint32, resp []byte) (Promise, error) {
	if p.c == nil {
		return Promise{}, errNoPromise
	}
	return p.c.sendPromise(ctx, method, p.pid, nil, resp)
}
