package rpc

import (
	"context"
	"strconv"
	"time"
)

// streamCtx is a stream handler's ctx: its Stream, seen as a
// context.Context (Stream.ctx is the stream itself, converted). Its
// values, deadline and cancellation are those of the connection's
// context (serverConn.ctx), plus the open's deadline (Stream.dl), the
// stream's own end (endCtx: the client's cancel, an abort, the
// handler's return) and the stream itself under streamKey (streamFrom).
// It used to be the context package's WithCancel (or WithDeadline) and
// WithValue of the connection's context, and an AfterFunc on them that
// woke the stream's waits at its end: nine allocations per open, where
// this one costs none, or its Done channel once asked for. A stream is never reused, so a
// goroutine the handler left running that looks at its ctx later finds
// it ended, never another stream's.
type streamCtx Stream

var _ context.Context = (*streamCtx)(nil)

// initCtx sets up st's ctx, ending at dl (monoNow scale; 0: no deadline
// of its own). Called by the read loop before st is in its set.
func (st *Stream) initCtx(dl int64) {
	st.dl = dl
	st.ctx = (*streamCtx)(st)
	if dl != 0 {
		st.cmu.Lock()
		st.dtimer = time.AfterFunc(time.Duration(dl-monoNow()), st.deadlinePassed)
		st.cmu.Unlock()
	}
}

// deadlinePassed is the timer of a handler's ctx with a deadline.
func (st *Stream) deadlinePassed() { st.endCtx(context.DeadlineExceeded) }

// endCtx ends a handler's ctx with err (once: a later end keeps the
// first one's error). It wakes the stream's waits, unless the stream is
// over (ctxEnded), and then ends the ctxs derived from it. Called
// without st.mu.
func (st *Stream) endCtx(err error) { st.endCtxBy(err, false) }

// endCtxByConn ends a handler's ctx with the end of the connection's
// context (err its Err): context.Cause of the handler's ctx then reports
// the connection context's cause, as it did when the ctx was derived
// from it (the base context's cause, say, when it was canceled with
// context.WithCancelCause's cancel: see Value).
func (st *Stream) endCtxByConn(err error) {
	cause := context.Cause(st.set.sc.ctx)
	st.endCtxBy(err, cause != nil && cause != err)
}

// endCtxBy is endCtx; byConn: see Stream.byConn.
func (st *Stream) endCtxBy(err error, byConn bool) {
	st.cmu.Lock()
	if st.ctxErr != nil {
		st.cmu.Unlock()
		return
	}
	st.ctxErr, st.byConn = err, byConn
	st.ctxEnd.Store(true)
	if st.ctxDone != nil {
		close(st.ctxDone)
	}
	run, t := st.afs, st.dtimer
	st.afs, st.dtimer = nil, nil
	st.cmu.Unlock()
	if t != nil {
		t.Stop()
	}
	st.ctxEnded()
	for _, a := range run {
		a.f()
	}
}

// ctxEnded is what the end of a handler's ctx wakes: a Send waiting for
// a grant (the cond), one writing (interruptWrite). Not once the stream
// is over (stopCtx): its end is written then, which must not be cut.
func (st *Stream) ctxEnded() {
	st.mu.Lock()
	stopped := st.stopped
	if !stopped {
		st.cond.Broadcast()
	}
	st.mu.Unlock()
	if !stopped {
		st.interruptWrite()
	}
}

// Deadline is the earlier of the open's deadline and the connection
// context's (the base context's, see [WithBaseContext]).
func (x *streamCtx) Deadline() (time.Time, bool) {
	cd, ok := x.set.sc.ctx.Deadline()
	if x.dl == 0 {
		return cd, ok
	}
	d := monoTime(x.dl)
	if ok && cd.Before(d) {
		return cd, true
	}
	return d, true
}

