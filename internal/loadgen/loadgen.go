package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
)

// Defaults of Config.
const (
	DefaultConns       = 1
	DefaultConcurrency = 1
	DefaultDuration    = 10 * time.Second
	DefaultGrace       = 10 * time.Second
	DefaultInterval    = time.Second
	// DefaultDialTimeout bounds the opening of each connection
	// (Config.DialTimeout): a server address that drops the connection
	// attempts (a host down, a firewall) fails the run after it, not
	// after the system's own bound of minutes.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTimeout bounds each call of a run bounded by a count of
	// calls alone (Config.Timeout): long past what a healthy server
	// takes, so that a run measures slow answers as latency, yet a server
	// that never answers a call cannot hold such a run forever.
	DefaultTimeout = 20 * time.Second
)

// MaxInFlight is the most calls a run keeps in flight, Conns*Concurrency
// in all: each is a worker, some 800 bytes of heap that New makes before
// any call, and a goroutine (8 KiB of stack at least) during the run, so
// that many take about 2.3 GiB. Beyond it New fails, saying so, instead
// of the process running out of memory (1,000 connections at the
// largest Concurrency made 65 million workers, 53 GB, before the first
// call).
const MaxInFlight = 1 << 18

// MaxRate is the highest Config.Rate, one call a nanosecond: due times are
// kept in nanoseconds, and the calls due in a run of any Duration then
// fit a uint64 (faster rates overflowed the count of calls due, and Run
// never returned after a stalled server). No machine sends near it.
const MaxRate = 1e9

// ErrNoConns: every connection of the run broke (the server went away).
var ErrNoConns = errors.New("loadgen: every connection is closed")

