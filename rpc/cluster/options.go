package cluster

import (
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// Defaults of the options.
const (
	// DefaultRefresh is how often a polled resolver (DNS) is asked again
	// for the addresses when nothing prompts it sooner (a connection
	// failure prompts it at once, at most once per second). Kubernetes
	// endpoints and DNS records change on the scale of seconds to
	// minutes; gRPC-go's DNS resolver re-resolves at most every 30 s too.
	DefaultRefresh = 30 * time.Second
	// DefaultHealthInterval is how often each admitted replica is asked
	// for its health ([rpc.CheckHealth]) on one of its connections: a
	// replica that stops answering, or reports itself not serving, is
	// ejected within about this long even when no call failed.
	DefaultHealthInterval = 5 * time.Second
	// DefaultHealthTimeout bounds a dial and a health check: a replica
	// that takes longer is taken for down.
	DefaultHealthTimeout = 2 * time.Second
	// DefaultEjectAfter is how many calls in a row must fail on a replica
	// before it is ejected (within the share [WithMaxEjected] allows). A
	// call fails when its connection breaks (once, however many calls were
	// on it), when it is answered with status 500 or above (a handler's
	// failure) or 404 "no such method" ([rpc.IsNoSuchMethod]: a replica
	// deployed without it; a handler's own 404 is not), or when its ctx's
	// deadline passes while the replica has it (a wedged handler; a
	// server's 504 refusal of a call whose deadline passed before it ran
	// is the same). Other 4xx answers, a canceled
	// ctx and a deadline that had passed before the call was sent are no
	// failures; a call answered 200 or another 4xx ends the row. Answers
	// and deadlines count for calls ([Client.Call]) only; a send or a
	// stream's open counts when its connection breaks.
	DefaultEjectAfter = 5
	// DefaultEjectBase is the first ejection's back-off; each further
	// ejection in a row doubles it, up to DefaultEjectMax (±20 % jitter).
	// The row ends when the replica answers a call, or passes two
	// periodic health checks in a row after it is admitted again (the
	// first comes a health interval after the admission, the second an
	// interval later) while its calls do not fail: passing the probe that
	// admits it again, or the first check after it, does not end it, nor
	// does a check passed after a failed call and before an answered one
	// (its calls fail behind a healthy server). While no replica is ready
	// and a call wants one, a back-off is cut short after the outage's
	// own back-off (from the base, see [WithEjection]).
	DefaultEjectBase = 500 * time.Millisecond
	// DefaultEjectMax caps the back-off of an ejected replica.
	DefaultEjectMax = 30 * time.Second
	// DefaultMaxEjectedFraction is the largest share of the replicas that
	// failed calls and failed health checks may keep ejected at once (see
	// [WithMaxEjected]): a failure every replica shares (their database
	// is down, a bug in some method, a load that makes every health check
	// time out) must not take the whole service out while the replicas
	// are up. gRPC's outlier detection (max_ejection_percent) and Envoy's have
	// the same cap.
	DefaultMaxEjectedFraction = 0.5
	// DefaultRetryRatio and DefaultMinRetries set the retry budget:
	// retries may add at most 10 % to the calls, plus 10 retries a second
	// (a small service still gets its refused calls retried during a
	// rolling restart). Finagle's retry budget has the same shape (20 %
	// plus 10 a second); gRPC's retry throttling is a token bucket too.
	DefaultRetryRatio = 0.1
	DefaultMinRetries = 10
	// DefaultMaxReplicas is the most addresses a client keeps replicas
	// for (see [WithMaxReplicas]).
	DefaultMaxReplicas = 1024
	// MaxConnsPerReplica is the most connections a client keeps to one
	// replica ([WithConnsPerReplica]): each is a socket, a goroutine and
	// a dial, and a few multiplexed connections carry all the calls one
	// client makes.
	MaxConnsPerReplica = 1024
	// DefaultDrainTimeout is how long a connection that gets no more calls
	// (its replica removed or ejected, or its server going away) is kept
	// for the answers of its calls before it is closed anyway.
	DefaultDrainTimeout = time.Minute
)

// Option configures a [Client] (see [Dial]). Options are values given by
// the With functions of this package, in the same shape as package rpc's
// and package frame's options.
type Option interface{ apply(*options) }

// optionFunc makes a function an Option.
type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	network        string
	clientOpts     []rpc.ClientOption
	names          *rpc.MethodNames // WithMethodNames; nil: the client's own
	interceptors   []rpc.ClientInterceptor
	streamICs      []rpc.StreamClientInterceptor
	resolver       Resolver
	balancer       Balancer
	connsPer       int
	maxReplicas    int
	refresh        time.Duration
	healthInterval time.Duration
	healthTimeout  time.Duration
	healthService  string
	ejectAfter     int
	ejectBase      time.Duration
	ejectMax       time.Duration
	maxEjected     float64
	retryRatio     float64
	retryDefault   *RetryPolicy            // WithRetryPolicy with no method named
	retryPolicies  map[uint32]*RetryPolicy // WithRetryPolicy per method
	minRetries     float64
	waitReady      time.Duration
	drainTimeout   time.Duration

	hedgeDefault  *HedgingPolicy            // WithHedgingPolicy with no method named
	hedgePolicies map[uint32]*HedgingPolicy // WithHedgingPolicy per method
	hedging       bool                      // a method may have a hedging policy (set by checkPolicies)
}

