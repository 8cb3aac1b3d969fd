package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/internal/respmd"
)

// MaxHedgingAttempts is the most attempts a [HedgingPolicy] sends for
// one call, the first included: a larger MaxAttempts counts as this, as
// gRPC holds a hedging policy's maxAttempts to 5.
const MaxHedgingAttempts = 5

// HedgingPolicy says when a unary call ([Client.Call]) is sent again
// while its first attempt is still out, as a method's hedgingPolicy in a
// gRPC service config does: the call goes to one replica and, when no
// answer came within HedgingDelay, to another one as well, and so on up
// to MaxAttempts attempts out at once; the first answer that is a
// success, or a failure that is not one of NonFatalStatuses, is the
// call's, and the other attempts are canceled (their ctx ends, and a
// zapcodec server ends their handlers' ctx: see [rpc.Client.Call]). It
// cuts the tail latency a slow replica gives its calls, at the price of
// running some calls twice or more: only a method that may run twice,
// at the same time on two replicas (a read, a put of a whole value), is
// to have one. Nothing checks it: a policy is the caller's declaration.
// It is given with [WithHedgingPolicy].
//
// Each hedge goes to a replica that has no attempt of the call yet, the
// one the balancer picks when it has none, else the least loaded of
// those; when every ready replica has one (a single replica, or fewer
// ready than MaxAttempts), the hedge goes where the balancer picks, to a
// replica that already has an attempt of the call (on one replica, the
// same connection, unless it has several: [WithConnsPerReplica]). A
// hedge takes one retry from the retry budget ([WithRetryBudget]), as
// gRPC's retry throttling counts hedges: once the budget is spent no
// more hedges are sent for the call ([Stats] counts a retry denied), and
// the attempts out decide it. A hedge is not sent once the call's ctx is
// done or its deadline has passed, and none waits for a HedgingDelay
// that would end past the deadline; nor is one sent when no replica is
// ready (it takes nothing from the budget, and no later hedge of the
// call is sent).
type HedgingPolicy struct {
	// MaxAttempts bounds the attempts sent, the first included
	// (gRPC's maxAttempts), at most [MaxHedgingAttempts]. Below 2 the
	// policy hedges nothing (see [WithHedgingPolicy]).
	MaxAttempts int
	// HedgingDelay is how long after an attempt was sent the next one is
	// sent, while no attempt has answered (gRPC's hedgingDelay). 0 (or
	// below): all MaxAttempts are sent at once.
	HedgingDelay time.Duration
	// NonFatalStatuses are the answers that do not end the call (gRPC's
	// nonFatalStatusCodes): rpc statuses such as rpc.StatusUnavailable
	// (503), as a [*rpc.StatusError] of the answer carries them. An
	// attempt answered with one of them is dropped and the next hedge
	// is sent at once (the delay starts again after it), within
	// MaxAttempts and the budget. So is an attempt refused unrun
	// ([rpc.IsRetryable]), refused before it was written
	// ([rpc.ErrTooManyPending]), or whose connection was lost under it
	// (an error matching rpc.ErrClosed, not a close of this client's):
	// the policy declares the method safe to run twice already. Any
	// other failure (an answer of another status, the call's ctx
	// ending) is the call's at once.
	NonFatalStatuses []uint32
}

