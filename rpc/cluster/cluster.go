package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/internal/unavailable"
)

// ErrNoReplica is returned by a call that found no admitted replica (all
// ejected, connecting or removed, or none resolved yet) and could not
// wait for one (see [WithWaitForReady]). The call was not sent. The error
// a call returns matches it with errors.Is and says what last went wrong
// (a resolution, a dial, a health check); that last error is in its text
// only, not wrapped: it is not this call's (its status, an earlier call's
// or a health check's, would be taken for this call's by rpc.Code).
// rpc.Code says 503 (rpc.StatusUnavailable, gRPC's Unavailable) of it.
var ErrNoReplica = unavailable.New("cluster: no replica is ready")

// Client sends calls to the replicas of a service: it resolves their
// addresses, keeps connections to them, spreads calls by load, ejects
// failing replicas and retries calls that were refused unrun. It is safe
// for concurrent use and implements [rpc.Caller], [rpc.Sender] and
// [rpc.StreamOpener], so a generated client works on it unchanged. Create it with [Dial].
type Client struct {
	o      options
	target string
	res    Resolver
	chain  rpc.Invoker
	schain rpc.Streamer     // stream interceptors around openStream; nil: none
	wb     weightedBalancer // the balancer, when it honours weights itself
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ready  atomic.Pointer[readySet] // connections of admitted replicas; never nil
	budget budget

	resolveNow chan struct{}
	// resolving is the resolver's call that outlived the resolution
	// that made it (it ignored its ctx), or nil; used by Dial, then by
	// resolveLoop alone (see resolve).
	resolving *resolveCall

	closeDone chan struct{} // closed when Close has finished

	names rpc.MethodNames // the client's own table of method names (no WithMethodNames)

	mu        sync.Mutex
	closed    bool
	replicas  map[string]*replica
	readyCh   chan struct{} // closed when the ready set gains a connection
	firstCh   chan struct{} // closed once Dial can return
	firstDone bool
	lastErr   error // of the latest failed resolution, dial or check
	// A call's want of a replica while none is ready, which cuts the
	// back-offs short (see replica.backoff): wantAt is the now() of the
	// last call that found none, waiting counts the calls waiting for
	// one (WithWaitForReady), and wantCh is closed at a want when
	// wantWatched (a replica in back-off watches it).
	wantAt      int64
	waiting     int
	wantCh      chan struct{}
	wantWatched bool
	// stateCh is closed, and set to nil, at every change of the ready
	// set or of the replicas (publishLocked): WaitReady waits on it; nil
	// until one does. readyWaits counts the WaitReady calls waiting.
	stateCh    chan struct{}
	readyWaits int
	// gone remembers the replicas the resolver dropped, for a while
	// (see goneReplica); nil until one is.
	gone map[string]goneReplica

	// The counters of Stats. calls is written by every call, on every
	// core: it comes last, after the fields under mu, so that its cache
	// line holds none of the words every call reads (ready, the budget,
	// the chains and the balancer), which its writes would take from
	// the other cores' caches (TestCallCounterLineApart).
	calls         atomic.Int64
	streams       atomic.Int64
	retries       atomic.Int64
	retriesDenied atomic.Int64
	failed        atomic.Int64
	ejections     atomic.Int64
	resolves      atomic.Int64
	resolveErrs   atomic.Int64

	// retrySleep and retryJitter stand in for a retry's back-off wait and
	// draw in tests (nil: sleepCtx and fullJitter).
	retrySleep  func(context.Context, time.Duration) bool
	retryJitter func(time.Duration) time.Duration
}

// readySet is the connections that get calls, and their weights.
type readySet struct {
	conns []*Conn
	// cum holds the running sums of the connections' weights; nil when
	// they are all equal (the balancers then draw uniformly).
	cum []float64
}

// Conn is one connection of the client to a replica, as a [Balancer]
// sees it.
type Conn struct {
	r        *replica
	rc       *rpc.Client
	weight   atomic.Uint64 // float64 bits: its replica's weight, set when published
	inflight atomic.Int32  // calls of this client on rc
	gone     atomic.Bool   // retired: no new calls; set under the client's mu
	born     time.Time     // when it was dialed
	closedUs atomic.Bool   // closed by this client (not by the server)
	broke    atomic.Bool   // a call found it broken: its replica was charged one failure
	refused  atomic.Bool   // the server refused a call on it unrun (going away)
	// lostAge is how old it was when this client first saw it lost (the
	// drop that retired it: a go-away or a break found at a pick, a call
	// refused unrun or failed with the connection closed, a health
	// check); 0 until then. Set under the client's mu; connect reads it
	// after its own drop, which takes the mu.
	lostAge time.Duration
}

// close closes the connection, as this client's decision unless the
// server (or a break) closed it first: a connection retired after its
// server closed it stays the server's close, which connect backs off from
// when it came soon after the dial.
func (c *Conn) close() {
	if !c.rc.Closed() {
		c.closedUs.Store(true)
	}
	c.rc.Close()
}

// Addr returns the replica's address.
func (c *Conn) Addr() string { return c.r.addr }

// InFlight returns how many calls of the cluster client are on the
// connection now.
func (c *Conn) InFlight() int { return int(c.inflight.Load()) }

// Load returns the connection's load as the built-in balancers see it:
// the calls in flight on it ([Conn.InFlight]), its open streams
// ([rpc.Client.Streams]) and its outstanding promises
// ([rpc.Client.Promises]), each counting one. It costs three atomic
// loads.
func (c *Conn) Load() int { return int(c.load()) }

func (c *Conn) load() int32 {
	return c.inflight.Load() + int32(c.rc.Streams()) + int32(c.rc.Promises())
}

// Latency returns the average latency of the answers of the connection's
// replica, as [P2C] weighs it: the lower of its first two answers', then
// moved a quarter of the way toward each slower answer (counted as at
// most 4 times the average) and half way toward each faster one, a move
// taken only when it is more than 1/32 of the average (of half a
// millisecond, for an average under that), so that a steady latency
// costs no write shared by the callers (the average stays within about
// a ninth below and a fifteenth above a steady latency); 0 when
// unknown (fewer than two answers since the replica was admitted). It is
// as old as the replica's last answer: P2C gives an old one less weight
// (see P2C). A call counts when its replica answered it (a handler's
// status included, but not 500 and above nor "no such method", which
// count as failed) or held it past its deadline, through this client's
// Call, or held a hedged call's attempt until another replica's answer
// decided the call, for longer than its average ([HedgingPolicy]); not a Send, a stream, nor a call that failed otherwise (a replica
// that fails at once must not look fast). Of the calls to a replica
// whose average is under half a millisecond, one in 8, drawn at random,
// is timed (two clock readings cost about as much as the rest of the
// balancer's work on such a call); every call to a slower one is. It
// costs three atomic loads.
func (c *Conn) Latency() time.Duration {
	l, _ := c.r.lat.get()
	return time.Duration(l)
}