func buildOptions(opts []Option) options {
	o := options{
		network:        "tcp",
		balancer:       P2C(),
		connsPer:       1,
		maxReplicas:    DefaultMaxReplicas,
		refresh:        DefaultRefresh,
		healthInterval: DefaultHealthInterval,
		healthTimeout:  DefaultHealthTimeout,
		ejectAfter:     DefaultEjectAfter,
		ejectBase:      DefaultEjectBase,
		ejectMax:       DefaultEjectMax,
		maxEjected:     DefaultMaxEjectedFraction,
		retryRatio:     DefaultRetryRatio,
		minRetries:     DefaultMinRetries,
		drainTimeout:   DefaultDrainTimeout,
	}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}

// WithNetwork sets the network of the replicas' addresses: "tcp"
// (default), "tcp4", "tcp6" or "unix" (with a static list of paths,
// "static:///tmp/a.sock,/tmp/b.sock" or [Static]).
func WithNetwork(network string) Option {
	return optionFunc(func(o *options) {
		if network != "" {
			o.network = network
		}
	})
}

// WithClientOptions passes options to every connection the client dials
// ([rpc.Dial]): TLS, timeouts, an observer (which sees each attempt,
// retries included). Interceptors given here run once per attempt; see
// [WithInterceptors] for interceptors around the whole call. The client
// gives each connection a stream observer of its own, which counts the
// ends of streams toward their replica's ejection (see
// [Client.OpenStream]); a stream observer given here
// ([rpc.WithStreamObserver]) is called beside it, after it, and sees
// every stream the connection opens, as every observer given to an
// [rpc.Client] is.
//
// Over TLS ([rpc.WithTLSConfig]), each replica is dialed at the address
// the resolver gave. A config without a ServerName verifies a replica of
// a DNS target ("dns:///name:port", or a [DNS] given to [WithResolver])
// against the target's host name, as gRPC-go does: [Dial] clones the
// config once, sets the clone's ServerName to the name and gives it after
// these options (the config given is not changed). For other targets
// (static addresses, SRV) it verifies each replica against the host of
// its address, an IP that the certificate must then hold as an IP SAN
// ("x509: cannot validate certificate for 10.0.0.5 because it doesn't
// contain any IP SANs" otherwise); set the config's ServerName to the
// name the replicas' certificates are for. A ServerName set is always
// the one verified.
func WithClientOptions(opts ...rpc.ClientOption) Option {
	opts = append([]rpc.ClientOption(nil), opts...)
	return optionFunc(func(o *options) { o.clientOpts = append(o.clientOpts, opts...) })
}

// WithMethodNames makes the client keep the names of the methods called
// through it in n ([rpc.MethodNames]; default: a table of its own,
// [Client.MethodNames]), which its interceptors and observers, made
// before the client, may close over: generated clients made on the
// client add their names to it, and every connection it dials keeps its
// names there too, for the interceptors and observers given with
// [WithClientOptions] (an rpc.WithMethodNames given there is replaced by
// the client's table).
func WithMethodNames(n *rpc.MethodNames) Option {
	return optionFunc(func(o *options) { o.names = n })
}

// WithInterceptors installs interceptors around every [Client.Call], in
// order (the first is outermost), once per call: a call retried on another
// replica is not intercepted twice. The chain is built once, at Dial.
func WithInterceptors(i ...rpc.ClientInterceptor) Option {
	i = append([]rpc.ClientInterceptor(nil), i...)
	return optionFunc(func(o *options) {
		for _, f := range i {
			if f != nil {
				o.interceptors = append(o.interceptors, f)
			}
		}
	})
}