// Done is closed when the stream's ctx ends (see StreamHandler). It is
// made at the first Done: a handler that never asks (nor anything it
// calls with its ctx) costs no channel. The stream's own waits are on its
// cond, which the ctx's end wakes (ctxEnded), and the writes of its
// frames ask canEnd rather than Done.
func (x *streamCtx) Done() <-chan struct{} {
	if p := x.doneP.Load(); p != nil {
		return *p
	}
	x.cmu.Lock()
	defer x.cmu.Unlock()
	if x.ctxDone == nil {
		if x.ctxErr != nil {
			return closedDone
		}
		x.ctxDone = make(chan struct{})
	}
	x.doneP.Store(&x.ctxDone)
	return x.ctxDone
}

// canEnd reports whether ctx can end (its Done is not nil), without
// making a handler's ctx's channel (see streamCtx.Done): every handler's
// ctx can end.
func canEnd(ctx context.Context) bool {
	if _, ok := ctx.(*streamCtx); ok {
		return true
	}
	return ctx.Done() != nil
}

// Err is nil until Done is closed, then why it was: context.Canceled
// (the stream ended, the connection closed), context.DeadlineExceeded
// (the open's deadline passed), or the base context's error.
func (x *streamCtx) Err() error {
	if !x.ctxEnd.Load() {
		return nil // Done is not closed: the flag is set before it is
	}
	// endCtx holds cmu from setting the flag until Done is closed: Err is
	// not nil before Done is closed, nor nil after.
	x.cmu.Lock()
	err := x.ctxErr
	x.cmu.Unlock()
	return err
}

// String names the ctx for fmt (a logged ctx, the context package's
// names of ctxs derived from it): without it fmt would print the
// Stream's fields, read unguarded while the connection writes them, as
// the ctx of the context package's WithCancel has a String of its own.
func (x *streamCtx) String() string {
	return "rpc.Stream(method " + strconv.FormatUint(uint64(x.method), 10) +
		", stream " + strconv.FormatUint(uint64(x.id), 10) + ")"
}

// Value returns the stream for streamKey, and the connection context's
// value for any other key but the context package's own (see
// cancelCtxKey), for which it answers nil unless the ctx ended with the
// connection's context and that has a cause of its own (byConn): then
// the connection context's, whose cause context.Cause reports.
func (x *streamCtx) Value(key any) any {
	if _, ok := key.(streamKey); ok {
		return (*Stream)(x)
	}
	if key == cancelCtxKey {
		x.cmu.Lock()
		byConn := x.byConn
		x.cmu.Unlock()
		if !byConn {
			return nil
		}
	}
	return x.set.sc.ctx.Value(key)
}

// AfterFunc makes a handler's ctx an afterFuncer for the context
// package: a ctx derived from it (context.WithCancel, WithTimeout...)
// registers its cancel here rather than starting a goroutine that waits
// for Done. f runs once the ctx ends (in a goroutine of its own if it
// has); stop unregisters it and reports whether it had not started.
func (x *streamCtx) AfterFunc(f func()) (stop func() bool) {
	x.cmu.Lock()
	defer x.cmu.Unlock()
	if x.ctxErr != nil {
		go f()
		return func() bool { return false }
	}
	x.afID++
	id := x.afID
	x.afs = append(x.afs, afterFunc{f, id})
	return func() bool {
		x.cmu.Lock()
		defer x.cmu.Unlock()
		for i, a := range x.afs {
			if a.id == id {
				x.afs = append(x.afs[:i], x.afs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancelCtxKey is the key under which the context package asks a ctx
// for the context.WithCancel it derives from (context.Cause asks it, and
// so does a ctx derived from ours). A handler's ctx answers nil, not its
// connection context's: context.Cause then reports the stream's own
// error (it reported the connection's cause, nil while that is open),
// and a derived ctx registers with AfterFunc. (Once the ctx ended with
// the connection's context, and that has a cause, it answers with the
// connection context's: see streamCtx.Value.) Learned once, from the
// question context.Cause asks of keyProbe.
var cancelCtxKey = func() any {
	p := keyProbe{Context: context.Background()}
	context.Cause(&p)
	return p.key
}()

// keyProbe is an ended ctx that remembers the key of its first Value
// (see cancelCtxKey).
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Err() error { return context.Canceled }

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}