// Weight returns the weight of the connection's replica (see
// [Endpoint]): 1 unless the resolver gave another.
func (c *Conn) Weight() float64 { return math.Float64frombits(c.weight.Load()) }

// Client returns the connection. Calls made on it directly bypass the
// balancer, the retries and the accounting; the ends of streams opened
// on it count toward its replica's ejection as those of the cluster's
// own streams do (see [Client.OpenStream]).
func (c *Conn) Client() *rpc.Client { return c.rc }

var (
	_ rpc.Caller = (*Client)(nil)
	_ rpc.Sender = (*Client)(nil)
)

// Dial resolves target (see [ParseTarget], or [WithResolver]), connects
// to the replicas and checks their health, and returns a client. It
// fails only when target cannot be read ([ErrTarget]), ctx is already
// done, or a method is given both a retry policy and a hedging policy
// (see [WithHedgingPolicy]): like a gRPC channel, a client whose replicas are not up yet (the
// name does not resolve yet, resolves to no address, or no replica
// answers) is returned all the same, and keeps resolving and dialing in
// the background: resolution is retried after 1 s, doubling up to the
// refresh interval ([WithRefresh]) while no address is known, and a
// replica that cannot be reached is retried after its ejection back-off
// ([WithEjection]: 0.5 s doubling to 30 s by default; while no replica
// is ready and calls want one, 0.5 s doubling with each redial of the
// outage to 30 s). Meanwhile calls
// fail at once with an error matching [ErrNoReplica] that says what went
// wrong, or wait within their ctx with [WithWaitForReady].
//
// Dial waits, within ctx, until a replica is admitted or each resolved
// address has been tried once, so that the first calls on a healthy
// service do not fail; when ctx ends first it returns the client anyway.
// Its resolution, like every later one, is given up after the health
// timeout or 5 s, whichever is longer ([WithHealthCheck]): a resolver
// that does not answer holds Dial no longer, whatever ctx allows.
// [Client.Stats] tells what is admitted. Dial returns as soon as one
// replica is admitted, the others possibly still dialing or in their
// health check: until they are admitted every call goes to that one
// (thousands of in-memory calls, under GOMAXPROCS=1). A caller that
// wants more of them first, such as a test that counts the calls each
// replica gets, waits with [Client.WaitReady] (ExampleDial_inMemory).
func Dial(ctx context.Context, target string, opts ...Option) (*Client, error) {
	o := buildOptions(opts)
	if err := o.checkPolicies(); err != nil {
		return nil, err
	}
	res := o.resolver
	if res == nil {
		var err error
		if res, err = ParseTarget(target); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.clientOpts = tlsServerName(o.clientOpts, res)
	c := &Client{
		o:          o,
		target:     target,
		res:        res,
		replicas:   make(map[string]*replica),
		readyCh:    make(chan struct{}),
		wantCh:     make(chan struct{}),
		firstCh:    make(chan struct{}),
		resolveNow: make(chan struct{}, 1),
		closeDone:  make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ready.Store(&readySet{conns: []*Conn{}})
	c.budget.init(o.retryRatio, o.minRetries)
	c.wb, _ = o.balancer.(weightedBalancer)
	c.chain = rpc.ChainInvoker(o.interceptors, c.call)
	c.schain = rpc.ChainStreamer(o.streamICs, c.openStream)
	c.resolves.Add(1)
	// Bounded as the background resolutions are: a resolver that does
	// not answer must not hold Dial for as long as ctx lasts (for ever,
	// with context.Background).
	rctx, rcancel := context.WithTimeout(ctx, c.resolveTimeout())
	eps, err := c.resolve(rctx)
	rcancel()
	if err == nil && len(eps) == 0 {
		err = errNoAddress
	}
	if err == nil {
		err = c.setEndpoints(eps)
	}
	if err != nil {
		c.resolveErrs.Add(1)
		c.mu.Lock()
		c.lastErr = fmt.Errorf("cluster: resolving %s: %w", target, err)
		c.checkFirstLocked() // no replica to wait for
		c.mu.Unlock()
	}

	select {
	case <-c.firstCh:
	case <-ctx.Done():
	}
	// A watcher runs in a goroutine Close does not wait for: one that
	// ignores its ctx must not hold Close for ever. Its updates after
	// Close change nothing (setEndpoints).
	switch w := res.(type) {
	case WeightedWatcher:
		go c.watch(func() { w.WatchWeighted(c.ctx, c.update) })
	case Watcher:
		go c.watch(func() { w.Watch(c.ctx, func(addrs []string) { c.update(unweighted(addrs)) }) })
	default:
		c.wg.Add(1)
		go c.resolveLoop()
	}
	return c, nil
}

// watch runs a watcher's Watch. One that returns, or panics, before the
// client is closed (a registry's stream that ended) would leave the
// client with its set as it last was, for good: the client polls the
// watcher's Resolve from then on, as a plain Resolver's.
func (c *Client) watch(run func()) {
	defer func() {
		p := recover()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		if p != nil {
			c.lastErr = fmt.Errorf("cluster: the watcher of %s panicked: %v; polling it instead", c.target, p)
		}
		c.wg.Add(1)
		go c.resolveLoop()
	}()
	run()
}

// resolveCall is one call of the resolver, made in a goroutine of its
// own; done is closed once eps and err are set.
type resolveCall struct {
	done chan struct{}
	eps  []Endpoint
	err  error
}

// resolve asks the resolver for the addresses, within ctx. The resolver
// runs in a goroutine of its own, so that one that ignores its ctx holds
// neither Dial nor Close: resolve returns ctx's error when ctx ends
// first, and leaves the call to finish on its own. The next resolve
// waits for that call, if it is still running, rather than making a
// second one beside it (so a resolver that hangs costs one goroutine,
// not one per resolution), and takes its answer; an answer that came
// between the two is dropped, and the resolver asked afresh.
func (c *Client) resolve(ctx context.Context) ([]Endpoint, error) {
	rc := c.resolving
	c.resolving = nil
	if rc != nil {
		select {
		case <-rc.done:
			rc = nil // came back meanwhile: stale
		default:
		}
	}
	if rc == nil {
		rc = &resolveCall{done: make(chan struct{})}
		go func() {
			defer close(rc.done)
			// On the client's goroutine, a resolver's panic would end
			// the program, with no caller to recover it: it fails this
			// resolution instead, as an error does.
			defer func() {
				if p := recover(); p != nil {
					rc.eps, rc.err = nil, fmt.Errorf("the resolver panicked: %v", p)
				}
			}()
			rc.eps, rc.err = resolveEndpoints(ctx, c.res)
		}()
	}
	select {
	case <-rc.done:
		return rc.eps, rc.err
	case <-ctx.Done():
		c.resolving = rc
		return nil, ctx.Err()
	}
}

// errNoAddress is the error of a resolution, or an update, that gave no
// address.
var errNoAddress = errors.New("no address")

// update takes a set a watcher pushed. One with no address keeps the
// replicas and counts as a failed resolution, as a Resolve that gives
// none does.
func (c *Client) update(eps []Endpoint) {
	c.resolves.Add(1)
	err := errNoAddress
	if len(eps) > 0 {
		err = c.setEndpoints(eps)
	}
	if err != nil {
		c.resolveErrs.Add(1)
		c.mu.Lock()
		c.lastErr = fmt.Errorf("cluster: update of %s: %w", c.target, err)
		c.mu.Unlock()
	}
}

// Call sends a call to one replica (see [rpc.Client.Call] for the buffers
// and the errors) and returns its answer.
//
// The connection is chosen by the balancer among those of the admitted
// replicas. A call the server refused without running it (it was going
// away: [rpc.IsRetryable]) is sent once more, to another replica when one
// is ready, if ctx is not done and the retry budget allows
// ([WithRetryBudget]); with a [RetryPolicy] for method ([WithRetryPolicy])
// a failed call is sent again as the policy says, within the same
// budget and ctx, and its error, after several attempts, says how many
// ([ReplicaError.Attempts]); with a [HedgingPolicy] for method
// ([WithHedgingPolicy]) the call is sent to further replicas while no
// answer came, and the first that decides it is its answer (see
// HedgingPolicy for the buffers and the errors); a call that a connection refused before writing it
// (its go-away came between the pick and the write, or its table of
// pending calls was full: [rpc.ErrTooManyPending]) is not a retry and
// goes to another connection at once. A call that may have run (any
// answer a handler gave, a broken connection, a ctx error) is not sent
// again, but as its method's retry policy allows. A call whose ctx has already ended returns ctx's error at once,
// as [rpc.Client.Call] does, whether or not a replica is ready (nothing
// is sent; [Stats] counts it failed); one whose deadline has passed,
// its Done not closed yet (its timer late), is not sent by the
// connection and fails with context.DeadlineExceeded, which does not
// count against the replica it was routed to (neither towards its
// ejection nor in its latency). A call whose deadline passed while it
// waited for room in its connection's write queue (4 MiB the replica
// had not taken: rpc.Client waits for room within ctx, see
// [rpc.Client.Call]) was not sent, yet counts as a call the replica
// held past its deadline: the replica, or the path to it, did not take
// the queued bytes as fast as they came for as long as the call could
// wait, which is how a replica that stopped reading looks (gRPC-go's
// outlier detection counts every call that failed on the connection it
// picked, one that waited for the transport's flow control too), and
// rpc.Client returns ctx's error for both alike. A call that a
// connection refuses at once because it is full
// ([rpc.ErrTooManyPending]) goes to another connection, as said above,
// and counts against no one. With no admitted replica the call
// fails with [ErrNoReplica] (or waits, see [WithWaitForReady]), but a
// retry that finds none returns the refusal it followed; after Close,
// with an error matching rpc.ErrClosed. An error the replica's
// connection gave comes in a [*ReplicaError] that names the replica,
// unless it is ctx's error, which is returned itself.
//
// A warm call allocates nothing, with a retry policy too; a retry
// allocates nothing but its failed attempt's error on its connection; a
// hedged call allocates its attempts' ctx (see [WithHedgingPolicy]).
// Interceptors ([WithInterceptors]) run once around the whole call, its
// retries and hedges included; the connections' interceptors and observers
// ([WithClientOptions]) see each attempt.
func (c *Client) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if c.chain != nil {
		return c.chain(ctx, method, req, resp)
	}
	return c.call(ctx, method, req, resp)
}

func (c *Client) call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if c.o.hedging {
		if p := c.o.hedgingPolicy(method); p != nil {
			return c.hedged(ctx, p, method, req, resp)
		}
	}
	out, err := attempt(c, ctx, true, true, method, func(cn *Conn) ([]byte, error) {
		return cn.rc.Call(ctx, method, req, resp)
	})
	if out == nil && err != nil {
		out = resp
	}
	return out, err
}

