package rpc

import (
	"context"
	"time"
)

// job is one call on its way through a worker. It is reused: it returns to
// its connection's free list when the answer is written. It is also the
// handler's ctx (no allocation per call): a context.Context whose values,
// deadline and cancellation are those of its connection's context (see
// serverConn.ctx), plus the call's own identity for [CallInfo].
type job struct {
	c           *serverConn
	h           Handler
	method, pid uint32
	target      uint32
	pslot       int    // promise table entry (pipelining only)
	pseq        uint64 // its record number
	req, resp   []byte // owned by the job, reused
	reader      bool   // not a call: take over the connection's read loop

	// A per-call deadline (issue 12: deadlines on the wire) belongs here:
	// Deadline then returns the earlier of it and the connection's, and
	// Done/Err need a per-call signal armed only for calls that carry one
	// (so calls without a deadline stay free of allocations).
}

// Deadline is the connection context's deadline: the base context's
// (see [WithBaseContext]), none by default. Calls carry no deadline of
// their own yet.
func (j *job) Deadline() (time.Time, bool) { return j.c.ctx.Deadline() }

// Done is closed when the call's connection closes (the peer reset it, a
// write failed, a timeout dropped it, Close, or the end of Shutdown's
// grace) or the base context is done.
func (j *job) Done() <-chan struct{} { return j.c.ctx.Done() }

// Err is nil until Done is closed, then context.Canceled (or the base
// context's error).
func (j *job) Err() error { return j.c.ctx.Err() }

// Value returns the value of the base context for key; the key of
// [CallInfo] finds the call itself.
func (j *job) Value(key any) any {
	if _, ok := key.(callInfoKey); ok {
		return j
	}
	return j.c.ctx.Value(key)
}

var _ context.Context = (*job)(nil)

// callInfoKey is the Value key under which a handler's ctx returns its
// call, so that CallInfo works on any context derived from it.
type callInfoKey struct{}

// CallInfo returns the method and promise id of the call a handler's ctx,
// or any context derived from it (context.WithValue, WithCancel...),
// belongs to; ok is false for any other context. Call it only while the
// handler runs: the call's ctx is reused afterwards.
func CallInfo(ctx context.Context) (method, promiseID uint32, ok bool) {
	j, isJob := ctx.(*job)
	if !isJob {
		j, isJob = ctx.Value(callInfoKey{}).(*job)
	}
	if isJob {
		return j.method, j.pid, true
	}
	return 0, 0, false
}
