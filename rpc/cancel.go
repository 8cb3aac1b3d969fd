package rpc

import (
	"context"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A caller's cancel on the wire (frame kind 12, docs/wire.md §8).
//
// Client: when a call's ctx ends before its answer came (canceled; a
// deadline is the server's to see, see sendsCancel), the caller abandons
// the call as before (Call returns ctx's error at once), and then queues
// a cancel frame naming the call's promise id, without
// waiting for room (a full queue drops it: a cancel is a hint). It does
// so only towards a server that announced that it takes cancels: the
// first call canceled on a connection asks (a ping whose payload is
// wire.CancelQuestion; a canonical server ignores it), and a zapcodec
// server answers with a cancel of promise id 0 before the pong. The read
// loop, as it reads that announcement, sends the cancels of the calls
// abandoned meanwhile whose answers have not come (slot.cancelPid); a
// call's cancel never leaves before its caller abandoned the call. A
// canonical server never sees the kind.
//
// A cancel is queued only while the call's slot is still abandoned with
// the call's pid, looked at under the outbox's lock that a request
// reusing the slot must take to be queued; the read loop sends its own
// while it reads no answer, so while no abandoned slot can be freed.
// Either way the cancel is queued before any request that reuses the
// promise id (ids of a slot change with each use anyway; the same id
// comes round after 65,536 uses of it). The server reads frames in
// order, so a cancel reaches it before any later call with the same id:
// it cannot cancel that call.
//
// Server: the read loop looks for the running call the cancel names in
// one bucket of the connection's index of its jobs by promise id
// (c.cx, below), and ends its ctx (job.cancel): its Done closes and
// Err returns context.Canceled. A cancel for a call that is not running
// (answered, unknown, never sent) does nothing. The job's live word ties
// the cancel to the call: the read loop sets it as it hands a call to a
// worker, and the watchdog as it takes an inline call over (an inline
// call keeps it at 0: while its handler runs, its read loop reads no
// frame, and the new read loop after a take-over finds the word set;
// see serverConn.inlJob), and finish clears it, so a cancel read after
// the answer finds nothing, and one that races with finish marks a job
// whose next call (taken on by the read loop, after the cancel) clears
// the mark.
//
// The index. A connection's jobs are one list (c.jobs), changed only as
// jobs come from and go back to the pool, until its peer first asks
// whether the server takes cancels or sends a cancel (c.cx, made by
// indexCancels): a connection whose peer never cancels pays a load of c.cx
// per call. From then on each job is in the bucket of its call's promise
// id (c.cx.b: as many buckets as the connection holds jobs, a power of
// two, at least minCancelBuckets; the id multiplied by a random odd seed
// of the connection's, its top bits), put there by the read loop as it
// takes the call on (indexJob: a few dozen instructions, plain loads and
// stores of the lists' links), and a cancel walks one bucket. The calls
// running when the peer asked are in it too: indexCancels puts every job
// in the bucket of the id it last ran, the call whose cancel made the
// client ask among them. A job whose call is over, or that a cancel found,
// leaves its bucket when a cancel walks it (it is not found again until
// its next call), so a walk costs what requests paid for, plus the running
// calls whose ids share the bucket: about one, as the peer cannot choose
// ids that share one without knowing the seed. Before the index, a cancel
// scanned every job the connection held: up to the in-flight limit per
// 9-byte frame (milliseconds at 65,536, BenchmarkCancelScan).

// abandonCanceled abandons the call waiting in s, whose ctx ended, and
// tells the server when sendsCancel says so; false, with nothing sent,
// when the answer is being or was delivered (the caller takes it from
// s.ch), as abandon.
func (c *Client) abandonCanceled(ctx context.Context, s *slot) bool {
	pid, send := s.pid, sendsCancel(ctx)
	if send {
		s.cancelPid.Store(pid) // before the abandon: see cancelSlot
	}
	if !c.abandon(s) {
		if send {
			s.cancelPid.Store(0)
		}
		return false
	}
	if send {
		c.cancelSlot(ctx, s, pid)
	}
	return true
}

// sendsCancel reports whether the abandon of a call whose ctx ended
// tells the server: not when the ctx's deadline passed, which the
// request carried (deadline.go), so that the server ends the handler's
// ctx by it, a little later, with context.DeadlineExceeded.
func sendsCancel(ctx context.Context) bool {
	return ctx.Err() != context.DeadlineExceeded
}

// Cancel states of a client (Client.cancelSt).
const (
	cancelUnasked uint32 = iota // no call canceled yet: the server was not asked
	cancelAsked                 // the question is sent, no announcement came
	cancelOn                    // the server announced: cancels are sent
)

// cancelCall is the read loop's handling of a peer's cancel frame (body
// p): the running call it names, if any, is canceled.
func (c *serverConn) cancelCall(p []byte) {
	pid, ok := wire.ParseCancel(p)
	if !ok || pid == 0 {
		return
	}
	if c.cx == nil {
		// A peer that cancels without asking first.
		c.indexCancels()
	}
	want := 1<<32 | uint64(pid)
	for j := c.cx.b[c.bucket(pid)]; j != nil; {
		next := j.jnext
		switch j.live.Load() {
		case want:
			j.cancel(want)
			fallthrough // found: not looked for again in this call
		case 0:
			// Over: out of the bucket until its next call.
			c.unlinkJob(j)
			c.linkJob(j, 0)
		}
		j = next
	}
}

// minCancelBuckets is the fewest buckets of a connection's index of its
// jobs by promise id (see cancelCall).
const minCancelBuckets = 16

// cancelIndex is a connection's index of its jobs by the promise ids of
// their calls (see cancelCall): a job is in bucket b[(pid * seed) >>
// shift], linked through job.jnext.
type cancelIndex struct {
	b     []*job
	seed  uint32 // odd, random
	shift uint8
}

// indexCancels starts the connection's index of its jobs by promise id
// (see cancelCall): the read loop keeps it from now on.
func (c *serverConn) indexCancels() {
	c.cx = &cancelIndex{seed: rand.Uint32() | 1}
	c.rebucket(max(c.nJobs, minCancelBuckets))
}

// bucket is the index in c.cx.b of the bucket of promise id pid.
func (c *serverConn) bucket(pid uint32) int {
	return int((pid * c.cx.seed) >> c.cx.shift)
}

// indexJob puts j, whose call's promise id the read loop has just set,
// in that id's bucket (c.cx not nil).
func (c *serverConn) indexJob(j *job) {
	if b := int32(c.bucket(j.pid)) + 1; j.jb != b {
		c.unlinkJob(j)
		c.linkJob(j, b)
	}
}

// rebucket makes c.cx n buckets (rounded up to a power of two) and puts
// every job of the connection in the bucket of its last call's promise
// id.
func (c *serverConn) rebucket(n int) {
	x := c.cx
	old, plain := x.b, c.jobs
	k := bits.Len(uint(n - 1))
	x.b, x.shift, c.jobs = make([]*job, 1<<k), uint8(32-k), nil
	for _, l := range append(old, plain) {
		for j := l; j != nil; {
			next := j.jnext
			c.linkJob(j, int32(c.bucket(j.pid))+1)
			j = next
		}
	}
}

// fitBuckets shrinks c.cx after the connection gave jobs back to the
// pool, to keep it in proportion to the jobs it holds.
func (c *serverConn) fitBuckets() {
	if c.cx != nil && len(c.cx.b) > minCancelBuckets && 4*c.nJobs < len(c.cx.b) {
		c.rebucket(max(2*c.nJobs, minCancelBuckets))
	}
}

// listOf returns the head of the list of j's jobs that holds j (j.jb).
func (c *serverConn) listOf(j *job) **job {
	if j.jb == 0 {
		return &c.jobs
	}
	return &c.cx.b[j.jb-1]
}

// linkJob puts j at the head of the list b (j.jb).
func (c *serverConn) linkJob(j *job, b int32) {
	j.jb = b
	l := c.listOf(j)
	j.jnext, j.jprev = *l, nil
	if *l != nil {
		(*l).jprev = j
	}
	*l = j
}

// unlinkJob takes j out of the list that holds it.
func (c *serverConn) unlinkJob(j *job) {
	if j.jprev != nil {
		j.jprev.jnext = j.jnext
	} else if l := c.listOf(j); *l == j {
		*l = j.jnext
	}
	if j.jnext != nil {
		j.jnext.jprev = j.jprev
	}
	j.jnext, j.jprev, j.jb = nil, nil, 0
}

// cancel ends the ctx of the call j runs when it is still the call live
// names: Err returns context.Canceled from now on, and Done, armed
// already or when the handler first asks for it, is closed.
func (j *job) cancel(live uint64) {
	j.dmu.Lock()
	if j.live.Load() != live || j.canceled.Load() || j.fired || j.expired() {
		// Over, canceled already, or done for another reason (its
		// deadline, the connection's end) whose error Err keeps.
		j.dmu.Unlock()
		return
	}
	j.canceled.Store(true)
	var run []afterFunc
	if j.armed {
		run = j.fire()
	}
	j.dmu.Unlock()
	j.runAfter(run)
}

// announceCancel answers a ping that carries wire.CancelQuestion: a
// cancel frame of promise id 0 tells the client that this server takes
// cancels. It reports false when the write failed and the connection is
// closed.
func (c *serverConn) announceCancel() bool {
	return c.endOwed(wire.AppendCancel(c.out.begin(wire.KindCancel), 0))
}

// cancelSlot tells the server, when it announced that it takes cancels,
// that the caller of the call pid, which it has just abandoned in slot s
// (its ctx ended), no longer wants its answer; the first time on a
// connection, it asks the server instead. The caller set s.cancelPid to
// pid before its abandon, which came before its look at the client's
// cancel state here; the read loop sets that state before its look at
// the slots (cancelAnnounced): one of the two sees the other, and sends
// the cancel. It never waits: a full queue drops the frame.
func (c *Client) cancelSlot(ctx context.Context, s *slot, pid uint32) {
	switch c.cancelSt.Load() {
	case cancelOn:
		c.queueControl(ctx, wire.KindCancel, s, pid)
	case cancelUnasked:
		if c.cancelSt.CompareAndSwap(cancelUnasked, cancelAsked) && !c.queueControl(ctx, wire.KindPing, nil, 0) {
			c.cancelSt.CompareAndSwap(cancelAsked, cancelUnasked) // asked by the next cancel
		}
	}
}

// queueControl queues a cancel of call pid abandoned in slot s (kind
// wire.KindCancel), when s is still abandoned with it, or the cancel
// question (kind wire.KindPing, s nil), without waiting for room, and
// flushes when that made the caller the flusher. false: nothing was
// queued (the queue is full, the connection broke, the call's answer
// came).
func (c *Client) queueControl(ctx context.Context, kind byte, s *slot, pid uint32) bool {
	o := &c.out
	o.mu.Lock()
	if o.err != nil || o.queued() >= outboxLimit || s != nil && s.st.Load() != uint64(pid)<<32|slotAbandoned {
		o.mu.Unlock()
		return false
	}
	appendControl(o, kind, pid)
	lead := o.claim()
	o.mu.Unlock()
	if lead {
		c.flushRequests(ctx)
	}
	return true
}

// appendControl appends the frame of queueControl to o's queue; o.mu
// held and room checked.
func appendControl(o *outbox, kind byte, pid uint32) {
	if o.cur == nil {
		o.cur = o.take()
	}
	b := o.cur.B
	if kind == wire.KindCancel {
		b = binary.LittleEndian.AppendUint32(b, 5)
		b = wire.AppendCancel(append(b, kind), pid)
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(1+len(wire.CancelQuestion)))
		b = append(append(b, kind), wire.CancelQuestion...)
	}
	o.cur.B = b
}