// WithStreamInterceptors installs stream interceptors around every
// [Client.OpenStream], in order (the first is outermost), once per open:
// an open sent again to another connection (the first went away before
// it was written) is not intercepted twice. Stream interceptors given to
// the connections (WithClientOptions with
// rpc.WithStreamClientInterceptors) run once per attempt. A stream
// either chain opened and did not return (the cluster's dropped the one
// the connection's returned, or the connection's refused an attempt after
// opening) is canceled once, when the chain that dropped it returns (see
// rpc.StreamClientInterceptor); the one returned through both goes to
// the caller. The chain is built once, at Dial.
func WithStreamInterceptors(i ...rpc.StreamClientInterceptor) Option {
	i = append([]rpc.StreamClientInterceptor(nil), i...)
	return optionFunc(func(o *options) {
		for _, f := range i {
			if f != nil {
				o.streamICs = append(o.streamICs, f)
			}
		}
	})
}

// WithResolver makes the client take its addresses from r instead of
// parsing the target of [Dial] (which may then be empty or a name for
// error messages).
func WithResolver(r Resolver) Option { return optionFunc(func(o *options) { o.resolver = r }) }

// WithBalancer sets the policy that picks a connection for each call.
// Default: [P2C].
func WithBalancer(b Balancer) Option {
	return optionFunc(func(o *options) {
		if b != nil {
			o.balancer = b
		}
	})
}

// WithConnsPerReplica sets how many connections the client keeps to each
// replica (default 1; n <= 0 keeps it; more than [MaxConnsPerReplica]
// counts as that many). One multiplexed connection carries many calls at
// once; more help when one connection's read loop or socket is the
// bottleneck (large answers, a replica with many cores and few clients).
func WithConnsPerReplica(n int) Option {
	return optionFunc(func(o *options) {
		if n > 0 {
			o.connsPer = min(n, MaxConnsPerReplica)
		}
	})
}

// WithMaxReplicas sets the most addresses the client keeps replicas for
// (default [DefaultMaxReplicas]; n <= 0 keeps it). Each replica costs a
// goroutine, dials and connections, and one DNS answer can name
// thousands of addresses (a misconfigured or hostile server): a
// resolution, or a [Watcher]'s update, that gives more addresses than n
// fails as a resolution error does, and the client keeps the replicas it
// has ([Client.Stats] says why in LastError). A service that large is
// better served by giving each client a subset of the replicas.
func WithMaxReplicas(n int) Option {
	return optionFunc(func(o *options) {
		if n > 0 {
			o.maxReplicas = n
		}
	})
}

// WithRefresh sets how often a polled resolver is asked again (default
// [DefaultRefresh]); a connection failure asks it sooner, at most once per
// min(d, 1 s). A [Watcher] is not polled while its Watch runs.
func WithRefresh(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d > 0 {
			o.refresh = d
		}
	})
}

// WithHealthCheck sets how often each admitted replica's health is
// checked (default [DefaultHealthInterval]) and how long a dial or a check
// may take (default [DefaultHealthTimeout]); zero keeps a default.
func WithHealthCheck(interval, timeout time.Duration) Option {
	return optionFunc(func(o *options) {
		if interval > 0 {
			o.healthInterval = interval
		}
		if timeout > 0 {
			o.healthTimeout = timeout
		}
	})
}

// WithHealthService sets the service whose health is checked (default "",
// the server as a whole; a generated interface's …ServiceName constant
// checks that interface). Only rpc.HealthServing passes the check: a
// status of rpc.HealthUnknown fails it like rpc.HealthNotServing, and so
// does a named service the server answers 404 for (it never knew it).
// The server as a whole answered 404 passes it: a server without the
// health service (another implementation) answers so, and a zapcodec
// server never does (it answers its status).
func WithHealthService(name string) Option {
	return optionFunc(func(o *options) { o.healthService = name })
}

