package cluster

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// RetryPolicy says when a unary call ([Client.Call]) that failed is sent
// again, as a method's retryPolicy in a gRPC service config does. It is
// given with [WithRetryPolicy], for the methods it is safe for: a call
// that failed with one of Statuses, or whose connection broke
// (ConnectionLost), may have run on its replica, so only a method that
// may run twice (idempotent: a read, a put of a whole value) is to have
// one. The client cannot tell whether a failed call ran: a policy is the
// caller's declaration that its methods are safe to run again, and
// nothing checks it. A call the server refused without running it ([rpc.IsRetryable])
// is sent again whatever the policy says of its status, as without one,
// but under a policy it counts as one of MaxAttempts and waits its
// back-off.
//
// Each retry waits a back-off drawn at random between 0 and
// min(InitialBackoff × Multiplier^(n-1), MaxBackoff) for the nth retry
// ("full jitter", as gRPC draws it), then goes to another replica than
// the one that failed when one is ready, takes one retry from the retry
// budget ([WithRetryBudget]) and is not sent when the budget is spent
// (the call returns its last error and [Stats] counts a retry denied).
// It is not sent either once the call's ctx is done, nor when the
// back-off would end past the ctx's deadline: the call returns its last
// error at once, without waiting for a deadline it could not meet.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts on the wire, the first included
	// (gRPC's maxAttempts; gRPC holds it to 5, zapcodec does not). Below
	// 2 the policy retries nothing: only a refusal unrun is sent again,
	// once, as with no policy.
	MaxAttempts int
	// InitialBackoff is the bound of the first retry's back-off; each
	// later retry's bound is the one before × Multiplier, up to
	// MaxBackoff. 0: retries are sent at once. A MaxBackoff below
	// InitialBackoff counts as InitialBackoff (0 too: no growth), a
	// Multiplier below 1 (or NaN) as 1.
	InitialBackoff, MaxBackoff time.Duration
	Multiplier                 float64
	// Statuses are the answers retried: rpc statuses such as
	// rpc.StatusUnavailable (503) or rpc.StatusInternal (500), as a
	// [*rpc.StatusError] of the answer carries them (rpc.Code of the
	// error). An error that is the call's ctx's (canceled, or its
	// deadline passed) is never retried.
	Statuses []uint32
	// ConnectionLost retries a call whose connection broke or was lost
	// while the call was on it (an error matching rpc.ErrClosed): the
	// request may have been read and run. Not a call on a connection
	// this client closed itself: by Close, or at the end of the drain
	// timeout ([WithDrainTimeout]) of a connection it retired (its
	// replica draining, removed by the resolver or ejected) with the
	// call still on it, which returns that error after its attempt.
	ConnectionLost bool
}

// WithRetryPolicy sets the retry policy p of the methods named, or with
// none named, of every method that has no policy of its own (given by
// another WithRetryPolicy that names it). A later policy for a method
// replaces an earlier one; a p with MaxAttempts below 2 takes a method's
// policy away (as it would the default's, with no method named). A
// method has a retry policy or a hedging policy ([WithHedgingPolicy]),
// not both: see there which one it has, and when [Dial] fails.
//
// The shape follows gRPC's service config, whose methodConfig gives one
// policy to a list of names (or, with a service name alone, to all its
// methods): the methods are the ordinals a generated client's method
// constants name, listed where the policy is given, so that a reader sees
// at one place what is retried. Only unary calls are retried: a stream
// ([Client.OpenStream]) is not sent again once its open is written,
// since its messages, once sent or received, cannot be replayed (gRPC
// stops retrying a stream at its first message for the same reason); a
// promise ([Client.Send]) neither, being given back once written.
//
// The client's interceptors ([WithInterceptors]) run once around a call
// and all its attempts, as gRPC's interceptors see one call whose
// retries happen below them; the connections' interceptors and
// observers ([WithClientOptions]) see each attempt on the wire.
// A call that fails after more than one attempt returns a
// [*ReplicaError] that says how many ([ReplicaError.Attempts]) and
// wraps the last attempt's error (errors.Is and rpc.Code see through
// it).
//
// Costs: the policy is looked up only when a call fails, so a call
// that succeeds at once costs what it costs without one (nothing
// allocated). A retry allocates nothing in the cluster client (its
// back-off timer comes from a pool); the failed attempt's error is
// rpc.Client's own.
func WithRetryPolicy(p RetryPolicy, methods ...uint32) Option {
	var pp *RetryPolicy
	if p.MaxAttempts >= 2 {
		p.Statuses = slices.Clone(p.Statuses)
		if !(p.Multiplier >= 1) {
			p.Multiplier = 1
		}
		p.InitialBackoff = max(p.InitialBackoff, 0)
		p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
		pp = &p
	}
	methods = slices.Clone(methods)
	return optionFunc(func(o *options) { setPolicy(&o.retryDefault, &o.retryPolicies, pp, methods) })
}

// setPolicy sets p as the policy of methods in *byMethod, or as *def,
// the policy of the methods without one of their own, when methods is
// empty: what WithRetryPolicy and WithHedgingPolicy do with their policy.
func setPolicy[P any](def **P, byMethod *map[uint32]*P, p *P, methods []uint32) {
	if len(methods) == 0 {
		*def = p
		return
	}
	if *byMethod == nil {
		*byMethod = make(map[uint32]*P)
	}
	for _, m := range methods {
		(*byMethod)[m] = p
	}
}

// retryPolicy returns method's policy, nil when it has none.
func (o *options) retryPolicy(method uint32) *RetryPolicy {
	if p, ok := o.retryPolicies[method]; ok {
		return p
	}
	if o.hedgePolicies[method] != nil {
		return nil // a hedging policy of its own comes before the default
	}
	return o.retryDefault
}

// policyRetries reports whether p retries a call that failed with err
// on cn (a refusal unrun aside, which every policy retries).
func (c *Client) policyRetries(p *RetryPolicy, cn *Conn, err error) bool {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return false
	}
	if se := rpc.StatusOf(err); se != nil {
		return slices.Contains(p.Statuses, se.Code)
	}
	return p.ConnectionLost && errors.Is(err, rpc.ErrClosed) && !cn.closedUs.Load() && !c.isClosed()
}

// backoff returns the back-off before the nth retry (n >= 1) under p.
func (c *Client) backoff(p *RetryPolicy, n int) time.Duration {
	if c.retryJitter != nil {
		return c.retryJitter(p.backoffBound(n))
	}
	return fullJitter(p.backoffBound(n))
}

// sleep waits d before a retry, or until ctx is done (false).
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	if c.retrySleep != nil {
		return c.retrySleep(ctx, d)
	}
	return sleepCtx(ctx, d)
}

// backoffBound is the bound of the nth retry's back-off (n >= 1).
func (p *RetryPolicy) backoffBound(n int) time.Duration {
	if p.InitialBackoff <= 0 {
		return 0 // and no 0 × +Inf
	}
	d := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(n-1))
	if d >= float64(p.MaxBackoff) {
		return p.MaxBackoff
	}
	return time.Duration(d)
}

// fullJitter draws a back-off in [0, bound] (full jitter).
func fullJitter(bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	return time.Duration(rand.Uint64N(uint64(bound) + 1)) // no overflow at MaxInt64
}

// timers holds the stopped timers of back-offs, so that a retry does not
// allocate one.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// sleepCtx waits d, or until ctx is done; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := timers.Get().(*time.Timer)
	t.Reset(d)
	defer func() {
		t.Stop()
		timers.Put(t)
	}()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
