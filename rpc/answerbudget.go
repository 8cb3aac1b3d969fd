package rpc

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Answer budgets: the bytes unary handlers may hold in answers they are
// building or that wait to be written, per connection and per server,
// for handlers that say what they will build (ReserveAnswer).
//
// Why the library keeps them: the in-flight limit (WithMaxInFlight) and
// the queue of unsent answers (4 MiB) bound calls and queued bytes, but a
// handler builds its whole result before anything is queued, so a peer
// that pipelines calls with large answers and never reads them holds the
// in-flight limit times the answer size (gRPC-go has the same exposure:
// a unary response is marshaled whole before flow control applies). A
// semaphore of the handler's own cannot close the gap: the result is
// held after the handler returns, while it waits to be written, and only
// the server knows when it has left and which connection a call is on.

const (
	// DefaultConnAnswerBudget is the bytes of answers the unary handlers
	// of one connection may hold at once through [ReserveAnswer]: the
	// largest frame, so one answer of any size at a time (see
	// [WithAnswerBudget]).
	DefaultConnAnswerBudget = 16 << 20
	// DefaultServerAnswerBudget is the bytes of answers the unary
	// handlers of a whole server may hold at once through
	// [ReserveAnswer] (see [WithAnswerBudget]).
	DefaultServerAnswerBudget = 64 << 20
	// maxConnAnswerBudget: a connection's budget is at most this (a
	// call's reservation is kept in 32 bits).
	maxConnAnswerBudget = math.MaxInt32
)

// ErrNoAnswerBudget is returned by [ReserveAnswer] for a ctx that is not
// a unary handler's (a stream handler's, a client's, one made by
// context.Background), or is one of a call that is over.
var ErrNoAnswerBudget = errors.New("rpc: ReserveAnswer: ctx is not a unary handler's")

// WithAnswerBudget sets the bytes of answers that unary handlers which
// call [ReserveAnswer] may hold at once: perConn on one connection,
// perServer on the whole server. n <= 0 means the default
// ([DefaultConnAnswerBudget], 16 MiB, and [DefaultServerAnswerBudget],
// 64 MiB); perConn above 2 GiB counts as 2 GiB, and as perServer when
// above it. Handlers that do not call ReserveAnswer are not bounded by
// it. With [WithCompression], a compressed request takes what it grows
// by as it is inflated (at most perConn) from these budgets too, before
// its handler runs, until its answer has left.
//
// Choose perConn so that a well-behaved client's concurrent calls on a
// connection fit (its answers leave one after another anyway), and
// perServer as the memory answers may take in all; perServer / perConn
// is how many peers that never read their answers it takes to make the
// server's other callers wait.
func WithAnswerBudget(perConn, perServer int) ServerOption {
	return serverOption(func(o *serverOptions) {
		if perConn <= 0 {
			perConn = DefaultConnAnswerBudget
		}
		if perServer <= 0 {
			perServer = DefaultServerAnswerBudget
		}
		o.connAnswerBudget = min(perConn, maxConnAnswerBudget, perServer)
		o.serverAnswerBudget = perServer
	})
}

// ReserveAnswer reserves n bytes of answer budget ([WithAnswerBudget])
// for the unary call ctx belongs to, before its handler builds a large
// result: it returns nil once n bytes fit both in the budget of the
// call's connection and in the server's, and waits until they do. The
// bytes stay reserved until the call's answer has left it: written to
// the connection, copied into the connection's queue of unsent answers
// (at most 4 MiB, see [WithWriteTimeout]), or dropped because the
// connection closed; the server then gives them back by itself, whether
// the handler returned a result, an error or panicked. n is the memory
// the result takes while it is built and sent (the record the handler
// fills and its encoding, for a generated handler): an estimate from the
// request, before the work, is what makes it bound memory.
//
// A call waiting for budget holds none of the bytes it waits for
// (while it waits for the server's budget it holds its connection's
// share, and it keeps what it reserved before): it returns ctx's error
// when ctx ends first (the caller's deadline passes, or the connection
// closes: a peer that does not read is dropped by the write timeout,
// which gives its bytes back). The handler should return that error.
// [Server.Shutdown] waits for a waiting call as for any call in
// flight; when its ctx ends it closes the connections, which ends the
// wait. The connection's budget is taken first, so a peer's calls wait
// for its own earlier answers before they take the server's: a peer
// that pipelines calls and never reads their answers holds at most its
// connection's budget. (With [WithPipelining], the promise table keeps
// a copy of each OK answer beyond the budget, as that option's doc
// says.)
//
// A reservation above the budgets counts as the smaller of them (the
// call then waits until it is alone), and several reservations of one
// call add up to at most that. Calls waiting for a budget get it in
// the order they came: a later call waits behind them even when its
// bytes would fit, so a large answer is not kept waiting by smaller
// ones that keep coming; a call that holds a reservation already and
// reserves more is not queued behind them (they may wait for its
// bytes). Two calls that each hold part of a budget and each wait for
// more than is left wait until one's ctx ends: reserve a call's bytes
// at once where you can. As with any semaphore, a handler that holds a
// reservation and then waits for a call of its own to the same server
// that reserves too may wait until its ctx ends when the budget is
// full: reserve after such calls.
//
// Call it from the handler's goroutine (or an interceptor's) before the
// handler returns; ctx is the handler's, or one derived from it. It
// returns [ErrNoAnswerBudget] for a ctx that is not a unary handler's (a
// stream's messages are bounded by its window instead), and for the ctx
// of a call whose handler has returned; n <= 0 reserves
// nothing. It allocates nothing per call: a connection's budget is made
// at its first reservation, and a waiter with its channel when a call has
// to wait.
// [Server.Stats] counts the bytes reserved and the calls waiting.
func ReserveAnswer(ctx context.Context, n int) error {
	j := callJob(ctx)
	if j == nil || !j.running() {
		// Not a unary handler's ctx, or the ctx of a call that is over
		// (a goroutine the handler left behind): its job may be on its
		// way to another connection, and a reservation now would be
		// given back by no one.
		return ErrNoAnswerBudget
	}
	if n <= 0 {
		return nil
	}
	c := j.conn()
	if c == retiredConn {
		return context.Canceled
	}
	s := c.s
	limit := int64(s.opts.connAnswerBudget)
	m := min(int64(n), limit-int64(j.reserved))
	if m <= 0 {
		return nil // the call holds the whole budget already
	}
	// A call that holds budget already does not queue behind calls
	// that may be waiting for it to finish.
	holds := j.reserved != 0
	cb := c.answerBudget()
	if err := cb.acquire(ctx, m, holds, &s.ansWaits); err != nil {
		return err
	}
	if err := s.ansBudget.acquire(ctx, m, holds, &s.ansWaits); err != nil {
		cb.release(m)
		return err
	}
	j.reserved += uint32(m)
	j.undo = true // finishAny gives it back
	return nil
}