// attempt makes one call (or send) through the connections the balancer
// picks. A call the connection refused before writing it (its go-away
// came first, or it had as many calls pending as it may) goes to another
// connection without counting as a retry; a call refused unrun is sent
// once more elsewhere, within the budget and ctx; any other failure is
// the caller's. With answered, a success shows the replica works (a
// Send's success shows only that it was written).
func attempt[T any](c *Client, ctx context.Context, answered, unary bool, method uint32, do func(*Conn) (T, error)) (T, error) {
	c.calls.Add(1)
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			// Ended before it began: ctx's error, as rpc.Client.Call
			// gives, whether or not a replica is ready (it got
			// ErrNoReplica when none was), and no deposit in the retry
			// budget for a call that was never made. (A look at Done,
			// not Err: a cancelCtx's Err takes its lock.)
			c.failed.Add(1)
			var none T
			return none, ctx.Err()
		default:
		}
	}
	c.budget.call()
	retried, unsent, attempts := false, 0, 0
	// last is the answer of the attempt a retry follows, lastErr its
	// error, on lastCn: a retry that finds no replica ready, or is not
	// sent (the budget, the ctx, its deadline), returns them (a refusal
	// unrun did not run), not ErrNoReplica. The caller's error is made
	// of them only then, so that a retry allocates nothing here.
	var last T
	var lastErr error
	var lastCn *Conn
	pending := false // a retry taken from the budget and not sent yet
	var pol *RetryPolicy
	polLooked := !unary // Send has no policy
	var avoid *replica
	var until time.Time // the end of the call's wait for a replica (WithWaitForReady)
	// held is the connection do runs on: when do panics (a panicking
	// interceptor of the connection's), the panic goes on to the caller,
	// and the call is taken off its in-flight count here, else the
	// balancer would count it as load for ever.
	var held *Conn
	defer func() {
		if held != nil {
			held.inflight.Add(-1)
		}
	}()
	for {
		cn, err := c.pick(ctx, avoid, &until)
		if err != nil {
			c.failed.Add(1)
			if pending {
				// The retry found no connection: nothing was sent
				// again, and the budget gets its retry back.
				c.budget.refund()
				if errors.Is(err, ErrNoReplica) {
					return last, c.onReplica(lastCn, lastErr, attempts)
				}
			}
			var none T
			return none, err
		}
		if pending {
			pending = false
			c.retries.Add(1) // counted once the retry has a connection
		}
		// live: a call (answered) handed to the connection with its
		// ctx not done and time left; a deadline that then ends it
		// passed while the replica had it.
		live := answered && timeLeft(ctx, done)
		var start int64 // 0: the call is not timed
		if answered && cn.r.lat.timeNext() {
			start = now()
		}
		held = cn
		v, err := do(cn)
		held = nil
		cn.inflight.Add(-1)
		if err == nil {
			if answered {
				if start != 0 {
					cn.r.lat.observe(start, now())
				}
				cn.r.ok()
			}
			return v, nil
		}
		if live && err == context.DeadlineExceeded && !isDone(done) {
			// The connection gave ctx's error while Done is open: the
			// deadline passed between timeLeft and the connection's own
			// look, and the call was not sent (rpc.Client.Call). A call
			// sent and abandoned at its deadline returns once Done is
			// closed.
			live = false
		}
		if c.account(cn, err, live) && start != 0 {
			cn.r.lat.observe(start, now())
		}
		if unsent < 4 && ctx.Err() == nil {
			if err == rpc.ErrGoAway {
				unsent++ // the connection went away before the call was written: not a retry
				continue
			}
			if cn.rc.Draining() && errors.Is(err, rpc.ErrGoAway) {
				// Refused unrun by a server that had sent its go-away
				// (read before the refusal: the frames come in order):
				// the call crossed the go-away, as one refused before it
				// was written; not a retry either. It used to be the
				// call's one retry, and a call that crossed the go-aways
				// of two connections at once (connections made together
				// aging out together, rpc.WithMaxConnectionAge) failed.
				unsent++
				continue
			}
			if errors.Is(err, rpc.ErrTooManyPending) {
				unsent++ // the connection is full: not written, not a retry
				avoid = cn.r
				continue
			}
		}
		attempts++
		if !polLooked {
			// Looked up only now: a call that succeeds pays nothing for it.
			pol, polLooked = c.o.retryPolicy(method), true
		}
		if pol == nil {
			if c.mayRetry(ctx, err, &retried) {
				avoid = cn.r
				last, lastErr, lastCn, pending = v, err, cn, true
				continue
			}
		} else if attempts < pol.MaxAttempts && (rpc.IsRetryable(err) || c.policyRetries(pol, cn, err)) && ctx.Err() == nil {
			if c.policyRetry(ctx, pol, attempts, rpc.IsRetryable(err)) {
				avoid = cn.r
				last, lastErr, lastCn, pending = v, err, cn, true
				continue
			}
		}
		c.failed.Add(1)
		return v, c.onReplica(cn, err, attempts)
	}
}