// WithHedgingPolicy sets the hedging policy p of the methods named, or
// with none named, of every method that has no policy of its own. A
// later hedging policy for a method replaces an earlier one; a p with
// MaxAttempts below 2 takes a method's hedging policy away (as it
// would the default's, with no method named).
//
// A method has one policy at most, a retry policy ([WithRetryPolicy]) or
// a hedging policy, as in gRPC's service config: its own (one given for
// it by name) comes before the defaults (given with no method named),
// and a policy taken away for it by name takes the default of its kind
// away, not the other kind's. [Dial] fails when a method is given both
// by name, or both defaults are given: the client cannot tell which one
// the caller meant.
//
// Only unary calls are hedged: a stream ([Client.OpenStream]) is not,
// since its messages, once sent or received, cannot be sent on two
// replicas and taken from one (gRPC does not hedge a stream past its
// first message either); a promise ([Client.Send]) neither, being given
// back once written.
//
// The client's interceptors ([WithInterceptors]) run once around a
// hedged call, whose attempts happen below them; the connections'
// interceptors and observers ([WithClientOptions]) see each attempt on
// the wire, and the canceled ones end with context.Canceled. Each
// attempt counts toward its replica's ejection and latency as a call
// does; an attempt canceled because another one's answer decided the
// call counts nothing toward its replica's ejection, and the time it
// ran as one of its latencies when it is more than the replica's
// average ([Conn.Latency]: the replica held the call at least that long;
// a shorter time, a hedge that lost soon after it was sent, says
// nothing of it), so that [P2C] sends fewer first attempts to a replica
// that loses the races; one canceled by the caller counts nothing.
//
// Answers: each attempt writes its answer into a buffer of its own, and
// the winner's is copied into the caller's resp once it has won: no
// attempt writes into the caller's resp, nor reads its req (copied
// first), while or after [Client.Call] returns, and an attempt that
// answers after the winner is dropped. Call returns as soon as the
// winning answer came, without waiting for the canceled attempts. A call
// that fails after all its attempts failed returns a [*ReplicaError]
// that says how many were sent ([ReplicaError.Attempts]) and wraps the
// error of the attempt that failed last (errors.Is and rpc.Code see
// through it); a call decided by an attempt's failure (a status not
// among NonFatalStatuses) returns that one's, with the count of
// attempts sent so far, those canceled included.
// Response metadata ([rpc.WithResponseMetadata] on the caller's ctx):
// each attempt stores its answer's in a receiver of its own, and the
// caller's receiver, emptied when the call starts, gets the metadata of
// the answer the call returns (the winner's, the fatal failure's, or
// the last failure's), as Call returns; no attempt writes it.
//
// Costs: a call to a method without a hedging policy costs what it
// costs without one (a look at a flag). A hedged call runs each attempt
// on a goroutine of its own while the caller's goroutine waits for the
// first answer that decides it: one whose first attempt answers before
// HedgingDelay allocates 3 times, its attempts' ctx (the context, its
// cancel func and its Done channel: context.WithCancel of the caller's
// ctx), under a ctx that cannot end (context.Background); under one
// that can, the context package may add what it takes to know the
// child (a map in the caller's ctx, once per such ctx); with a response
// metadata receiver on ctx, each attempt's own receiver costs two more
// (rpc.WithResponseMetadata). The attempts'
// goroutines (reused by the runtime), their buffers, the request's copy
// and the timer allocate nothing once warm (a buffer that grew past
// 64 KiB is dropped after its call rather than kept in the pool: a large
// answer or request is allocated afresh); a hedge costs a goroutine
// started and the losers' cancels (see [rpc.Client.Call]), and a failed
// attempt its connection's error. The request and the winning answer
// are copied once each.
func WithHedgingPolicy(p HedgingPolicy, methods ...uint32) Option {
	var pp *HedgingPolicy
	if p.MaxAttempts >= 2 {
		p.MaxAttempts = min(p.MaxAttempts, MaxHedgingAttempts)
		p.HedgingDelay = max(p.HedgingDelay, 0)
		p.NonFatalStatuses = slices.Clone(p.NonFatalStatuses)
		pp = &p
	}
	methods = slices.Clone(methods)
	return optionFunc(func(o *options) { setPolicy(&o.hedgeDefault, &o.hedgePolicies, pp, methods) })
}

// hedgingPolicy returns method's hedging policy, nil when it has none.
func (o *options) hedgingPolicy(method uint32) *HedgingPolicy {
	if p, ok := o.hedgePolicies[method]; ok {
		return p
	}
	if o.retryPolicies[method] != nil {
		return nil // a retry policy of its own comes before the default
	}
	return o.hedgeDefault
}

// errBothPolicies is the error of Dial when a method has a retry policy
// and a hedging policy.
var errBothPolicies = errors.New("cluster: a method has both a retry policy and a hedging policy (WithRetryPolicy, WithHedgingPolicy); a method may have one")