// answerBudget is a budget of answer bytes: a connection's or a
// server's. Its waiters are served in the order they came: a call that
// waits is not overtaken by later ones that would fit in what is left,
// so that a large answer does not wait for as long as smaller ones keep
// coming.
type answerBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// waiters are the calls waiting, first come first; each is handed
	// its bytes by release, in order, and its ready closed.
	waiters []*budgetWaiter
}

// budgetWaiter is a call waiting in acquire.
type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n is taken for the waiter
}

// acquire takes n bytes (n <= limit) of b, waiting while they do not fit
// or earlier calls wait, until ctx ends; waits counts the calls waiting.
// A call that holds bytes of b already (ahead) takes them when they fit,
// and otherwise waits at the head of the queue: the calls it would
// queue behind may be waiting for its bytes.
func (b *answerBudget) acquire(ctx context.Context, n int64, ahead bool, waits *atomic.Int64) error {
	b.mu.Lock()
	if (ahead || len(b.waiters) == 0) && b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	if ahead {
		b.waiters = slices.Insert(b.waiters, 0, w)
	} else {
		b.waiters = append(b.waiters, w)
	}
	b.mu.Unlock()
	waits.Add(1)
	defer waits.Add(-1)
	select {
	case <-w.ready:
		if ctx.Err() == nil {
			return nil
		}
		// Handed its bytes, but ctx ended before the call ran again
		// (its connection closed): the bytes go to the calls behind it.
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Handed its bytes as ctx ended: they go back, to the calls
		// behind it.
		b.used -= n
	default:
		i := slices.Index(b.waiters, w)
		b.waiters = slices.Delete(b.waiters, i, i+1)
	}
	// Its leaving (from the head, or with bytes it was handed) may let
	// the calls behind it in.
	b.grant()
	return ctx.Err()
}

// take takes n bytes of b when they fit and no call waits, without
// waiting; it reports whether it took them.
func (b *answerBudget) take(n int64) bool {
	b.mu.Lock()
	ok := len(b.waiters) == 0 && b.used+n <= b.limit
	if ok {
		b.used += n
	}
	b.mu.Unlock()
	return ok
}

// release gives n bytes back to b and hands them to its waiters, in
// order.
func (b *answerBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant hands bytes to the waiters at the head of the queue while they
// fit; b.mu is held.
func (b *answerBudget) grant() {
	k := 0
	for _, w := range b.waiters {
		if b.used+w.n > b.limit {
			break
		}
		b.used += w.n
		close(w.ready)
		k++
	}
	if k > 0 {
		n := copy(b.waiters, b.waiters[k:])
		clear(b.waiters[n:])
		b.waiters = b.waiters[:n]
	}
}

// reserved returns the bytes taken from b.
func (b *answerBudget) reserved() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// answerBudget returns c's budget, made at its first reservation (most
// connections never need one).
func (c *serverConn) answerBudget() *answerBudget {
	if b := c.ansBudget.Load(); b != nil {
		return b
	}
	b := &answerBudget{limit: int64(c.s.opts.connAnswerBudget)}
	if c.ansBudget.CompareAndSwap(nil, b) {
		return b
	}
	return c.ansBudget.Load()
}

// releaseAnswer gives back the answer budget j's call reserved, once its
// answer has left it (finish).
func (c *serverConn) releaseAnswer(j *job) {
	n := int64(j.reserved)
	j.reserved = 0
	// nil only after the misuse ReserveAnswer's doc forbids (a
	// reservation racing its call's finish, carried by the job to a
	// connection that never reserved): no panic for it.
	if b := c.ansBudget.Load(); b != nil {
		b.release(n)
	}
	c.s.ansBudget.release(n)
}