// cancelAnnounced is the read loop's handling of a server's cancel frame
// p: a promise id of 0 announces that the server takes cancels. The
// cancels of the calls canceled before it came, whose answers have not
// come, leave now (their slots cannot be freed meanwhile: only this
// loop frees a slot on its answer). Their write is left to a goroutine:
// the read loop does not wait for the socket (see the go-away's
// acknowledgement).
//
// Only abandoned calls: a caller whose ctx ended sets cancelPid before
// its abandon, and a slot still waiting (or canceled by a watch) with it
// is a call its caller has not given up yet. A cancel for it would end
// the handler's ctx while the call is still the caller's, and the
// caller, whose abandon then finds the answer delivered, would return
// the answer that the cancel brought about (a handler that answers as
// its ctx ends) instead of its ctx's error. Such a caller sends the
// cancel itself once it has abandoned: it looks at cancelSt after its
// abandon, and this loop set cancelSt before its look at the slot, so
// it sees cancelOn (see cancelSlot).
func (c *Client) cancelAnnounced(p []byte) {
	pid, ok := wire.ParseCancel(p)
	if !ok || pid != 0 || c.cancelSt.Swap(cancelOn) == cancelOn {
		return
	}
	t := c.table.Load()
	if t == nil {
		return
	}
	o := &c.out
	lead := false
	for _, s := range *t {
		v := s.st.Load()
		if v&slotStateMask != slotAbandoned {
			continue
		}
		if pid := uint32(v >> 32); s.cancelPid.Load() == pid {
			o.mu.Lock()
			if o.err != nil || o.queued() >= outboxLimit {
				o.mu.Unlock()
				break
			}
			appendControl(o, wire.KindCancel, pid)
			lead = o.claim() || lead
			o.mu.Unlock()
		}
	}
	if lead {
		go func() {
			if err := o.flush(false); err != nil {
				c.fail(err)
			}
		}()
	}
}
