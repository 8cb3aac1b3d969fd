package rpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// job is one call on its way through a worker. It is reused: it returns to
// its connection's free list when the answer is written. It is also the
// handler's ctx (no allocation per call): a context.Context whose values,
// deadline and cancellation are those of its connection's context (see
// serverConn.ctx), plus the call's own identity for [CallInfo].
type job struct {
	c *serverConn
	// cc is c for the ctx methods (Deadline, Done, Err, Value), which a
	// goroutine the handler started may call after the call ended (the one
	// context.WithCancel starts for a parent it cannot watch otherwise,
	// such as a context.WithValue of this ctx): atomic, and retiredConn
	// while the job waits in the server-wide pool, whose ctx is done.
	cc          atomic.Pointer[serverConn]
	h           Handler
	pid, method uint32 // not in wire.Request's order (see target)
	pslot       int    // promise table entry (pipelining only)
	pseq        uint64 // its record number
	req, resp   []byte // owned by the job, reused
	reader      bool   // not a call: take over the connection's read loop
	// The read loop copies method, promise id and target from the
	// wire.Request it has just parsed, whose fields are stored one by
	// one. Fields adjacent in the same order in both are copied with one
	// wider load, which cannot take its bytes from two narrower stores
	// still in flight (a store-forwarding stall per call): here no two of
	// them are, so each is copied on its own.
	target uint32

	// obsStart (monoNow) and obsIn (request payload bytes) are kept by
	// call, with an observer, for the event of a handler that calls
	// runtime.Goexit and so never returns to call (handlerExited).
	// obsIn is observerRunning once the handler returned and the
	// observer is reporting the call.
	obsStart int64
	obsIn    int

	// Wire extensions of the call (see deadline.go and
	// metadata.go). dl is the call's own deadline (monoNow scale), 0 none;
	// it is atomic because a goroutine a handler started (the one
	// context.WithCancel starts for a foreign parent) may call Done late.
	dl        atomic.Int64
	ext       []byte // owned: copies of the call's cap and metadata
	capv, mdv []byte // the current call's cap and metadata, in ext
	rmd       []byte // owned: response metadata the handler set (SetResponseMetadata), reused
	refused   bool   // answered without running: its deadline had passed
	deflate   bool   // the caller takes a compressed answer and the server compresses (compress.go)
	undo      bool   // finish has more to do than write the answer: see finishAny
	dmu       sync.Mutex
	armed     bool          // under dmu: Done was called during this call
	fired     bool          // under dmu: dch is closed
	dch       chan struct{} // under dmu: the call's done channel, reused until closed
	dtimer    *time.Timer   // under dmu: fires expire at the deadline; reused
	dconn     *serverConn   // under dmu: the connection dch was armed on
	darm      int32         // under dconn.dmu: index+1 in dconn.armedJobs, 0 none (at most the jobs a connection holds)
	jb        int32         // role holder: the list that holds the job (see jnext), in what would be padding
	afs       []afterFunc   // under dmu: AfterFunc callbacks waiting for dch
	afID      uint32        // under dmu: ids of AfterFunc registrations
	// reserved is the answer budget the call holds (ReserveAnswer, and
	// inflateRequest for a compressed request), given back by finish; here, in what would be padding.
	reserved uint32
	afWG     sync.WaitGroup

	// The caller's cancel (kind 12, cancel.go). live is 1<<32 | the
	// promise id while the call runs on a worker (set by the read loop as
	// it hands the call over, or by the watchdog as it takes an inline
	// call over; cleared by finish), 0 otherwise, and 0 while a call runs
	// inline (see serverConn.inlJob and job.running): the read loop
	// matches a cancel frame against it. canceled is set (under dmu) by a cancel
	// that matched, and cleared by the read loop as it takes the job's
	// next call on. armedAny is set by the first Done or AfterFunc of a
	// call (under dmu) and tells finish that there is something to
	// disarm, for a call without a deadline too.
	live     atomic.Uint64
	canceled atomic.Bool
	armedAny atomic.Bool
	// jnext and jprev link the job into one of c's lists of its jobs
	// (role holder), the one jb names: 0 serverConn.jobs, else 1 + the
	// bucket of serverConn.cx, the index by promise id of a connection
	// whose peer cancels (cancel.go).
	jnext, jprev *job
}

// Deadline is the call's deadline: the earlier of the one its request
// carried (the caller's, see [Client.Call]) and the connection context's
// (the base context's, see [WithBaseContext]; none by default).
func (j *job) Deadline() (time.Time, bool) {
	dl := j.dl.Load()
	c := j.conn()
	if dl == 0 {
		return c.ctx.Deadline()
	}
	t := monoTime(dl)
	if cd, ok := c.ctx.Deadline(); ok && cd.Before(t) {
		return cd, true
	}
	return t, true
}

// Done is closed when the call's connection closes (the peer reset it, a
// write failed, a timeout dropped it, Close, or the end of Shutdown's
// grace), the base context is done, the call's deadline passes, or its
// caller canceled it (a zapcodec client's cancel, cancel.go). The call's
// first Done arms the job's own channel (see deadline.go); after the
// call, Done is the connection context's channel.
func (j *job) Done() <-chan struct{} {
	if j.dl.Load() == 0 && !j.running() {
		return j.conn().ctx.Done()
	}
	return j.armDone()
}

// running reports whether j runs a call now: an inline one, which keeps
// job.live at 0, by its connection's inline guard (c.inl names a call
// running inline, or one the watchdog is taking over, and c.inlJob is j:
// see serverConn.inlJob); a worker's, or one taken over from the read
// loop, by its live word (set by request, or by the watchdog's take-over,
// and cleared by finish). c.inl is read first: the watchdog stores the
// live word of the call it takes over before it stores readerTaken.
func (j *job) running() bool {
	c := j.conn()
	if v := c.inl.Load(); v != 0 && v != readerTaken && c.inlJob.Load() == j {
		return true
	}
	return j.live.Load() != 0
}

// Err is nil until Done is closed, then context.Canceled (the
// connection's end, the caller's cancel, or the base context's error),
// or context.DeadlineExceeded once the call's deadline passed.
func (j *job) Err() error {
	if err := j.conn().ctx.Err(); err != nil {
		return err
	}
	if j.canceled.Load() {
		return context.Canceled
	}
	if dl := j.dl.Load(); dl != 0 && monoNow() >= dl {
		// Done is closed first: Err is not nil only once it is, as the
		// context package promises (its timer may not have fired yet,
		// or Done was never asked for).
		j.passed()
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the value of the base context for key; the key of
// [CallInfo] finds the call itself.
func (j *job) Value(key any) any {
	if _, ok := key.(callInfoKey); ok {
		return j
	}
	return j.conn().ctx.Value(key)
}

// conn is the job's connection for the ctx methods (see cc).
func (j *job) conn() *serverConn {
	if c := j.cc.Load(); c != nil {
		return c
	}
	return retiredConn
}

// retiredConn stands for the connection of a job that has none (it waits
// in the pool): its ctx is done, so a goroutine that looks at a call's
// ctx after the call ended finds it done.
var retiredConn = func() *serverConn {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &serverConn{ctx: ctx}
}()

// observerRunning is job.obsIn while the observer reports the call,
// its handler returned (see handlerExited).
const observerRunning = -1

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