// Config describes a load run. Zero fields mean the stated defaults.
type Config struct {
	// Network is "tcp" (default) or "unix"; Addr the server address.
	Network, Addr string
	// Target, when set, is an rpc/cluster target ("dns:///host:port",
	// "dns+srv:///_zap._tcp.name", "static:///a:1,b:2"; see
	// cluster.ParseTarget): the run makes its calls through one cluster
	// client, which spreads them over the replicas, keeps Conns
	// connections to each and survives replicas that restart. Addr is
	// then only a label (Target when empty). It rules out Dial and
	// Direct; the bytes in and out are counted from the calls (payloads,
	// envelope and frame headers), not from the sockets.
	Target string
	// Dial, when set, opens the connections instead of net.Dialer (tests,
	// in-memory pipes). The result is wrapped to count bytes.
	Dial func(ctx context.Context) (net.Conn, error)
	// DialTimeout bounds the opening of each connection, Dial's included
	// (its ctx ends then): default DefaultDialTimeout, 10 s; negative:
	// no bound but New's ctx. A cluster Target's replicas have the
	// cluster client's own bound.
	DialTimeout time.Duration
	// ClientOptions are passed to every rpc client.
	ClientOptions []rpc.ClientOption
	// TLS, when set, runs every connection over TLS with this client
	// configuration (not copied; do not change it afterwards). Each
	// connection's handshake is made before the run, within DialTimeout,
	// so that a server that refuses it fails New, saying why; the bytes
	// in and out are then those of the TLS records. Without a
	// ServerName, a connection to Addr verifies the certificate against
	// Addr's host, and a cluster Target's replica against its own (as
	// rpc.Dial does). Direct connections run over it too.
	TLS *tls.Config
	// Direct makes each connection a plain synchronous one instead of an
	// rpc.Client: a worker writes its request and reads the answer itself
	// on its own goroutine (same bytes on the wire), which costs the
	// machine less per call; it needs Concurrency 1 and no ClientOptions.
	// With thousands of mostly idle connections on few cores, the load
	// tool then competes less with the server it measures.
	Direct bool

	// Conns is the number of connections (default 1); Concurrency the
	// calls in flight on each (default 1). With a cluster Target, Conns
	// is per replica, and New refuses more than
	// cluster.MaxConnsPerReplica (1024), which the cluster client would
	// not open; the calls in flight are Conns*Concurrency in all, over
	// all the replicas. Each connection is an open file: New refuses
	// more than the process's limit of open files holds (beside a few
	// files of its own), and a dial out of open files fails the run; both
	// errors say the limit and how to raise it (ulimit -n). New refuses
	// a Concurrency above rpc.DefaultMaxPending, and more than
	// MaxInFlight calls in flight in all.
	Conns, Concurrency int
	// Duration bounds the run (default 10 s, unless Calls is set); Calls,
	// when > 0, stops it after that many calls (whichever comes first when
	// both are set). An open-loop run (Rate) with Calls alone ends as one
	// whose Duration ends just after its last call is due: calls still
	// unanswered, or not sent, Grace after that are abandoned.
	Duration time.Duration
	Calls    uint64
	// Rate, when > 0, is the open-loop arrival rate in calls per second
	// over the whole run, from 1e-9 to MaxRate (1e9); 0 means closed
	// loop.
	Rate float64
	// Grace is how long calls still in flight at the end may take before
	// they are abandoned and counted as errors (default 10 s). In open
	// loop, calls due before the end but not sent by then (every worker
	// waited on the server) are counted as abandoned too; an open-loop
	// run bounded by Calls alone ends just after its last call is due.
	Grace time.Duration
	// Timeout bounds each call (negative: no bound; 0: DefaultTimeout,
	// 20 s, for a run bounded by Calls alone, and no bound of its own for
	// a run with a Duration, whose end and Grace cancel the calls still
	// in flight): a call still unanswered Timeout after it was sent is
	// given up (within an eighth of Timeout more, at least 1 ms), counted
	// as failed with the error class "timed out", and its worker goes on
	// with the next call on the same connection, a direct one (Direct)
	// too: its late answer is skipped. Without
	// it, a run bounded by Calls alone against a server that never
	// answers would never end. The bound is the load tool's own: no
	// deadline is sent to the server (the calls' bytes are those of a
	// call without one), and the calls of one worker share a ctx until
	// one of them times out (with no bound, every worker's calls share
	// the run's, which an rpc.Client watches once for all of them: a
	// bound costs calls/s, as each call then waits on a ctx of its
	// worker's).
	Timeout time.Duration

	// Method is the 1-based method ordinal called.
	Method uint32
	// MethodName, when set, names the method in the report
	// (Report.MethodName; "service.method"): the calls use Method alone.
	MethodName string
	// Metadata, when set, is request metadata every call carries: key,
	// value, key, value... (rpc.WithMetadata's pairs, in its metadata
	// extension field; New refuses an odd count). It is encoded once (by
	// New for direct connections, by each Run or Warm for the others),
	// not per call: a call costs no allocation for it, only its bytes on
	// the wire (counted in the report's bytes out). A server whose limit the pairs
	// exceed (rpc.WithMaxMetadata, 16 KiB by default) answers every call
	// 431.
	Metadata []string
	// Payload is the request of every call, unless Request is set. It is
	// only read.
	Payload []byte
	// Request, when set, builds the payload of call i (0, 1, 2... across
	// the run) by appending to dst, which belongs to the calling worker and
	// is reused for its next call. It is called from many goroutines.
	Request func(i uint64, dst []byte) []byte
	// Check, when set, validates an OK answer; a non-nil error counts the
	// call as failed (class "check: "+err, cut to 120 bytes). req and resp
	// are valid only during the call. It is called from many goroutines.
	Check func(req, resp []byte) error

	// Warmup, when > 0, makes Run first make the run's own calls (the
	// same connections, concurrency, rate and Timeout) for Warmup, and
	// discard them: the calls made during the warm-up are counted nowhere
	// (not in the report, not in Progress), and the measured run starts
	// once they have ended (within Grace). Unlike [Runner.Warm], which
	// makes closed-loop calls, it warms the server up at the run's own
	// rate.
	Warmup time.Duration

	// Progress, when set, is called every Interval (default 1 s) during
	// Run (not during its Warmup), from a goroutine of its own; never
	// after Run returns.
	Progress func(Progress)
	Interval time.Duration
}

// Progress is a snapshot taken during a run.
type Progress struct {
	Elapsed time.Duration
	Calls   uint64  // completed so far
	Failed  uint64  // of which not OK
	Rate    float64 // calls/s over the last interval
	// Overdue counts the calls still waiting past their deadline: in
	// open loop, the calls due that no worker has sent yet (the server
	// holds every in-flight slot); calls sent and unanswered Timeout
	// after (not given up yet); and, once sending stopped (the end of
	// Duration, or Run's ctx), every call still in flight, which the
	// grace waits for. A stalled server shows here while Calls stands
	// still.
	Overdue uint64
}

// Runner holds the connections of a load run. Create it with New, run
// Warm and Run any number of times, then Close. Not safe for concurrent use.
type Runner struct {
	cfg     Config
	clients []callConn
	counts  []*countingConn // bytes in and out, per connection
	workers []*worker
	shards  []*histShard
	cluster *clusterConn // the one client of a run with a Target
}

// histShard is a latency histogram that several workers share: a
// Histogram is about 60 KB, so one per worker would make a run with
// 10,000 connections hold 600 MB and miss the cache on every record.
type histShard struct {
	mu   sync.Mutex
	hist Histogram
}

// maxShards bounds the histograms of a run; workers share them round robin.
const maxShards = 64

