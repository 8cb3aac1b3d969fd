package rpc

import (
	"context"
	"sync"
)

// promiseTable remembers the last calls of one connection for promise
// pipelining (docs/wire.md §6): a ring of entries, each a promise_id, its state
// and, once it answered OK, a copy of its body. Lookups scan the ring
// (bounded by its size); only calls with a target pay for that. The ring
// grows with the calls recorded, up to size entries: a connection that
// made no call holds none (an idle connection of a peer that never calls
// costs what it does without pipelining).
type promiseTable struct {
	mu     sync.Mutex
	cond   sync.Cond
	ring   []promise // the entries so far: len(ring) <= size
	size   int       // entries the ring may grow to (WithPipelining)
	seq    uint64    // records so far; entry seq s lives in ring[s%size]
	closed bool
}

type promiseState uint8

const (
	promiseFree promiseState = iota
	promisePending
	promiseOK
	promiseFailed
)

type promise struct {
	pid   uint32
	state promiseState
	seq   uint64
	body  []byte // kept across reuse of the entry
}

func newPromiseTable(n int) *promiseTable {
	t := &promiseTable{size: n}
	t.cond.L = &t.mu
	return t
}

// record adds a pending entry for a call read from the connection (read
// loop, in arrival order) and returns where it is.
func (t *promiseTable) record(pid uint32) (slot int, seq uint64) {
	t.mu.Lock()
	t.seq++
	seq = t.seq
	slot = int(seq % uint64(t.size))
	if slot >= len(t.ring) {
		t.grow(slot)
	}
	e := &t.ring[slot]
	evicted := e.state == promisePending
	e.pid, e.state, e.seq, e.body = pid, promisePending, seq, e.body[:0]
	if evicted {
		t.cond.Broadcast() // its waiters now see it gone
	}
	t.mu.Unlock()
	return slot, seq
}

// grow makes ring[slot] exist, doubling the ring up to its size. The
// slots are taken in order (seq 1, 2...) until the ring is full, so slot is
// at most len(ring) here. Called with mu held.
func (t *promiseTable) grow(slot int) {
	r := make([]promise, min(max(2*len(t.ring), slot+1, 8), t.size))
	copy(r, t.ring)
	t.ring = r
}

// recordFailed records a call answered without running (a 404, a
// refusal, a malformed request that named its promise id) as failed: a
// call pipelined on its promise id is answered 400, not run on an older
// call's answer with the same id.
func (t *promiseTable) recordFailed(pid uint32) {
	slot, seq := t.record(pid)
	t.complete(slot, seq, false, nil)
}

// complete stores the outcome of the call recorded at slot/seq (unless the
// entry was reused since) and wakes the calls waiting for it.
func (t *promiseTable) complete(slot int, seq uint64, ok bool, body []byte) {
	t.mu.Lock()
	e := &t.ring[slot]
	if e.seq == seq {
		if ok {
			e.state = promiseOK
			if cap(body) > maxKeptBuffer && cap(e.body) < len(body) {
				e.body = append([]byte(nil), body...)
			} else {
				e.body = append(e.body[:0], body...)
			}
		} else {
			e.state = promiseFailed
		}
	}
	t.cond.Broadcast()
	t.mu.Unlock()
}

// wait finds the newest call with promise_id target recorded before the
// waiting call (seq self), waits while it runs, and appends its OK body to
// dst. ok is false when the target failed, is unknown or was evicted, the
// connection closed, or the deadline of the waiting call, j, passed (a
// caller that gave up does not hold its job while the target runs on).
func (t *promiseTable) wait(target uint32, self uint64, dst []byte, j *job) ([]byte, bool) {
	if j.dl.Load() != 0 {
		stop := context.AfterFunc(j, func() {
			t.mu.Lock()
			t.cond.Broadcast()
			t.mu.Unlock()
		})
		defer stop()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	slot, seq := -1, uint64(0)
	for i := range t.ring {
		e := &t.ring[i]
		if e.state != promiseFree && e.pid == target && e.seq < self && e.seq > seq {
			slot, seq = i, e.seq
		}
	}
	if slot < 0 {
		return dst, false
	}
	for {
		e := &t.ring[slot]
		if t.closed || e.seq != seq {
			return dst, false
		}
		switch e.state {
		case promiseOK:
			return append(dst, e.body...), true
		case promiseFailed:
			return dst, false
		}
		if j.expired() {
			return dst, false
		}
		t.cond.Wait()
	}
}

func (t *promiseTable) close() {
	t.mu.Lock()
	t.closed = true
	t.cond.Broadcast()
	t.mu.Unlock()
}
