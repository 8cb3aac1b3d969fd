package rpc

import (
	"context"
	"time"
)

// job is one call on its way through a worker. It is reused: it returns to
// its connection's free list when the answer is written. It is also the
// handler's ctx (no allocation per call).
type job struct {
	c           *serverConn
	h           Handler
	method, pid uint32
	target      uint32
	pslot       int    // promise table entry (pipelining only)
	pseq        uint64 // its record number
	req, resp   []byte // owned by the job, reused
	reader      bool   // not a call: take over the connection's read loop
}

// Deadline reports no deadline: a call runs until it returns or its
// connection closes.
func (j *job) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed when the call's connection (or the server) closes.
func (j *job) Done() <-chan struct{} { return j.c.done }

// Err is context.Canceled once the connection closed, else nil.
func (j *job) Err() error {
	if j.c.closed.Load() {
		return context.Canceled
	}
	return nil
}

// Value returns nil: a call context carries no values (see CallInfo).
func (j *job) Value(any) any { return nil }

var _ context.Context = (*job)(nil)

// CallInfo returns the method and promise id of the call a handler's ctx
// belongs to; ok is false for any other context.
func CallInfo(ctx context.Context) (method, promiseID uint32, ok bool) {
	if j, isJob := ctx.(*job); isJob {
		return j.method, j.pid, true
	}
	return 0, 0, false
}