// policyRetry decides the retry that follows the nth attempt under p,
// waits its back-off (none after a refusal unrun) and reports whether it
// is to be sent: not when the back-off would end past ctx's deadline,
// nor when the budget is spent (the retry is then denied), nor when ctx
// ends during the back-off (the retry taken from the budget is given
// back).
func (c *Client) policyRetry(ctx context.Context, p *RetryPolicy, n int, refused bool) bool {
	var d time.Duration
	if !refused {
		d = c.backoff(p, n)
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	if !c.budget.retry() {
		c.retriesDenied.Add(1)
		return false
	}
	if !c.sleep(ctx, d) {
		c.budget.refund()
		return false
	}
	return true
}

// timeLeft reports whether a call under ctx (done is ctx.Done()) is
// sent: ctx is not done and its deadline, if any, has not passed. A ctx
// that can never end has no deadline (rpc.Client does not look for one
// either), and costs nothing; one with a deadline costs a clock reading.
// rpc.Client fails a call whose deadline has passed with
// context.DeadlineExceeded before sending it, even while Done is not
// closed yet (its timer late): such a call says nothing of the replica.
func timeLeft(ctx context.Context, done <-chan struct{}) bool {
	if done == nil {
		return true
	}
	if isDone(done) {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > 0
}

// isDone reports whether done (a ctx's Done, nil: never) is closed.
func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Send sends a call without waiting for its answer (see [rpc.Client.Send]):
// the promise, and the calls pipelined on it, stay on the connection the
// balancer chose. A send refused because the connection was going away is
// tried once more elsewhere, under the same rules as Call. The balancer
// counts the promise as load on its connection until its Wait returns or
// it is released. Neither the client's interceptors ([WithInterceptors])
// nor the connections' run around it (see [rpc.ClientInterceptor]); an
// observer given to the connections ([WithClientOptions]) sees each
// attempt once, as for Call: a send refused before it was written, and
// the promise when its Wait returns or at its Release.
func (c *Client) Send(ctx context.Context, method uint32, req, resp []byte) (rpc.Promise, error) {
	return attempt(c, ctx, false, false, method, func(cn *Conn) (rpc.Promise, error) {
		return cn.rc.Send(ctx, method, req, resp)
	})
}

// OpenStream opens a stream (see [rpc.Client.OpenStream]) on a connection
// the balancer picks; the stream stays on it. An open the connection
// refused before writing it (its go-away came first, or it had as many
// streams open as it may: [rpc.ErrTooManyStreams]) goes to another
// connection; once the open is written it is never sent again (the
// server may have started its handler; a [RetryPolicy] does not apply to
// streams): a refusal comes as an error end
// that Recv returns. An open stream counts as load on its connection for
// the balancer, like a call in flight, until it ends; a connection retired
// while streams are open on it is kept until they end (within the drain
// timeout). Stream interceptors ([WithStreamInterceptors]) run once
// around the open.
//
// The stream's end counts toward its replica's ejection as a call's
// answer does (gRPC's outlier detection counts a stream by its final
// status too): an error end of 500 and above, or 404 "no such stream
// method" ([rpc.IsNoSuchMethod]: a replica deployed without the method),
// is a failed call; a clean end, or a handler's own 4xx, an answered
// one (it ends the replica's failures in a row); a connection that
// broke, one failure, however many streams and calls were on it. The
// caller's ends count nothing: its ctx ended, or the stream's deadline
// passed on the server (504: the caller chose how long the stream
// lives); nor does the 503 with which a server going away ends its
// streams or refuses their opens (even one that comes before its
// go-away: such a refusal, marked not run, has its connection replaced
// at once, as a call refused unrun does), nor the 503 "too many open streams" with which a server
// refuses an open beyond its limit on the connection ([rpc.WithMaxStreams]:
// the replica is full, not failing, as a connection full on the
// client's side, [rpc.ErrTooManyStreams], is). The end is counted as the connection reads it, just after
// Recv may have returned it. A stream's duration is not one of the
// replica's latencies ([Conn.Latency]): it lasts as long as its caller
// and its handler make it. A stream observer given to the connections
// ([WithClientOptions]) sees every stream, and the ends still count.
func (c *Client) OpenStream(ctx context.Context, method uint32, init []byte) (*rpc.Stream, error) {
	if c.schain != nil {
		st, err := c.schain(ctx, method, init)
		if st == nil && err == nil {
			err = rpc.ErrNoStreamFromInterceptor
		}
		return st, err
	}
	return c.openStream(ctx, method, init)
}

func (c *Client) openStream(ctx context.Context, method uint32, init []byte) (*rpc.Stream, error) {
	c.calls.Add(1)
	c.streams.Add(1)
	unsent := 0
	var avoid *replica
	var until time.Time
	var held *Conn // see attempt
	defer func() {
		if held != nil {
			held.inflight.Add(-1)
		}
	}()
	for {
		cn, err := c.pick(ctx, avoid, &until)
		if err != nil {
			c.failed.Add(1)
			return nil, err
		}
		held = cn
		st, err := cn.rc.OpenStream(ctx, method, init)
		held = nil
		cn.inflight.Add(-1)
		if err == nil {
			return st, nil
		}
		c.account(cn, err, false)
		if unsent < 4 && ctx.Err() == nil {
			if err == rpc.ErrGoAway {
				unsent++
				continue
			}
			if errors.Is(err, rpc.ErrTooManyStreams) {
				unsent++
				avoid = cn.r
				continue
			}
		}
		c.failed.Add(1)
		return nil, c.onReplica(cn, err, 1)
	}
}

// ReplicaError is the error of a call (or a send, or a stream's open)
// that failed on a replica: it names the replica, and wraps the error the
// connection gave, so that errors.Is and errors.As see through it
// ([rpc.StatusError], [rpc.IsRetryable], rpc.ErrClosed and the others
// match as they do on an [rpc.Client]'s errors, and so do the causes a
// broken connection's error wraps: io.EOF, syscall.ECONNRESET...). A call that ended with
// its ctx gets ctx's error itself, not wrapped (err == context.Canceled
// holds, as on an rpc.Client), and so does one that found no replica
// ([ErrNoReplica]), and one whose connection Close closed (an error
// matching rpc.ErrClosed that says the client is closed, as a call made
// after Close gets). The errors of a promise's Wait and of a stream's
// Recv and Send are the connection's own: they are not wrapped.
type ReplicaError struct {
	Addr string // the replica's address (see [ReplicaStats])
	Err  error  // the error its connection gave
	// Attempts is the number of attempts the call made on the wire, the
	// last one on Addr and failing with Err (1: not sent again; 0 in a
	// ReplicaError made by hand counts as 1).
	Attempts int
}

// Error returns the replica's address and the error's text, and the
// number of attempts when there were several.
func (e *ReplicaError) Error() string {
	s := "cluster: replica " + e.Addr + ": " + e.Err.Error()
	if e.Attempts > 1 {
		s += " (after " + strconv.Itoa(e.Attempts) + " attempts)"
	}
	return s
}

// Unwrap returns the error the replica's connection gave.
func (e *ReplicaError) Unwrap() error { return e.Err }

// onReplica returns the error err of a call on cn as the caller gets it:
// in a ReplicaError, unless it is a ctx's error, or the connection's
// close by Close (the error of a call made after Close: the replica had
// no part in it).
func (c *Client) onReplica(cn *Conn, err error, attempts int) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if cn.closedUs.Load() && errors.Is(err, rpc.ErrClosed) && c.isClosed() {
		return errClientClosed
	}
	return &ReplicaError{Addr: cn.r.addr, Err: err, Attempts: attempts}
}

// errClientClosed is the error of a call made after Close, or on a
// connection Close closed.
var errClientClosed = fmt.Errorf("%w: the cluster client is closed", rpc.ErrClosed)

// mayRetry reports whether a call that failed with err is to be sent
// again, and takes the retry from the budget.
func (c *Client) mayRetry(ctx context.Context, err error, retried *bool) bool {
	if *retried || !rpc.IsRetryable(err) || ctx.Err() != nil {
		return false
	}
	if !c.budget.retry() {
		c.retriesDenied.Add(1)
		return false
	}
	*retried = true
	return true
}

// pick returns a connection for a call, with the call counted in its
// in-flight calls (the caller takes it off). A retry avoids the replica
// that refused the call when another one is ready. until is the end of
// the call's wait for a replica (see waitReady), kept across its picks.
func (c *Client) pick(ctx context.Context, avoid *replica, until *time.Time) (*Conn, error) {
	for tries := 0; ; tries++ {
		set := c.ready.Load()
		conns := set.conns
		if len(conns) == 0 || tries > 64 {
			if err := c.waitReady(ctx, until); err != nil {
				return nil, err
			}
			tries = 0
			continue
		}
		i := c.choose(set)
		if avoid != nil && conns[i].r == avoid {
			i = elsewhere(conns, i, []*replica{avoid})
		}
		if cn := conns[i]; c.take(cn) {
			return cn, nil
		}
	}
}

// choose returns the index of the connection the balancer picks in set,
// which holds at least one.
func (c *Client) choose(set *readySet) int {
	conns := set.conns
	if len(conns) == 1 {
		return 0
	}
	var i int
	if set.cum != nil && c.wb != nil {
		i = c.wb.pickWeighted(conns, set.cum)
	} else {
		i = c.o.balancer.Pick(conns)
	}
	if uint(i) >= uint(len(conns)) {
		i = 0
	}
	return i
}

// take counts a call in cn's in-flight calls and reports whether cn
// takes calls; when it does not, the call is taken off again and cn
// dropped from the ready set (the next pick does not see it).
func (c *Client) take(cn *Conn) bool {
	// Counted first, then checked: a connection being retired is
	// marked gone before its in-flight count is read (retire), so
	// either we see gone here or retire sees our call.
	cn.inflight.Add(1)
	if !cn.gone.Load() && !cn.rc.Draining() && !cn.rc.Closed() {
		return true
	}
	cn.inflight.Add(-1)
	c.drop(cn)
	return false
}

// elsewhere returns the index of the least loaded connection whose
// replica is not one of avoid, or i when all are.
func elsewhere(conns []*Conn, i int, avoid []*replica) int {
	best, bestLoad := -1, int32(0)
	for k, cn := range conns {
		if slices.Contains(avoid, cn.r) {
			continue
		}
		if l := cn.load(); best < 0 || l < bestLoad {
			best, bestLoad = k, l
		}
	}
	if best < 0 {
		return i
	}
	return best
}

// waitReady waits for an admitted replica, within ctx and WithWaitForReady.
// A call waits WithWaitForReady once in all, however often a replica is
// admitted and gone again before its pick: its first wait sets *until, the
// end of its waits.
//
// A call that finds no replica ready cuts short the back-offs of the
// replicas (see replica.backoff), and so does a call waiting for one all
// the while it waits.
//
// A replica still admitted while none of its connections takes calls is
// replacing them (they went away: a server's go-away for a connection's
// age or idleness, or they closed), and a call waits for that, within
// its ctx, WithWaitForReady or not, as a gRPC call waits while its
// channel is connecting: until a replacement is in (or another replica
// is), or the replica is ejected (its dial failed), when the call fails
// as before. Without it, every call made in the moment between a
// go-away and the new connection failed with ErrNoReplica.
func (c *Client) waitReady(ctx context.Context, until *time.Time) error {
	c.mu.Lock()
	closed, ch := c.closed, c.readyCh
	none := len(c.ready.Load().conns) == 0
	var changed chan struct{}
	if none && !closed {
		c.wantLocked()
		if c.o.waitReady <= 0 && c.replacingLocked() {
			if c.stateCh == nil {
				c.stateCh = make(chan struct{})
			}
			changed = c.stateCh
		}
	}
	c.mu.Unlock()
	if closed {
		return errClientClosed
	}
	if !none {
		return nil
	}
	if changed != nil {
		// Any change of the ready set or of the replicas: the pick
		// looks again (and comes back here while the replacement is
		// still being dialed).
		select {
		case <-ch:
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	if c.o.waitReady <= 0 {
		return c.noReplica()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if until.IsZero() {
		*until = time.Now().Add(c.o.waitReady)
	}
	d := time.Until(*until)
	if d <= 0 {
		return c.noReplica()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	c.mu.Lock()
	c.waiting++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return c.noReplica()
	}
}

// replacingLocked reports whether a replica is admitted (with none of
// its connections in the ready set, when none is ready: it is dialing
// their replacements; see waitReady).
func (c *Client) replacingLocked() bool {
	for _, r := range c.replicas {
		if r.state == stateReady && !r.removed.Load() {
			return true
		}
	}
	return false
}

// wantLocked notes a call that found no replica ready, and wakes the
// replicas watching for one.
func (c *Client) wantLocked() {
	c.wantAt = now()
	if c.wantWatched {
		close(c.wantCh)
		c.wantCh = make(chan struct{})
		c.wantWatched = false
	}
}

// wantedLocked reports whether a call wants a replica, none being
// ready: one waits for one, or found none after since (a now()).
func (c *Client) wantedLocked(since int64) bool {
	return len(c.ready.Load().conns) == 0 && (c.waiting > 0 || c.wantAt > since)
}

// noReplica is the error of a call that found no admitted replica: it
// matches ErrNoReplica and says what last went wrong.
func (c *Client) noReplica() error {
	c.mu.Lock()
	last := c.lastErr
	c.mu.Unlock()
	if last == nil {
		return ErrNoReplica
	}
	return fmt.Errorf("%w (last error: %v)", ErrNoReplica, last)
}

// account looks at a failed call's error for what it says about the
// connection and the replica. live is for a call (not a send, nor a
// stream's open) sent with its ctx not done: a deadline that ends it
// passed while the replica had it, and counts against the replica.
// timed reports whether the time the call took is one of the replica's
// latencies: it answered (a handler's own 4xx), or held a live call past
// its deadline (at least that long).
func (c *Client) account(cn *Conn, err error, live bool) (timed bool) {
	r := cn.r
	switch {
	case rpc.IsRetryable(err):
		// Going away: no new calls on it; the replica dials a new one
		// (and backs off when it was new: a server that refuses every
		// call, with no go-away to say so, must not get a dial per call).
		cn.refused.Store(true)
		c.drop(cn)
	case errors.Is(err, rpc.ErrTooManyPending) || errors.Is(err, rpc.ErrTooManyStreams):
		// Not sent: says nothing of the replica. A connection that gave
		// up its abandoned calls and closed is replaced.
		if cn.rc.Closed() {
			c.drop(cn)
		}
	case errors.Is(err, rpc.ErrClosed) || cn.rc.Closed():
		// A connection we closed (retired past its drain timeout, or
		// Close) says nothing of the replica; one that broke counts as
		// one failed call, however many calls it had in flight.
		if !cn.closedUs.Load() && !c.isClosed() {
			if cn.broke.CompareAndSwap(false, true) {
				r.failed(err)
			}
			c.drop(cn)
		}
	case errors.Is(err, context.DeadlineExceeded):
		// The call's deadline passed: the client gave up waiting, or the
		// server answered 504 unrun because the deadline passed before it
		// could run the call, or 504 once it passed while the handler ran
		// (its answer beat the client's timer: it counts as the timer's
		// end would, rpc.StatusError.Is). When the call was sent with time left, the
		// replica held it past its deadline: a replica that takes calls
		// and answers none (a wedged handler, its health check fine)
		// fails, as gRPC's outlier detection counts DEADLINE_EXCEEDED. A
		// deadline that had passed before the call was sent (the call
		// never left) says nothing about the replica. One that passed
		// while the call waited for room in the connection's full write
		// queue comes as the same bare ctx error and counts: the
		// replica did not take the queue in that time (see Call).
		if live {
			r.failed(err)
			timed = true
		}
	case errors.Is(err, context.Canceled):
		// The caller gave up: says nothing about the replica.
	default:
		// The replica's fault, not the call's: 500 and above (a
		// handler's failure), or 404 "no such method" (rpc.IsNoSuchMethod:
		// a replica deployed without the method the others serve). A
		// handler's own 4xx (400, 401, 403, a 404 "no such account") is
		// about the call: the replica answered.
		if se := rpc.StatusOf(err); se != nil {
			if se.Code >= 500 || rpc.IsNoSuchMethod(err) {
				r.failed(err)
			} else {
				r.ok()
				timed = true
			}
		}
	}
	return timed
}

// tlsServerName returns opts with the TLS config verifying each replica
// against the host name of a DNS target, as gRPC-go does: a replica is
// dialed at an IP the name resolved to, and rpc.Dial takes the host of
// the address dialed for a config without a ServerName. A config with a
// ServerName, a target that is an IP or no DNS name (static, SRV, a
// resolver of the caller's), and a plain connection are left as they
// are. The caller's config is not changed: it is cloned, once per
// client, and the clone given after the caller's options (the last
// rpc.WithTLSConfig is the one that counts).
func tlsServerName(opts []rpc.ClientOption, res Resolver) []rpc.ClientOption {
	d, ok := res.(*DNS)
	if !ok {
		return opts
	}
	host := strings.TrimSuffix(d.Host, ".")
	if host == "" || net.ParseIP(host) != nil {
		return opts
	}
	cfg := rpc.ClientTLSConfig(opts...)
	if cfg == nil || cfg.ServerName != "" {
		return opts
	}
	cfg = cfg.Clone()
	cfg.ServerName = host
	return append(slices.Clip(opts), rpc.WithTLSConfig(cfg))
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// drop takes cn out of the ready set and retires it (once), noting how
// old it was then (lostAge: connect judges by it whether it was lost at
// once), and tells its replica to dial a replacement.
func (c *Client) drop(cn *Conn) {
	c.mu.Lock()
	changed := c.retireLocked(cn)
	if changed {
		cn.lostAge = max(time.Since(cn.born), 1)
		c.publishLocked()
	}
	c.mu.Unlock()
	if changed {
		cn.r.poke()
	}
}

// lost is told by cn's connection that it takes no new calls: its server
// sent go-away, or it closed or broke (rpc.WithOnClosing, see
// replica.dial). It drops cn at once, as a pick that found it so would,
// so that its replica dials the replacement (or backs off, for a
// connection lost at once) before a call needs one: a connection idle
// when it was lost was otherwise replaced only at the next pick. A
// connection not in its replica's set yet (dialed, in its health check)
// is left to connect, poked to look at it again; one retired already is
// left alone.
func (c *Client) lost(cn *Conn) {
	r := cn.r
	c.mu.Lock()
	in := slices.Contains(r.conns, cn)
	changed := in && c.retireLocked(cn)
	if changed {
		cn.lostAge = max(time.Since(cn.born), 1)
		c.publishLocked()
	}
	c.mu.Unlock()
	if changed || !in && !cn.gone.Load() {
		r.poke()
	}
}

// retireLocked marks cn gone and closes it once its calls are answered;
// false when it was gone already.
func (c *Client) retireLocked(cn *Conn) bool {
	if cn == nil || cn.gone.Load() {
		return false
	}
	cn.gone.Store(true)
	if c.closed {
		go cn.close()
		return true
	}
	c.wg.Add(1)
	go c.retire(cn)
	return true
}

// retire waits until no call is on cn (within the drain timeout, or until
// the client closes), then closes it.
func (c *Client) retire(cn *Conn) {
	defer c.wg.Done()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(c.o.drainTimeout)
	for (cn.inflight.Load() != 0 || cn.rc.Pending() != 0 || cn.rc.Streams() != 0) && !cn.rc.Closed() && time.Now().Before(deadline) {
		select {
		case <-c.ctx.Done():
			cn.close()
			return
		case <-t.C:
		}
	}
	cn.close()
}

// publishLocked rebuilds the ready set from the replicas. It takes time
// and memory in proportion to the replicas and their connections, under
// the client's lock (picks do not take it); the running sums of the
// weights are made only when the weights differ. It wakes the WaitReady
// calls waiting (stateCh): every change they count goes through it.
func (c *Client) publishLocked() {
	var conns []*Conn
	equal := true
	if !c.closed {
		// Room for the previous set and one more replica's connections:
		// a change (an admission, a connection dialed) adds no more.
		conns = make([]*Conn, 0, len(c.ready.Load().conns)+c.o.connsPer)
		for _, r := range c.replicas {
			if r.state != stateReady || r.removed.Load() {
				continue
			}
			for _, cn := range r.conns {
				if cn != nil && !cn.gone.Load() {
					cn.weight.Store(math.Float64bits(r.weight))
					if len(conns) > 0 && r.weight != conns[0].r.weight {
						equal = false
					}
					conns = append(conns, cn)
				}
			}
		}
	}
	if conns == nil {
		conns = []*Conn{}
	}
	set := &readySet{conns: conns}
	if !equal {
		// Relative to the largest weight, so that the sums cannot
		// overflow (weights near math.MaxFloat64 would make them +Inf).
		top := 0.0
		for _, cn := range conns {
			top = max(top, cn.r.weight)
		}
		cum := make([]float64, len(conns))
		sum := 0.0
		for k, cn := range conns {
			sum += cn.r.weight / top
			cum[k] = sum
		}
		set.cum = cum
	}
	c.ready.Store(set)
	if len(conns) > 0 {
		close(c.readyCh)
		c.readyCh = make(chan struct{})
	}
	if c.stateCh != nil {
		close(c.stateCh)
		c.stateCh = nil
	}
}

// setEndpoints makes the replicas those of eps, with their weights. An
// address given twice counts once, with its first weight, and so do the
// spellings of one IP address and port, or of one host name and port in
// any case (see canonicalAddr). It fails, changing nothing, when eps holds
// more addresses than WithMaxReplicas allows.
func (c *Client) setEndpoints(eps []Endpoint) error {
	want := make(map[string]float64, min(len(eps), c.o.maxReplicas+1))
	unix := strings.HasPrefix(c.o.network, "unix") // paths, as given
	for _, ep := range eps {
		w := ep.Weight
		if !(w > 0) || math.IsInf(w, 1) {
			w = 1
		}
		a := ep.Addr
		if !unix {
			a = canonicalAddr(a)
		}
		if _, dup := want[a]; !dup {
			if len(want) == c.o.maxReplicas {
				return fmt.Errorf("more than %d addresses, the most the client keeps (WithMaxReplicas)", c.o.maxReplicas)
			}
			want[a] = w
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	for a, r := range c.replicas {
		if _, ok := want[a]; !ok && !r.removed.Load() {
			c.rememberLocked(r)
			r.remove()
		}
	}
	for a, w := range want {
		if r := c.replicas[a]; r != nil && !r.removed.Load() {
			r.weight = w
			continue
		}
		r := newReplica(c, a)
		r.weight = w
		c.recallLocked(r)
		c.replicas[a] = r
		c.wg.Add(1)
		go r.run()
	}
	c.publishLocked()
	c.checkFirstLocked()
	return nil
}

// checkFirstLocked lets Dial return once a replica is admitted or every
// replica has had its first try.
func (c *Client) checkFirstLocked() {
	if c.firstDone {
		return
	}
	done := len(c.ready.Load().conns) > 0
	if !done {
		done = true
		for _, r := range c.replicas {
			if !r.tried {
				done = false
			}
		}
	}
	if done {
		c.firstDone = true
		close(c.firstCh)
	}
}

// askResolve asks the resolve loop for a fresh look.
func (c *Client) askResolve() {
	select {
	case c.resolveNow <- struct{}{}:
	default:
	}
}

// resolveTimeout bounds one resolution: the health timeout, at least 5 s
// (a DNS server's own retries take seconds).
func (c *Client) resolveTimeout() time.Duration {
	floor := 5 * time.Second
	if d := resolveFloorTest.Load(); d != 0 {
		floor = time.Duration(d)
	}
	return max(c.o.healthTimeout, floor)
}

// resolveFloorTest, when not 0, replaces resolveTimeout's 5 s floor (in
// nanoseconds). Only tests set it (TestDialResolverHangs), so that they
// need not wait 5 s; atomic because clients other tests left may read it.
var resolveFloorTest atomic.Int64

// resolveLoop polls a Resolver that is not a Watcher. While no address
// is known (the name did not resolve yet) it asks again after 1 s,
// doubling up to the refresh interval.
func (c *Client) resolveLoop() {
	defer c.wg.Done()
	gap := min(c.o.refresh, time.Second)
	retry := gap
	next := func() time.Duration {
		c.mu.Lock()
		empty := len(c.replicas) == 0
		c.mu.Unlock()
		if !empty {
			retry = gap
			return c.o.refresh
		}
		d := retry
		retry = min(2*retry, c.o.refresh)
		return d
	}
	t := time.NewTimer(next())
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-c.resolveNow:
			if wait := gap - time.Since(last); wait > 0 {
				select {
				case <-c.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.resolveTimeout())
		eps, err := c.resolve(ctx)
		cancel()
		last = time.Now()
		c.resolves.Add(1)
		if err == nil && len(eps) == 0 {
			err = errNoAddress
		}
		if err == nil {
			err = c.setEndpoints(eps)
		}
		if err != nil {
			c.resolveErrs.Add(1)
			c.mu.Lock()
			c.lastErr = fmt.Errorf("cluster: resolving %s: %w", c.target, err)
			c.mu.Unlock()
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next())
	}
}

// Close stops the client: calls still waiting fail with an error matching
// rpc.ErrClosed, the connections close, the background work (resolution,
// health checks) ends before Close returns. The resolver's own calls are
// not waited for: their ctx is done, and a Resolve (or Watch) that
// ignores it finishes on its own goroutine, its answer unused; Close
// returns all the same. A Close made while another runs returns when
// that one does.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.closeDone
		return nil
	}
	c.closed = true
	c.cancel()
	var conns []*Conn
	for _, r := range c.replicas {
		r.poke()
		for _, cn := range r.conns {
			if cn != nil {
				conns = append(conns, cn)
			}
		}
	}
	c.publishLocked()
	close(c.readyCh) // wake waiters: they see closed
	c.readyCh = make(chan struct{})
	if !c.firstDone {
		c.firstDone = true
		close(c.firstCh)
	}
	c.mu.Unlock()
	for _, cn := range conns {
		cn.gone.Store(true)
		cn.close()
	}
	c.wg.Wait()
	close(c.closeDone)
	return nil
}

// Stats is a snapshot of a client's counters.
type Stats struct {
	// Calls counts calls (Call and Send) and streams opened, each once
	// whatever its retries; Streams counts the streams among them.
	Calls, Streams int64
	// Retries counts the retries sent (a refusal's, or a retry policy's:
	// a call sent three times counts two), and the hedges (a hedged call
	// sent to three replicas counts two); RetriesDenied counts retries
	// and hedges the budget did not allow (a denied retry's call failed;
	// a denied hedge's call waits for the attempts out).
	Retries, RetriesDenied int64
	// Failed counts calls that returned an error, whatever the error
	// (a handler's status included).
	Failed int64
	// Ejections counts replicas ejected (a replica ejected again after a
	// failed probe counts again).
	Ejections int64
	// Resolves counts resolutions (and updates of a Watcher);
	// ResolveErrors those that failed or gave no address.
	Resolves, ResolveErrors int64
	// LastError is what last went wrong for the client as a whole (a
	// failed resolution, a replica's failure), nil when nothing has: the
	// reason an ErrNoReplica names.
	LastError error
	// Replicas describes each known replica, sorted by address.
	Replicas []ReplicaStats
}

// ReplicaStats describes one replica.
type ReplicaStats struct {
	// Addr is the replica's address as the client dials it: as the
	// resolver gave it, but an IP address and port spelled as net/netip
	// spells them (see [Resolver]).
	Addr string
	// State is "ready" (gets calls), "connecting" (dialing or probing
	// before its first admission) or "ejected".
	State string
	// Conns is the number of connections getting calls, InFlight the calls
	// on them now.
	Conns, InFlight int
	// Ejections counts ejections in a row, on which its back-off
	// depends: 0 once it answers a call, or passes two health checks
	// in a row after its admission with no call failed meanwhile (see
	// [DefaultEjectBase]).
	Ejections int
	// Weight is the replica's weight (see [Endpoint]).
	Weight float64
	// LastError is why it was last ejected; nil if never.
	LastError error
}

// Stats returns the client's counters and the state of its replicas.
func (c *Client) Stats() Stats {
	s := Stats{
		Calls:         c.calls.Load(),
		Streams:       c.streams.Load(),
		Retries:       c.retries.Load(),
		RetriesDenied: c.retriesDenied.Load(),
		Failed:        c.failed.Load(),
		Ejections:     c.ejections.Load(),
		Resolves:      c.resolves.Load(),
		ResolveErrors: c.resolveErrs.Load(),
	}
	c.mu.Lock()
	s.LastError = c.lastErr
	for _, r := range c.replicas {
		if r.removed.Load() {
			continue
		}
		rs := ReplicaStats{Addr: r.addr, State: r.state.String(), Ejections: r.ejections, LastError: r.lastErr, Weight: r.weight}
		if r.state == stateReady {
			for _, cn := range r.conns {
				if cn != nil && !cn.gone.Load() {
					rs.Conns++
					rs.InFlight += cn.InFlight()
				}
			}
		}
		s.Replicas = append(s.Replicas, rs)
	}
	c.mu.Unlock()
	slices.SortFunc(s.Replicas, func(a, b ReplicaStats) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	return s
}

// A Client keeps the names of the methods called through it.
var _ rpc.MethodNamer = (*Client)(nil)

// MethodNames returns the client's table of method names
// ([rpc.MethodNames]): the one given with [WithMethodNames], else its
// own. Generated clients made on c add their names to it, and its
// connections keep theirs there, so that an interceptor or observer,
// the cluster's or a connection's, names an ordinal with it.
func (c *Client) MethodNames() *rpc.MethodNames {
	if c.o.names != nil {
		return c.o.names
	}
	return &c.names
}

// MethodName returns the full name of the method at wire ordinal method
// as generated clients made on c named it ("/greet.Greeter/hello"), ""
// for one none named (see [rpc.MethodNames]).
func (c *Client) MethodName(method uint32) string {
	name, _ := c.MethodNames().Name(method)
	return name
}