// checkPolicies returns an error when a method has both a retry policy
// and a hedging policy of its own, or both defaults are given; it sets
// o.hedging, which says whether any method may have a hedging policy.
func (o *options) checkPolicies() error {
	if o.retryDefault != nil && o.hedgeDefault != nil {
		return errBothPolicies
	}
	o.hedging = o.hedgeDefault != nil
	for m, p := range o.hedgePolicies {
		if p == nil {
			continue
		}
		o.hedging = true
		if o.retryPolicies[m] != nil {
			return errBothPolicies
		}
	}
	return nil
}

// hedgeCall is the state a hedged call shares with its attempts. It is
// pooled: the last of the call and its attempts to be done with it puts
// it back (release).
type hedgeCall struct {
	c      *Client
	ctx    context.Context // the attempts': the caller's ctx, canceled when the call returns
	method uint32
	req    []byte // the copy of the caller's request the attempts send
	// conns[k] is the connection attempt k starts on, set before its
	// goroutine starts; bufs[k] is its answer buffer, which only it
	// writes, then only the call (after its result) or release reads.
	conns [MaxHedgingAttempts]*Conn
	bufs  [MaxHedgingAttempts][]byte
	// With a response metadata receiver on the caller's ctx
	// (rpc.WithResponseMetadata), ctxs[k] is attempt k's ctx, with
	// mds[k] as its own receiver (set before its goroutine starts, like
	// conns[k]); the call gives the caller's receiver the deciding
	// attempt's. Without one, ctxs[k] is nil and attempts use ctx.
	ctxs [MaxHedgingAttempts]context.Context
	mds  [MaxHedgingAttempts]rpc.Metadata
	// next is the number of attempts started: an attempt's goroutine
	// takes its index from it (see attempt).
	next atomic.Int32
	// decided is set when an attempt's answer decided the call, before
	// the others are canceled: their cancel is a lost race.
	decided atomic.Bool
	// refs counts the call and its attempts running.
	refs atomic.Int32
	// res takes each attempt's result (room for all of them: an attempt
	// never waits to give it).
	res chan hedgeResult
	run func() // h.attempt, made once so that starting one allocates no closure
}

// hedgeResult is the result of attempt k.
type hedgeResult struct {
	k   int
	out []byte
	err error
	cn  *Conn // the connection it ended on
	// panicked says the attempt panicked (a connection's interceptor)
	// with p: the call panics with it.
	panicked bool
	p        any
}

var hedges = sync.Pool{New: func() any {
	return &hedgeCall{res: make(chan hedgeResult, MaxHedgingAttempts)}
}}

// maxKeptHedgeBuf is the largest buffer (a request's copy or an
// attempt's answer) a pooled hedgeCall keeps: a call with a larger one
// does not hold its memory for the calls after it.
const maxKeptHedgeBuf = 64 << 10

// start starts attempt k on cn (counted in its in-flight calls).
func (h *hedgeCall) start(k int, cn *Conn, rmd *rpc.Metadata) {
	h.conns[k] = cn
	if rmd != nil {
		h.ctxs[k] = rpc.WithResponseMetadata(h.ctx, &h.mds[k])
	}
	h.refs.Add(1)
	if h.run == nil {
		h.run = h.attempt // here, not in the pool's New: an initialization cycle
	}
	go h.run()
}

// release ends the use of the call or of one attempt; the last one
// drops the results nobody took and puts h back in the pool.
func (h *hedgeCall) release() {
	if h.refs.Add(-1) != 0 {
		return
	}
	for len(h.res) > 0 {
		<-h.res
	}
	h.c, h.ctx = nil, nil
	h.conns = [MaxHedgingAttempts]*Conn{}
	h.ctxs = [MaxHedgingAttempts]context.Context{}
	h.mds = [MaxHedgingAttempts]rpc.Metadata{}
	h.next.Store(0)
	h.decided.Store(false)
	keep := func(b []byte) []byte {
		if cap(b) > maxKeptHedgeBuf {
			return nil
		}
		if poison.Enabled() {
			// A view of an answer or a request kept past its call
			// reads the poison, not the next call's bytes.
			poison.Fill(b[:cap(b)])
		}
		return b[:0]
	}
	h.req = keep(h.req)
	for k := range h.bufs {
		h.bufs[k] = keep(h.bufs[k])
	}
	hedges.Put(h)
}