// worker is one in-flight slot: it owns its buffers and its tallies.
type worker struct {
	client   callConn
	shard    *histShard
	req      []byte
	resp     []byte
	calls    uint64
	failed   uint64
	statuses map[uint32]uint64
	// otherStatuses counts the answers whose status was not counted in
	// statuses, which holds maxStatusCodes already.
	otherStatuses uint64
	errors        map[string]uint64
	timer         *time.Timer // open loop: the wait for the next call's due time
	// scope is the ctx of the worker's calls in a run with a Timeout
	// (nil without), which the run's watch of timeouts cancels.
	scope atomic.Pointer[callScope]
	// unsent is the call the worker took but did not send because the
	// run's grace was over or its ctx ended (valid when hasUnsent).
	unsent    uint64
	hasUnsent bool
	// abandoned counts the worker's calls the run gave up at the end of
	// its grace; lastEnd is when its last other call ended, since the
	// run's start (0: none). They set the report's interval.
	abandoned uint64
	lastEnd   time.Duration
	// notSent counts the worker's calls refused before they were written
	// (see notWritten).
	notSent uint64
}

// New checks cfg, applies the defaults and opens the connections.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Network == "" {
		cfg.Network = "tcp"
	}
	if cfg.Conns <= 0 {
		cfg.Conns = DefaultConns
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Concurrency > rpc.DefaultMaxPending {
		return nil, fmt.Errorf("loadgen: concurrency %d above the %d calls a connection can hold", cfg.Concurrency, rpc.DefaultMaxPending)
	}
	if cfg.Conns > MaxInFlight || cfg.Conns*cfg.Concurrency > MaxInFlight {
		return nil, fmt.Errorf("loadgen: %d connections x %d calls in flight each: above the %d calls in flight a run keeps (MaxInFlight)", cfg.Conns, cfg.Concurrency, MaxInFlight)
	}
	if cfg.Duration <= 0 && cfg.Calls == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Timeout == 0 && cfg.Duration <= 0 {
		// Bounded by Calls alone: nothing else ends a call that is never
		// answered. (A run with a Duration cancels its calls at its end
		// and grace; they then need no watch, and share the run's ctx,
		// which rpc watches once for all of them.)
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Method == 0 {
		return nil, errors.New("loadgen: method ordinal 0 (ordinals start at 1)")
	}
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) {
		return nil, fmt.Errorf("loadgen: rate %v: want a finite number of calls a second, 0 or more", cfg.Rate)
	}
	if cfg.Rate > 0 && cfg.Rate < 1e-9 {
		// Its interval, in ns, would not fit a time.Duration.
		return nil, fmt.Errorf("loadgen: rate %v: below one call in 30 years", cfg.Rate)
	}
	if cfg.Rate > MaxRate {
		return nil, fmt.Errorf("loadgen: rate %v: above one call a nanosecond (%v)", cfg.Rate, float64(MaxRate))
	}
	if len(cfg.Metadata)%2 != 0 {
		return nil, fmt.Errorf("loadgen: %d metadata strings: want key, value pairs", len(cfg.Metadata))
	}
	if cfg.Direct && (cfg.Concurrency != 1 || len(cfg.ClientOptions) > 0) {
		return nil, errors.New("loadgen: Direct needs Concurrency 1 and no ClientOptions")
	}
	if cfg.Target != "" {
		if cfg.Direct || cfg.Dial != nil {
			return nil, errors.New("loadgen: a cluster Target rules out Direct and Dial")
		}
		if cfg.Conns > cluster.MaxConnsPerReplica {
			// The cluster client would hold it to that many, and the
			// report would give a count the run did not have.
			return nil, fmt.Errorf("loadgen: %d connections per replica: a cluster client keeps at most %d (cluster.MaxConnsPerReplica)", cfg.Conns, cluster.MaxConnsPerReplica)
		}
		if cfg.Addr == "" {
			cfg.Addr = cfg.Target
		}
	}
	if cfg.Dial == nil {
		// A run past the limit of open files fails at once, saying it,
		// rather than by a dial's "too many open files". With a cluster
		// Target, Conns is per replica: the count is at least that.
		what := fmt.Sprintf("%d connections", cfg.Conns)
		if cfg.Target != "" {
			what += " per replica"
		}
		if err := checkFileLimit(cfg.Conns, what); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
	}
	r := &Runner{cfg: cfg}
	if cfg.Target != "" {
		cc, err := dialCluster(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		r.cluster = cc
		r.clients = append(r.clients, cc)
	}
	md := encodeMetadata(cfg.Metadata) // only read: the direct connections share it
	for i := 0; i < cfg.Conns && cfg.Target == ""; i++ {
		nc, err := r.dial(ctx)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("loadgen: connection %d: %w", i, explainOutOfFiles(err, cfg.Conns))
		}
		cc := &countingConn{Conn: nc}
		r.counts = append(r.counts, cc)
		var conn net.Conn = cc
		if cfg.TLS != nil {
			tc, err := r.handshake(ctx, cc)
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("loadgen: connection %d: %w", i, err)
			}
			conn = tc
		}
		if cfg.Direct {
			d := newDirectConn(conn)
			d.md = md
			r.clients = append(r.clients, d)
		} else {
			r.clients = append(r.clients, rpc.NewClient(conn, cfg.ClientOptions...))
		}
	}
	nw := cfg.Conns * cfg.Concurrency
	for range min(nw, maxShards) {
		r.shards = append(r.shards, new(histShard))
	}
	for i := 0; i < nw; i++ {
		r.workers = append(r.workers, &worker{
			client:   r.clients[i%len(r.clients)],
			shard:    r.shards[i%len(r.shards)],
			req:      make([]byte, 0, 256),
			resp:     make([]byte, 0, 256),
			statuses: make(map[uint32]uint64),
			errors:   make(map[string]uint64),
		})
	}
	return r, nil
}