// WithEjection sets how many failed calls in a row eject a replica
// (default [DefaultEjectAfter], which says what counts as failed;
// negative: failed calls never eject), and the back-off of the first
// ejection and its cap (defaults [DefaultEjectBase], [DefaultEjectMax]);
// zero keeps a default. Ejections for failed calls, and for failed
// health checks, are capped by [WithMaxEjected]. The back-off doubles with each ejection in a row (see
// DefaultEjectBase), and any base and cap work: it never overflows.
//
// While no replica is ready and a call wants one (it found none since the
// back-off began, or waits for one: [WithWaitForReady]), a back-off is
// cut short after the outage's own step: base (±20 %) for a replica's
// first redial of the outage, doubling with each redial after it up to
// the cap (±20 % each), counted afresh once the replica is admitted.
// After an outage of every replica, the first one back is found within
// a step of that back-off (about as long as the outage has lasted, at
// most the cap), not after the back-off its row of ejections had grown
// to before it, and replicas still down are dialed as the back-off
// allows, and only while calls want one.
//
// A deadline that passes while a replica has the call counts: callers
// whose deadlines are shorter than the time the service takes to answer
// make its replicas fail, and get them ejected as far as WithMaxEjected
// allows.
func WithEjection(after int, base, maxBackoff time.Duration) Option {
	return optionFunc(func(o *options) {
		if after != 0 {
			o.ejectAfter = after
		}
		if base > 0 {
			o.ejectBase = base
		}
		if maxBackoff > 0 {
			o.ejectMax = maxBackoff
		}
	})
}

// WithMaxEjected sets the largest share of the replicas that ejections
// may keep out at once: of n replicas (those the resolver gave, admitted
// or not), at most fraction × n rounded down, but always at least one,
// may be out when an admitted replica is ejected, whether for failed
// calls ([WithEjection]) or for a health check it failed or did not
// answer in time ([WithHealthCheck]). fraction is from 0 to 1 (default
// [DefaultMaxEjectedFraction]; 0: one replica at most; 1: all of them);
// any other value (negative, above 1, NaN) keeps the default. To keep
// failed calls from ejecting any replica, give WithEjection a negative
// count.
//
// A replica that cannot be reached (no connection to it can be dialed,
// or one is lost as soon as it is made) is out whatever the share, having
// no connection to keep in rotation, and counts toward it: with as many
// replicas out as the share allows, no other is ejected. A replica not
// admitted yet, or not again since its ejection, is admitted only when it
// passes its probe. A replica the cap holds back stays in rotation and
// gets calls (those that fail, fail with the replica's own error, not
// [ErrNoReplica]); its count of failed calls in a row starts again, and
// it is ejected when it reaches WithEjection's count once more, or fails
// its next health check, and the share then allows.
func WithMaxEjected(fraction float64) Option {
	return optionFunc(func(o *options) {
		if fraction >= 0 && fraction <= 1 {
			o.maxEjected = fraction
		}
	})
}

// WithRetryBudget sets the retry budget: retries may add at most ratio of
// the calls made (default [DefaultRetryRatio]) plus perSecond retries a
// second (default [DefaultMinRetries]). What goes unused is saved up to
// 10 s of perSecond (at least 10 retries), the calls' share included, so
// a calm spell cannot save up a burst; the budget starts with one
// second's worth. A retry that finds no replica ready is not sent and
// spends nothing. ratio 0 and perSecond 0 turn retries off. Both are kept to a billionth of a retry (a ratio of 0.0001
// allows a retry per 10,000 calls); a ratio above 1 counts as 1, a
// perSecond above 1e8 as 1e8; a negative or NaN value keeps the default.
func WithRetryBudget(ratio, perSecond float64) Option {
	return optionFunc(func(o *options) {
		if ratio >= 0 {
			o.retryRatio = ratio
		}
		if perSecond >= 0 {
			o.minRetries = perSecond
		}
	})
}

// WithWaitForReady makes a call that finds no admitted replica wait up to
// d (and no longer than its ctx) for one, instead of failing at once with
// [ErrNoReplica]. d bounds the call's waits in all: a replica admitted and
// gone again before the call could take it does not start d afresh.
// Default 0: fail at once.
//
// A call that finds replicas admitted but none of their connections
// taking calls (they went away, a server's go-away for a connection's
// age, rpc.WithMaxConnectionAge, or idleness, and are being redialed)
// waits for a replacement within its ctx with or without this option,
// as a gRPC call waits while its channel is connecting: until a
// connection is in, or the replica is ejected (its dial failed), when
// the call fails with ErrNoReplica as before.
func WithWaitForReady(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d >= 0 {
			o.waitReady = d
		}
	})
}

// WithDrainTimeout sets how long a retired connection keeps waiting for
// the answers of its calls before it is closed (default
// [DefaultDrainTimeout]).
func WithDrainTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d > 0 {
			o.drainTimeout = d
		}
	})
}