// attempt runs one attempt of the call on its goroutine and gives its
// result. A call its connection refused before writing it (go-away, or
// full) goes to another connection, as in attempt (the function), not
// counting as an attempt.
func (h *hedgeCall) attempt() {
	k := int(h.next.Add(1)) - 1
	c, ctx := h.c, h.ctx
	if h.ctxs[k] != nil {
		ctx = h.ctxs[k]
	}
	r := hedgeResult{k: k, cn: h.conns[k]}
	held := r.cn // on its in-flight count while its call runs
	defer func() {
		if held != nil {
			held.inflight.Add(-1)
		}
		// A panic of a connection's interceptor goes to the call, which
		// panics with it; one that comes after the call returned has no
		// caller left to get it, and is dropped.
		if p := recover(); p != nil {
			r.panicked, r.p = true, p
		}
		h.res <- r
		h.release()
	}()
	done := ctx.Done()
	for unsent := 0; ; unsent++ {
		cn := r.cn
		live := timeLeft(ctx, done)
		var start int64
		if cn.r.lat.timeNext() {
			start = now()
		}
		out, err := cn.rc.Call(ctx, h.method, h.req, h.bufs[k][:0])
		held = nil
		cn.inflight.Add(-1)
		if out != nil {
			h.bufs[k] = out[:0]
		}
		r.out, r.err = out, err
		if err == nil {
			if start != 0 {
				cn.r.lat.observe(start, now())
			}
			cn.r.ok()
			return
		}
		if live && err == context.DeadlineExceeded && !isDone(done) {
			live = false // see attempt (the function)
		}
		timed := c.account(cn, err, live)
		if err == context.Canceled && h.decided.Load() {
			// Canceled as another attempt decided the call: the
			// replica held it at least this long, which its latency
			// learns when it is more than its average (else a replica
			// slow enough to lose every race would never look slow
			// to P2C, and keep getting first attempts); a shorter
			// time says nothing (a hedge that lost soon after it was
			// sent), and would make a slow replica look fast.
			if start != 0 {
				cn.r.lat.observeAtLeast(start, now())
			}
		} else if timed && start != 0 {
			cn.r.lat.observe(start, now())
		}
		if unsent == 4 || ctx.Err() != nil || err != rpc.ErrGoAway && !errors.Is(err, rpc.ErrTooManyPending) {
			return
		}
		next := c.pickHedge([]*replica{cn.r})
		if next == nil {
			return
		}
		r.cn, held = next, next
	}
}

// pickHedge returns a connection for a hedge, counted in its in-flight
// calls, or nil when no replica is ready: the one the balancer picks,
// unless its replica is one of used and another is ready (the least
// loaded of those then). It does not wait for a replica.
func (c *Client) pickHedge(used []*replica) *Conn {
	for range 64 {
		set := c.ready.Load()
		conns := set.conns
		if len(conns) == 0 {
			return nil
		}
		i := c.choose(set)
		if slices.Contains(used, conns[i].r) {
			i = elsewhere(conns, i, used)
		}
		if cn := conns[i]; c.take(cn) {
			return cn
		}
	}
	return nil
}

// hedgeGoesOn reports whether an attempt that failed with err on cn
// lets the call go on (the next hedge sent at once) under p.
func (c *Client) hedgeGoesOn(p *HedgingPolicy, cn *Conn, err error) bool {
	switch {
	case err == context.Canceled || err == context.DeadlineExceeded:
		return false
	case rpc.IsRetryable(err) || errors.Is(err, rpc.ErrTooManyPending):
		return true
	}
	if se := rpc.StatusOf(err); se != nil {
		return slices.Contains(p.NonFatalStatuses, se.Code)
	}
	return errors.Is(err, rpc.ErrClosed) && !cn.closedUs.Load() && !c.isClosed()
}