func (r *Runner) dial(ctx context.Context) (net.Conn, error) {
	if r.cfg.DialTimeout > 0 {
		dctx, cancel := context.WithTimeout(ctx, r.cfg.DialTimeout)
		defer cancel()
		nc, err := r.dialCtx(dctx)
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			err = fmt.Errorf("not connected within %v (DialTimeout): %w", r.cfg.DialTimeout, err)
		}
		return nc, err
	}
	return r.dialCtx(ctx)
}

// handshake runs the TLS client handshake over cc within the dial's bound
// and returns the TLS connection; on failure it closes cc.
func (r *Runner) handshake(ctx context.Context, cc *countingConn) (*tls.Conn, error) {
	cfg := r.cfg.TLS
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(r.cfg.Addr)
		if err != nil {
			host = r.cfg.Addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	if r.cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.DialTimeout)
		defer cancel()
	}
	tc := tls.Client(cc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		cc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

func (r *Runner) dialCtx(ctx context.Context) (net.Conn, error) {
	if r.cfg.Dial != nil {
		return r.cfg.Dial(ctx)
	}
	var d net.Dialer
	return d.DialContext(ctx, r.cfg.Network, r.cfg.Addr)
}

// bytes sums the bytes read and written on the connections.
func (r *Runner) bytes() (in, out uint64) {
	for _, c := range r.counts {
		in += c.in.Load()
		out += c.out.Load()
	}
	if r.cluster != nil {
		in += r.cluster.in.Load()
		out += r.cluster.out.Load()
	}
	return in, out
}

// Close closes every connection.
func (r *Runner) Close() error {
	var first error
	for _, c := range r.clients {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Warm runs closed-loop calls for d (or until ctx ends) and discards the
// results: connections, buffers and both sides' pools warm up.
func (r *Runner) Warm(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	cfg := r.cfg
	cfg.Rate, cfg.Calls, cfg.Duration, cfg.Progress = 0, 0, d, nil
	_, err := r.run(ctx, cfg)
	return err
}

// Run runs the load described by the Config and returns its report. When
// ctx ends, Run stops sending, lets the calls in flight finish (for at most
// Grace) and returns the report with ctx's error; in open loop, the calls
// due before ctx ended that no worker could send count as abandoned. The error is also
// ErrNoConns when every connection broke (the report
// then holds what was measured until then). With a Config.Warmup, the
// warm-up comes first; when it fails (ctx ended, every connection
// broke), Run returns a nil report and the error, which says so ("...
// (during the warm-up)").
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	if d := r.cfg.Warmup; d > 0 {
		cfg := r.cfg
		cfg.Duration, cfg.Calls, cfg.Progress = d, 0, nil
		if _, err := r.run(ctx, cfg); err != nil {
			return nil, fmt.Errorf("%w (during the warm-up)", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w (during the warm-up)", err)
		}
	}
	return r.run(ctx, r.cfg)
}

// schedule hands out call numbers and decides when the run is over.
type schedule struct {
	next     atomic.Uint64
	start    time.Time
	end      time.Time // zero: no time bound
	calls    uint64    // 0: no count bound
	interval float64   // ns between intended sends; 0: closed loop
}

// take returns the number of the next call and, in open loop, when it is
// due; ok is false when the run is over.
func (s *schedule) take() (i uint64, due time.Time, ok bool) {
	i = s.next.Add(1) - 1
	if s.calls > 0 && i >= s.calls {
		return 0, time.Time{}, false
	}
	if s.interval > 0 {
		due = s.dueAt(i)
		if !s.end.IsZero() && !due.Before(s.end) {
			return 0, time.Time{}, false
		}
		return i, due, true
	}
	if !s.end.IsZero() && !time.Now().Before(s.end) {
		return 0, time.Time{}, false
	}
	return i, time.Time{}, true
}

// dueAt returns when call i is due, in open loop. A call due more than
// about 292 years after the start (beyond a time.Duration: a very low
// rate) is due at that bound, which no run's end reaches.
func (s *schedule) dueAt(i uint64) time.Time {
	off := float64(i) * s.interval
	if off >= math.MaxInt64 {
		return s.start.Add(math.MaxInt64)
	}
	return s.start.Add(time.Duration(off))
}

// dueBefore returns how many calls an open-loop schedule has due before
// t (at most its count bound).
func (s *schedule) dueBefore(t time.Time) uint64 {
	n := uint64(math.Ceil(max(float64(t.Sub(s.start)), 0) / s.interval))
	for n > 0 && !s.dueAt(n-1).Before(t) {
		n--
	}
	for s.dueAt(n).Before(t) {
		n++
	}
	if s.calls > 0 {
		n = min(n, s.calls)
	}
	return n
}

func (r *Runner) run(ctx context.Context, cfg Config) (*Report, error) {
	for _, sh := range r.shards {
		sh.hist.Reset()
	}
	for _, w := range r.workers {
		w.calls, w.failed, w.hasUnsent, w.abandoned, w.lastEnd, w.notSent = 0, 0, false, 0, 0, 0
		w.otherStatuses = 0
		clear(w.statuses)
		clear(w.errors)
	}
	in0, out0 := r.bytes()

	sched := &schedule{calls: cfg.Calls}
	if cfg.Rate > 0 {
		sched.interval = 1e9 / cfg.Rate
	}
	// ctx ending stops new calls; calls still pending Grace after the end
	// (or after ctx ended) are abandoned.
	base := context.WithoutCancel(ctx)
	if len(cfg.Metadata) > 0 {
		// Encoded here once; every call's ctx derives from it (the
		// direct connections have their bytes from New).
		base = rpc.WithMetadata(base, cfg.Metadata...)
	}
	callCtx, cancel := context.WithCancel(base)
	defer cancel()
	sched.start = time.Now()
	var stoppedAt atomic.Int64 // when ctx ended, since the start, plus 1
	stopGrace := context.AfterFunc(ctx, func() {
		stoppedAt.Store(int64(time.Since(sched.start)) + 1)
		time.AfterFunc(cfg.Grace, cancel)
	})
	defer stopGrace()
	var done, failed atomic.Uint64
	runFor := cfg.Duration
	if runFor <= 0 && sched.interval > 0 && cfg.Calls > 0 {
		// Open loop bounded by a count alone: the schedule ends just
		// after the last call is due, as it would with that duration, so
		// that calls a stalled server never lets go out are abandoned
		// after the grace rather than sent one Timeout after another.
		runFor = addSat(sched.dueAt(cfg.Calls-1).Sub(sched.start), 1)
	}
	if runFor > 0 {
		sched.end = sched.start.Add(runFor)
		t := time.AfterFunc(addSat(runFor, cfg.Grace), cancel)
		defer t.Stop()
	}

	var wg sync.WaitGroup
	var running atomic.Int64 // workers not returned: after the end, each has a call in flight
	for _, w := range r.workers {
		w.scope.Store(nil)
		if cfg.Timeout > 0 {
			w.scope.Store(newCallScope(callCtx))
		}
		wg.Add(1)
		running.Add(1)
		go func() {
			defer wg.Done()
			defer running.Add(-1)
			w.loop(ctx, callCtx, &cfg, sched, &done, &failed)
		}()
	}
	finished := make(chan struct{})
	timeoutsDone := make(chan struct{})
	if cfg.Timeout <= 0 {
		close(timeoutsDone)
	} else {
		go func() {
			defer close(timeoutsDone)
			r.watchTimeouts(sched.start, cfg.Timeout, finished)
		}()
	}
	progressDone := make(chan struct{})
	if cfg.Progress == nil {
		close(progressDone)
	} else {
		go func() {
			defer close(progressDone)
			tick := time.NewTicker(cfg.Interval)
			defer tick.Stop()
			last, lastAt := uint64(0), sched.start
			for {
				select {
				case <-finished:
					return
				case <-tick.C:
					// The snapshot's time, not the tick's: a tick
					// received late carries the time it was due,
					// and the counts are read now.
					now := time.Now()
					n := done.Load()
					stopped := time.Time{}
					if at := stoppedAt.Load(); at > 0 {
						stopped = sched.start.Add(time.Duration(at - 1))
					}
					cfg.Progress(Progress{
						Elapsed: now.Sub(sched.start),
						Calls:   n,
						Failed:  failed.Load(),
						Rate:    float64(n-last) / now.Sub(lastAt).Seconds(),
						Overdue: r.overdue(sched, cfg.Timeout, now, stopped, running.Load()),
					})
					last, lastAt = n, now
				}
			}
		}()
	}
	wg.Wait()
	var unsent uint64
	switch {
	case sched.interval == 0 || sched.end.IsZero():
	case ctx.Err() != nil:
		// Sending stopped when ctx ended: the calls due before then
		// that no worker could send (the server held every one of them)
		// are abandoned, each with its latency from its due time until
		// then, so that stopping a run whose server stalled (Ctrl-C)
		// does not drop them.
		if at := stoppedAt.Load(); at > 0 {
			stop := sched.start.Add(time.Duration(at - 1))
			cutoff := stop
			if cutoff.After(sched.end) {
				cutoff = sched.end // ctx ended after the run's end
			}
			unsent = r.abandonUnsent(sched, cutoff, stop)
		}
	case callCtx.Err() != nil:
		// The grace ran out: calls due before the end that no worker
		// could send are abandoned like those in flight, each with its
		// latency from its due time, so that a stalled server does not
		// silently lower the rate.
		unsent = r.abandonUnsent(sched, sched.end, time.Now())
	}
	// The report's interval runs until sending stopped (the end of the
	// duration, ctx's end, or the workers' return) or, when later, until
	// the last call ended that was not abandoned: the wait for calls the
	// grace then gave up measures no call, and is not counted.
	measured := time.Since(sched.start)
	if !sched.end.IsZero() {
		measured = min(measured, runFor)
	}
	if at := stoppedAt.Load(); at > 0 {
		measured = min(measured, time.Duration(at-1))
	}
	in1, out1 := r.bytes()
	close(finished)
	<-progressDone // no Progress call runs after Run returns
	<-timeoutsDone

	rep := &Report{
		Network: cfg.Network, Addr: cfg.Addr, Method: cfg.Method, MethodName: cfg.MethodName,
		Conns: cfg.Conns, Concurrency: cfg.Concurrency, TargetRate: cfg.Rate,
		BytesIn:  in1 - in0,
		BytesOut: out1 - out0,
		Statuses: map[string]uint64{},
		Errors:   map[string]uint64{},
	}
	h := new(Histogram)
	for _, sh := range r.shards {
		h.Merge(&sh.hist)
	}
	abandonedCalls := unsent
	notSent := uint64(0)
	for _, w := range r.workers {
		rep.Calls += w.calls
		rep.Failed += w.failed
		notSent += w.notSent
		abandonedCalls += w.abandoned
		measured = max(measured, w.lastEnd)
		for code, n := range w.statuses {
			rep.Statuses[fmt.Sprint(code)] += n
		}
		if w.otherStatuses > 0 {
			rep.Statuses[otherStatus] += w.otherStatuses
		}
		for class, n := range w.errors {
			rep.Errors[class] += n
		}
	}
	if unsent > 0 {
		rep.Calls += unsent
		rep.Failed += unsent
		rep.Errors[abandoned] += unsent
	}
	rep.OK = rep.Calls - rep.Failed
	rep.Sent = rep.Calls - unsent - notSent
	rep.Seconds = measured.Seconds()
	rep.fill(h, rep.Calls-abandonedCalls)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	alive := 0
	for _, c := range r.clients {
		if !c.Closed() {
			alive++
		}
	}
	if alive == 0 {
		return rep, ErrNoConns
	}
	return rep, nil
}

// overdue counts the calls waiting past their deadline at now (see
// Progress.Overdue); stopped is when Run's ctx ended (zero: it did not),
// running the workers not returned. It reads the workers' call scopes,
// with a Timeout: what a worker publishes anyway, nothing more per call.
// A call a worker took as sending stopped, and did not send, counts as
// sent (at most one a worker, and only once Run's ctx ended).
func (r *Runner) overdue(s *schedule, timeout time.Duration, now, stopped time.Time, running int64) uint64 {
	end := s.end
	if !stopped.IsZero() && (end.IsZero() || stopped.Before(end)) {
		end = stopped
	}
	over := !end.IsZero() && !now.Before(end)
	n := uint64(0)
	if s.interval > 0 {
		cutoff := now
		if over {
			cutoff = end
		}
		if due, taken := s.dueBefore(cutoff), s.next.Load(); taken < due {
			n += due - taken
		}
	}
	if over {
		// Sending stopped: the workers still running wait on a call
		// each (in open loop, one sent before the end).
		return n + uint64(max(running, 0))
	}
	if timeout > 0 {
		at := int64(now.Sub(s.start)) + 1
		for _, w := range r.workers {
			sc := w.scope.Load()
			if sc == nil {
				continue
			}
			if t := sc.sent.Load(); t == scopeTimedOut || t > 0 && at-t >= int64(timeout) {
				n++
			}
		}
	}
	return n
}

// addSat returns a+b for non-negative a and b, or the largest Duration
// when the sum would not fit (a duration of thousands of years).
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// abandonUnsent records, as abandoned at now, the calls of an open-loop
// schedule that were due before cutoff and never sent, and returns how
// many there were. It runs after the workers returned.
func (r *Runner) abandonUnsent(s *schedule, cutoff, now time.Time) uint64 {
	h := &r.shards[0].hist
	n := uint64(0)
	for _, w := range r.workers {
		if due := s.dueAt(w.unsent); w.hasUnsent && due.Before(cutoff) {
			h.RecordDuration(now.Sub(due))
			n++
		}
	}
	due := s.dueBefore(cutoff)
	if first := min(s.next.Load(), due); first < due {
		s.recordLate(h, now, first, due)
		n += due - first
	}
	return n
}

// recordLate records in h, for each call i in [a, b), its latency at now
// (now less its due time), a bucket at a time: the latencies fall as i
// rises, and a run at a high rate whose server stalled may leave billions
// of calls unsent, which one record each would take minutes to count.
func (s *schedule) recordLate(h *Histogram, now time.Time, a, b uint64) {
	late := func(i uint64) uint64 { return uint64(max(now.Sub(s.dueAt(i)), 0)) }
	for i := a; i < b; {
		hi := late(i)
		lo := uint64(0) // the least value of hi's bucket
		if k := bucketOf(hi); k > 0 {
			lo = bucketHigh(k-1) + 1
		}
		// j: the first call after i whose latency is below the bucket.
		j, end := i+1, b
		for j < end {
			m := j + (end-j)/2
			if late(m) >= lo {
				j = m + 1
			} else {
				end = m
			}
		}
		least := late(j - 1)
		h.recordSpan(least, hi, j-i, float64(j-i)*(float64(least)+float64(hi))/2)
		i = j
	}
}

// callScope is the ctx a worker's calls run under in a run with a
// Timeout: a child of the run's ctx of calls, which the run's watch of
// timeouts (watchTimeouts) cancels when the call in flight under it has
// waited Timeout. A worker keeps one until a call of its times out, so
// that a call costs no ctx of its own (no allocation, and no deadline on
// the wire).
type callScope struct {
	ctx    context.Context
	cancel context.CancelFunc
	// sent is when the call in flight under ctx was sent, in nanoseconds
	// since the run's start plus 1; 0 when no call is in flight, and
	// scopeTimedOut once the watch gave the call up.
	sent atomic.Int64
}

// scopeTimedOut is callScope.sent of a call given up.
const scopeTimedOut = -1

func newCallScope(parent context.Context) *callScope {
	ctx, cancel := context.WithCancel(parent)
	return &callScope{ctx: ctx, cancel: cancel}
}

// watchTimeouts gives up, every eighth of timeout (at least every
// millisecond) until finished is closed, the calls in flight that were
// sent timeout ago or more: it marks each one's scope timed out and
// cancels it. A worker that finds its scope so marked after its call
// takes a new one.
func (r *Runner) watchTimeouts(start time.Time, timeout time.Duration, finished <-chan struct{}) {
	tick := time.NewTicker(max(timeout/8, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-finished:
			return
		case <-tick.C:
		}
		now := int64(time.Since(start)) + 1
		for _, w := range r.workers {
			sc := w.scope.Load()
			if sc == nil {
				continue
			}
			// The mark goes on the scope whose call timed out, and only
			// while that call is in flight: the worker swaps sent to 0
			// when the call returns, so a mark it finds is its own call's.
			if t := sc.sent.Load(); t > 0 && now-t >= int64(timeout) && sc.sent.CompareAndSwap(t, scopeTimedOut) {
				sc.cancel()
			}
		}
	}
}

// errTimedOut is the error a call given up by the run's Timeout counts
// as (unless it got an answer meanwhile).
var errTimedOut = errors.New("loadgen: no answer within the call timeout")

// loop makes calls until the schedule ends or stop is done; calls run
// under ctx (or, with a Timeout, under the worker's scope, a child of it).
func (w *worker) loop(stop, ctx context.Context, cfg *Config, s *schedule, done, failed *atomic.Uint64) {
	sc := w.scope.Load()
	callCtx := ctx
	if sc != nil {
		callCtx = sc.ctx
	}
	for {
		i, due, ok := s.take()
		if !ok || stop.Err() != nil || ctx.Err() != nil {
			if ok {
				w.unsent, w.hasUnsent = i, true // see abandonUnsent
			}
			return
		}
		req := cfg.Payload
		if cfg.Request != nil {
			w.req = cfg.Request(i, w.req[:0])
			req = w.req
		}
		start := due
		if s.interval > 0 {
			if d := time.Until(due); d > 0 {
				w.sleep(stop, d) // ctx ending (Ctrl-C) ends the wait too
			}
			if stop.Err() != nil {
				w.unsent, w.hasUnsent = i, true // see abandonUnsent
				return
			}
		} else {
			start = time.Now()
		}
		if sc != nil {
			sent := start
			if s.interval > 0 {
				sent = time.Now() // a call sent late has its whole Timeout
			}
			sc.sent.Store(int64(sent.Sub(s.start)) + 1)
		}
		var err error
		w.resp, err = w.client.Call(callCtx, cfg.Method, req, w.resp[:0])
		now := time.Now()
		d := now.Sub(start)
		if sc != nil && sc.sent.Swap(0) == scopeTimedOut {
			// Given up: the watch canceled the scope, or is about to.
			sc.cancel()
			if err != nil && !errors.As(err, new(*rpc.StatusError)) {
				err = errTimedOut
			}
			sc = newCallScope(ctx)
			w.scope.Store(sc)
			callCtx = sc.ctx
		}
		w.shard.mu.Lock()
		w.shard.hist.RecordDuration(d)
		w.shard.mu.Unlock()
		w.calls++
		done.Add(1)
		bad := w.tally(err, now.Sub(s.start))
		if !bad && cfg.Check != nil {
			if cerr := cfg.Check(req, w.resp); cerr != nil {
				w.countError(cutClass("check: " + cerr.Error()))
				bad = true
			}
		}
		if bad {
			w.failed++
			failed.Add(1)
		}
		if err != nil && w.client.Closed() {
			return // this connection is gone; the others go on
		}
		if s.interval == 0 && errors.Is(err, cluster.ErrNoReplica) {
			// A cluster target with no replica up fails every call at
			// once: a closed-loop worker would spin on the failures
			// until one comes back. It waits a little instead (not
			// counted in the call's latency).
			sleepCtx(stop, noReplicaBackoff)
		}
	}
}

// sleep sleeps for d or until stop is done, on a timer the worker keeps
// (a warm open-loop run allocates nothing per call).
func (w *worker) sleep(stop context.Context, d time.Duration) {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-stop.Done():
		w.timer.Stop()
	case <-w.timer.C:
	}
}

// noReplicaBackoff is how long a closed-loop worker waits after a call
// found no replica of its cluster target.
const noReplicaBackoff = 10 * time.Millisecond

// sleepCtx sleeps for d or until ctx is done; false when ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// tally counts the answer's status, or the class of error of a call that got
// no answer, and notes when the call ended (since the run's start) unless
// the run abandoned it; it reports whether the call failed.
func (w *worker) tally(err error, ended time.Duration) bool {
	if err == nil {
		w.statuses[rpc.StatusOK]++
		w.lastEnd = ended
		return false
	}
	var se *rpc.StatusError
	if errors.As(err, &se) {
		if _, ok := w.statuses[se.Code]; !ok && len(w.statuses) >= maxStatusCodes {
			w.otherStatuses++
		} else {
			w.statuses[se.Code]++
		}
		w.lastEnd = ended
		return true
	}
	if notWritten(err) {
		w.notSent++
	}
	class := errorClass(err)
	if class == abandoned {
		w.abandoned++
	} else {
		w.lastEnd = ended
	}
	w.countError(class)
	return true
}

// notWritten reports whether a call's error says it was refused before
// its request was written: no replica of a cluster target was ready, or
// the connection's table of pending calls was full. (A closed
// connection or a go-away may come before or after the write.)
func notWritten(err error) bool {
	return errors.Is(err, cluster.ErrNoReplica) || errors.Is(err, rpc.ErrTooManyPending)
}

// maxStatusCodes bounds the distinct status codes a worker counts apart
// (a status is any uint32: a server answering ever new ones would grow
// the counts without bound); the answers with others count together as
// the report's status "other".
const maxStatusCodes = 32

// otherStatus is the report's key for the answers of statuses beyond
// maxStatusCodes.
const otherStatus = "other"

// maxErrorClasses bounds the distinct error texts a worker keeps, so that
// errors carrying unique details cannot grow the report without bound.
const maxErrorClasses = 32

func (w *worker) countError(class string) {
	if _, ok := w.errors[class]; !ok && len(w.errors) >= maxErrorClasses {
		class = "other errors"
	}
	w.errors[class]++
}

// abandoned is the error class of a call the run gave up on at the end
// of its grace.
const abandoned = "abandoned (no answer in time)"

// timedOut is the error class of a call given up at its Timeout.
const timedOut = "timed out"

// errorClass names the kind of a transport error, in few distinct strings.
func errorClass(err error) string {
	switch {
	case errors.Is(err, errTimedOut):
		return timedOut
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return abandoned
	case errors.Is(err, rpc.ErrGoAway):
		return "go-away"
	case errors.Is(err, rpc.ErrClosed):
		return "connection closed"
	case errors.Is(err, rpc.ErrTooManyPending):
		return "too many pending"
	}
	return cutClass(err.Error())
}

// maxClassLen bounds the length of an error class: errors that carry an
// answer (a Check's, say) could make each of a worker's classes that long.
const maxClassLen = 120

// cutClass cuts an error class to maxClassLen bytes, between whole UTF-8
// characters (the JSON report holds it).
func cutClass(s string) string {
	if len(s) <= maxClassLen {
		return s
	}
	n := maxClassLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