// hedged makes a call under its method's hedging policy p (see
// HedgingPolicy): its attempts run on goroutines of their own, and this
// one waits for the first that decides the call, sending the hedges as
// their delay passes or an attempt fails.
func (c *Client) hedged(ctx context.Context, p *HedgingPolicy, method uint32, req, resp []byte) ([]byte, error) {
	c.calls.Add(1)
	done := ctx.Done()
	if isDone(done) {
		c.failed.Add(1) // as attempt: ctx's error, nothing sent
		return resp, ctx.Err()
	}
	c.budget.call()
	var until time.Time
	cn, err := c.pick(ctx, nil, &until)
	if err != nil {
		c.failed.Add(1)
		return resp, err
	}
	h := hedges.Get().(*hedgeCall)
	actx, cancel := context.WithCancel(ctx)
	h.c, h.ctx, h.method = c, actx, method
	h.req = append(h.req[:0], req...)
	h.refs.Store(1)
	// The caller's response metadata receiver, if any: the attempts
	// each have their own, and the call gives it the deciding answer's.
	var rmd *rpc.Metadata
	if respmd.Receiver != nil {
		rmd, _ = respmd.Receiver(ctx).(*rpc.Metadata)
	}
	if rmd != nil {
		*rmd = rpc.Metadata{} // emptied when the call is sent, as rpc.Client.Call does
	}
	decide := func(r hedgeResult) {
		if rmd != nil {
			*rmd = h.mds[r.k]
		}
	}
	var t *time.Timer
	defer func() {
		cancel() // the attempts still out: their handlers are told
		if t != nil {
			stopTimer(t)
			timers.Put(t)
		}
		h.release()
	}()

	var used [MaxHedgingAttempts]*replica
	h.start(0, cn, rmd)
	used[0] = cn.r
	sent, pending := 1, 1 // attempts sent, and not answered yet
	more := true          // hedges may still be sent
	now := p.HedgingDelay <= 0
	var tick <-chan time.Time
	var last hedgeResult // the last attempt that failed, non-fatally
	for {
		if more && sent == p.MaxAttempts {
			more = false
		}
		if more && now {
			now = p.HedgingDelay <= 0
			var cn *Conn
			switch {
			case !timeLeft(ctx, done):
				more = false
			case !c.budget.retry():
				c.retriesDenied.Add(1)
				more = false
			default:
				if cn = c.pickHedge(used[:sent]); cn == nil {
					c.budget.refund()
					more = false
				}
			}
			if cn != nil {
				c.retries.Add(1)
				h.start(sent, cn, rmd)
				used[sent] = cn.r
				sent++
				pending++
				tick = nil // the delay starts again
			}
			continue
		}
		if more && tick == nil && p.HedgingDelay > 0 {
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > p.HedgingDelay {
				if t == nil {
					t = timers.Get().(*time.Timer)
				}
				stopTimer(t) // it may have fired, its tick not taken
				t.Reset(p.HedgingDelay)
				tick = t.C
			}
		}
		if pending == 0 {
			// Every attempt failed, and no more may be sent.
			c.failed.Add(1)
			decide(last)
			return append(resp, last.out...), c.onReplica(last.cn, last.err, sent)
		}
		select {
		case r := <-h.res:
			pending--
			if r.panicked {
				panic(r.p)
			}
			if r.err == nil {
				h.decided.Store(true)
				decide(r)
				return append(resp, r.out...), nil
			}
			if !c.hedgeGoesOn(p, r.cn, r.err) {
				h.decided.Store(true)
				c.failed.Add(1)
				decide(r)
				return append(resp, r.out...), c.onReplica(r.cn, r.err, sent)
			}
			last, now = r, true
		case <-tick:
			now = true
		case <-done:
			c.failed.Add(1)
			return resp, ctx.Err()
		}
	}
}

// stopTimer stops t and takes a tick it sent and nobody took, so that
// its next Reset starts afresh whichever timer semantics the program
// runs with (a main module older than Go 1.23 keeps the timers'
// channels buffered: GODEBUG asynctimerchan).
func stopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}
