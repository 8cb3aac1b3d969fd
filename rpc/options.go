package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/zapcodec/zapcodec/frame"
)

// Defaults of the options.
const (
	// DefaultMaxInFlight is the number of calls one server connection runs
	// at once; beyond it the connection is not read (backpressure).
	DefaultMaxInFlight = 256
	// DefaultMaxConns is the server's connection limit: 0, no limit.
	DefaultMaxConns = 0
	// DefaultShutdownGrace is how long Shutdown keeps an idle connection
	// whose peer did not acknowledge the go-away frame (a canonical peer
	// ignores kind 6) before closing it.
	DefaultShutdownGrace = 500 * time.Millisecond
	// DefaultIdleTimeout is how long a server connection may go without a
	// request while none of its calls runs before the server sends it a
	// go-away and closes it (see [WithIdleTimeout]).
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultReadTimeout is the time a frame that has begun gets to
	// finish, before DefaultMinReadRate extends it (see [WithReadTimeout]).
	DefaultReadTimeout = 10 * time.Second
	// DefaultMinReadRate is the rate, in bytes per second, below which a
	// frame's transfer stops earning more time (see [WithMinReadRate]).
	DefaultMinReadRate = 16 << 10
	// DefaultMaxPending is the largest number of pending calls on one client
	// connection (promise ids carry a 16-bit slot index).
	DefaultMaxPending = 1<<16 - 1
	// DefaultWriteTimeout is how long a connection's write may go without
	// the peer taking a single byte before the connection is dropped, on
	// both sides (see [WithWriteTimeout]). A peer that stops reading would
	// otherwise hold its connection, its queued frames and, on a client,
	// the callers without deadlines forever. 30 s is long next to any
	// healthy stall of a TCP peer (a full receive window drains in
	// milliseconds unless the reader has stopped) and close to what other
	// stacks allow: gRPC-go's keepalive drops a peer whose ping is not
	// acknowledged within 20 s, and net/http, whose WriteTimeout defaults
	// to none, is routinely deployed with 10-60 s. Because the timer
	// restarts on every byte taken, a slow but live reader is never cut:
	// a 16 MiB answer to a reader taking 10 MiB/s completes. (Each write
	// also has a bound in all, on both sides, the timeout plus a second
	// per 16 KiB: a reader at 16 KiB/s or faster is not cut by it.)
	DefaultWriteTimeout = 30 * time.Second
	// DefaultAnswerTimeout is how long a client waits, while it has calls
	// outstanding (waiting or abandoned), without a sign of life from the
	// server (a whole frame, or bytes at 16 KiB/s or faster), before it
	// takes the server for hung and closes the connection (see
	// [WithAnswerTimeout]).
	DefaultAnswerTimeout = 60 * time.Second
	// maxKeptBuffer: a per-call buffer grown above this is dropped when the
	// call ends instead of being kept for the next call.
	maxKeptBuffer = 256 << 10
	// maxLimit is the longest time limit the options keep (WithIdleTimeout,
	// WithReadTimeout, WithShutdownGrace, WithWriteTimeout,
	// WithAnswerTimeout): a longer one, math.MaxInt64 for "never" say,
	// counts as this, some 36 years. The limits are added to clock readings
	// and to a frame's allowance; beyond it the sum overflowed into the
	// past (an idle timeout of math.MaxInt64 made a connection's read loop
	// spin on a deadline already passed, never reading its calls).
	maxLimit = time.Duration(1 << 60)
)

// maxPingPayload is the largest ping payload a peer may send; a larger one
// is a protocol violation that closes the connection.
const maxPingPayload = 8

// ServerOption configures a [Server] (see [NewServer]).
type ServerOption interface{ applyServer(*serverOptions) }

// ClientOption configures a [Client] (and the connections of an
// rpc/cluster client: cluster.WithClientOptions).
type ClientOption interface{ applyClient(*clientOptions) }

// Option configures both sides; every Option is a ServerOption and a
// ClientOption.
type Option interface {
	ServerOption
	ClientOption
}

type serverOptions struct {
	tls           *tls.Config
	frame         []frame.Option // WithFrameOptions
	maxConns      int
	maxInFlight   int
	idleTimeout   time.Duration
	readTimeout   time.Duration
	minReadRate   int
	writeTimeout  time.Duration
	shutdownGrace time.Duration
	maxAge        time.Duration // WithMaxConnectionAge; 0: no limit (readtimeout.go)
	maxAgeGrace   time.Duration // its grace; 0: no limit
	pipelining    bool
	promiseTable  int
	logger        *slog.Logger
	hideErrors    bool
	healthList    bool // WithHealthListing (health.go)
	reflection    bool // WithReflection (reflection.go)
	baseContext   func(net.Listener) context.Context
	interceptors  []Interceptor // intercept.go
	observers     []Observer    // WithObserver, in order (observe.go)
	observer      Observer      // observers made one at construction
	maxMetadata   int           // 0: DefaultMaxMetadata (metadata.go)
	deflateMin    int           // WithCompression; 0: off (compress.go)
	streamWindow  int           // 0: DefaultStreamWindow (stream.go)
	maxStreams    int           // 0: DefaultMaxStreams

	// WithAnswerBudget (answerbudget.go)
	connAnswerBudget, serverAnswerBudget int

	streamInterceptors []StreamInterceptor // stream_intercept.go
	streamObservers    []StreamObserver    // WithStreamObserver, in order (stream_observe.go)
	streamObserver     StreamObserver      // streamObservers made one at construction
}

type clientOptions struct {
	tls           *tls.Config
	frame         []frame.Option // WithFrameOptions
	writeTimeout  time.Duration
	answerTimeout time.Duration
	dialer        Dialer
	maxPending    int
	interceptors  []ClientInterceptor // intercept.go
	observers     []Observer          // WithObserver, in order (observe.go)
	observer      Observer            // observers made one at construction
	streamWindow  int                 // 0: DefaultStreamWindow (stream.go)
	maxStreams    int                 // 0: DefaultMaxStreams
	maxRespMD     int                 // 0: DefaultMaxMetadata (respmeta.go)
	deflate       bool                // WithCompression (compress.go)
	deflateMin    int                 // WithCompression's minSize
	inflateRatio  int                 // WithMaxInflateRatio; > 0 (compress.go)
	names         *MethodNames        // WithMethodNames; nil: the client's own (methodnames.go)
	onClosing     []func(*Client)     // WithOnClosing, in order (closing.go)

	streamInterceptors []StreamClientInterceptor // stream_intercept.go
	streamObservers    []StreamObserver          // WithStreamObserver, in order (stream_observe.go)
	streamObserver     StreamObserver            // streamObservers made one at construction
}

func buildServerOptions(opts []ServerOption) serverOptions {
	o := serverOptions{
		maxInFlight:   DefaultMaxInFlight,
		shutdownGrace: DefaultShutdownGrace,
		idleTimeout:   DefaultIdleTimeout,
		readTimeout:   DefaultReadTimeout,
		minReadRate:   DefaultMinReadRate,
		writeTimeout:  DefaultWriteTimeout,

		connAnswerBudget:   DefaultConnAnswerBudget,
		serverAnswerBudget: DefaultServerAnswerBudget,
	}
	for _, f := range opts {
		if f != nil {
			f.applyServer(&o)
		}
	}
	if o.promiseTable <= 0 {
		o.promiseTable = 2 * o.maxInFlight
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	o.observer = joinObservers(o.observers, o.logger)
	o.streamObserver = joinStreamObservers(o.streamObservers, o.logger)
	return o
}

func buildClientOptions(opts []ClientOption) clientOptions {
	o := clientOptions{
		maxPending:    DefaultMaxPending,
		writeTimeout:  DefaultWriteTimeout,
		answerTimeout: DefaultAnswerTimeout,
		inflateRatio:  DefaultMaxInflateRatio,
	}
	for _, f := range opts {
		if f != nil {
			f.applyClient(&o)
		}
	}
	o.observer = joinObservers(o.observers, nil)
	o.streamObserver = joinStreamObservers(o.streamObservers, nil)
	return o
}

type bothOption struct {
	s func(*serverOptions)
	c func(*clientOptions)
}

func (b bothOption) applyServer(o *serverOptions) { b.s(o) }
func (b bothOption) applyClient(o *clientOptions) { b.c(o) }

type serverOption func(*serverOptions)

func (f serverOption) applyServer(o *serverOptions) { f(o) }

type clientOption func(*clientOptions)

func (f clientOption) applyClient(o *clientOptions) { f(o) }

// WithTLSConfig runs the connection over TLS with cfg (not copied; do not
// change it afterwards). A server needs certificates in cfg; a client with
// an empty ServerName uses the host of the dialed address ([Dial];
// [NewClient], which dials nothing, runs TLS over its connection and
// needs a ServerName). MinVersion 0 is
// raised to TLS 1.3, whose default key exchange in Go is the post-quantum
// hybrid X25519MLKEM768. Default: plain TCP or Unix.
func WithTLSConfig(cfg *tls.Config) Option {
	return bothOption{
		s: func(o *serverOptions) { o.tls = cfg },
		c: func(o *clientOptions) { o.tls = cfg },
	}
}

// ClientTLSConfig returns the TLS config opts give a client: that of the
// last [WithTLSConfig] among them, nil when none (a plain connection).
// It is the config itself, not a copy: a package that dials with its
// caller's options (rpc/cluster, to verify each replica against the
// target's host name) clones it before it changes anything.
func ClientTLSConfig(opts ...ClientOption) *tls.Config {
	var o clientOptions
	for _, f := range opts {
		if f != nil {
			f.applyClient(&o)
		}
	}
	return o.tls
}

// WithFrameOptions passes frame settings through to the connection's
// frame reader: [frame.WithMaxFrameSize] (the largest frame accepted and
// sent: a larger request is read past and answered 413 [StatusTooLarge],
// not run, and a larger answer fails its call on the client (an error
// matching frame.ErrFrameTooLarge), each alone, the connection going on;
// a larger frame that names no call or stream (a ping, a cancel...), or
// one over [frame.DiscardLimit], drops the connection, every call on it
// failing with [ErrClosed]; a call whose request is larger than its own
// client's limit fails unsent; default 16 MiB) and
// [frame.WithBufferSize] (the read-ahead limit: frames up to a quarter of
// it are read into the shared read-ahead buffer, larger ones into a buffer
// of their own; default 64 KiB), with the
// defaults and rules frame documents. Frames are written through the
// connection's own queue, so the write-side [frame.WithWritevThreshold]
// does not apply. rpc speaks the canonical transport framing only:
// with [frame.WithHTTPFraming] among the options, [Dial] and
// [Server.Serve] fail with [ErrHTTPFraming] (and a client made by
// [NewClient] is closed at once, its calls failing with that reason).
// Several WithFrameOptions add up, later settings winning.
func WithFrameOptions(opts ...frame.Option) Option {
	opts = append([]frame.Option(nil), opts...)
	return bothOption{
		s: func(o *serverOptions) { o.frame = append(o.frame, opts...) },
		c: func(o *clientOptions) { o.frame = append(o.frame, opts...) },
	}
}

// ErrHTTPFraming is returned by [Dial] and [Server.Serve] when
// [WithFrameOptions] selects [frame.WithHTTPFraming]: a ZAP-RPC
// connection carries the canonical transport frames (u32 length, kind,
// envelope; docs/wire.md §7), and the HTTP framing has no kind byte.
var ErrHTTPFraming = errors.New("rpc: frame.WithHTTPFraming cannot be given to rpc.WithFrameOptions: ZAP-RPC connections use the canonical transport framing")

// checkFraming refuses the HTTP framing.
func checkFraming(opts []frame.Option) error {
	if len(opts) > 0 && frame.UsesHTTPFraming(opts...) {
		return ErrHTTPFraming
	}
	return nil
}

// WithWriteTimeout sets how long a write to the socket may go without the
// peer taking a byte: after that the connection is closed (its pending
// calls fail with ErrClosed; a server logs and counts it as dropped). The
// timer restarts whenever the peer takes bytes, so a slow reader that keeps
// reading is not cut. "Taken" means taken by the kernel: after the peer
// stops reading, the socket buffers on both ends still take some KiB, each
// restarting the timer, so a peer that stops reading is dropped between d
// and about 3d after it stopped (90 s measured with the 30 s default, 6 s
// with 2 s). The kernel takes a writer's bytes only once about a third of
// the socket's send buffer is free again (Linux; the buffer grows to some
// MiB on a fast link), so even a peer that keeps reading lets a write go
// that long without progress: a d much below a second can cut a live but
// slow reader (TestWriteTimeoutSparesSlowReader gives its socket a 128
// KiB send buffer for a 500 ms d). Over TLS, where a timed-out write cannot go on, each write
// must finish within d instead, and so over any connection not known to
// allow that (a wrapper that does not unwrap to a TCP or Unix socket with
// NetConn; see [NewClient]). The write is ended by a past write
// deadline on the connection; a net.Conn whose SetWriteDeadline does not
// end it (a wrapper that drops deadlines, or holds one lock over Write
// and SetWriteDeadline) is closed d later, as the write's last resort.
// Default DefaultWriteTimeout (30 s); d <= 0 means no limit (beyond 36
// years: 36 years).
//
// Each write (a batch of frames, up to 4 MiB plus one frame), on both
// sides, is also bounded in all: d plus a second per 16 KiB it carries
// (the server's default [WithMinReadRate]), counted from its start or at
// most about d later (a write that completes within d reads no clock
// for it), so a peer that takes a byte now and then, each within d, is
// dropped too instead of holding the write, and the calls or answers
// behind it, for ever: a client's calls fail with ErrClosed, a server
// closes the connection (logged) and its other connections go on. A
// reader at 16 KiB/s or faster is not cut. The error of a write so ended
// (which a client's calls and streams get wrapped in their ErrClosed
// error) matches os.ErrDeadlineExceeded, as a socket's timeout does, and
// says "write timeout".
//
// Writes never hold up the goroutines that only queue frames: up to 4 MiB
// waits per connection (a frame is queued while less than that waits, so
// 4 MiB plus one frame at most), beyond which senders wait for room (a
// Call until its ctx ends, then it returns ctx's error with nothing
// sent).
func WithWriteTimeout(d time.Duration) Option {
	d = min(max(d, 0), maxLimit)
	return bothOption{
		s: func(o *serverOptions) { o.writeTimeout = d },
		c: func(o *clientOptions) { o.writeTimeout = d },
	}
}

// WithMaxInFlight sets how many calls of one connection the server runs at
// once (default DefaultMaxInFlight, 256; n <= 0 means the default). When
// that many are running, the server stops reading the connection until one
// finishes; meanwhile it looks at the socket each read timeout, so that a
// peer that reset the connection (or whose keepalive failed) closes it and
// cancels the running calls' ctx (a half-close is no leave: the calls are
// answered; a connection that is no TCP or unix socket, or TLS over one,
// has no such look, nor has one outside unix systems). It also stops while the connection's queue of answers is full
// (4 MiB not yet taken by a write: a peer that does not read them), until
// room frees: a peer that pipelines calls and never reads its answers
// holds the handlers of the calls it sent before that, at most n, not n
// whatever it sends; the write timeout ([WithWriteTimeout]) then closes
// the connection (30 to about 90 s after the peer stopped reading, by
// default). Each connection's limits are its own: such a peer does not
// slow the calls of another.
//
// Memory: the limits count calls and queued bytes, not the answers being
// built. Each running handler builds its whole result before anything of
// it is queued, and the result is held until it is written, so such a
// peer holds up to n results at once (n times the answer size: 256
// answers of 15 MB are nearly 4 GB), and every other such connection as
// much again; gRPC-go, whose unary response is marshaled whole before
// flow control applies, has the same exposure. A handler whose answers
// can be large says how large before it builds one, with
// [ReserveAnswer]: the calls of a connection then hold at most its
// answer budget, and all connections the server's ([WithAnswerBudget]),
// whatever the peers send. Alternatives: send a large result as a stream
// (its window bounds what waits), or lower n.
//
// CPU: a caller's cancel (frame kind 12, docs/wire.md §8) is looked for
// in one bucket of an index of the connection's jobs by promise id, not
// among all of them: its cost does not grow with n (BenchmarkCancelScan).
func WithMaxInFlight(n int) ServerOption {
	return serverOption(func(o *serverOptions) {
		if n <= 0 {
			n = DefaultMaxInFlight
		}
		o.maxInFlight = n
	})
}

// WithMaxConns limits the number of open server connections, those of
// every listener the server serves at once together; a connection
// accepted beyond it is closed at once, before any TLS handshake, and
// counted in Stats.Rejected (Stats.Accepted counts it too); nothing is
// logged, and its client sees the connection closed (EOF or a reset),
// as from a server that failed its handshake. A connection that sends
// nothing holds its place: over [WithTLSConfig] until the read timeout
// (its handshake's bound, 10 s by default), on plain TCP until the idle
// timeout and the shutdown grace (5 min and 500 ms by default), so that
// peers which open connections and stay silent can fill the limit for
// that long: facing untrusted peers, serve TLS or lower
// [WithIdleTimeout]. Default 0: no limit.
func WithMaxConns(n int) ServerOption {
	return serverOption(func(o *serverOptions) { o.maxConns = n })
}

// WithIdleTimeout sets how long a server connection may go without a
// request while none of its calls is running. When it has, the server
// sends the peer a go-away (kind 6) and closes the connection once the
// peer acknowledged it, or after the shutdown grace ([WithShutdownGrace]):
// a call that crosses the go-away is refused as not run (retryable), never
// lost. Frames other than requests do not count as activity. Default
// DefaultIdleTimeout (5 min); d <= 0: no idle limit (a d beyond some
// 36 years counts as 36 years, as for every limit of this package).
//
// An open stream counts as a running call for as long as it is open,
// however long nothing moves on it, as gRPC-go's MaxConnectionIdle counts
// open streams: a subscription that stays quiet is not cut. A peer that
// vanished with a stream open is found by TCP keepalive (connections
// accepted from a net.Listen listener probe after 15 s of silence, and
// the kernel closes them after some two minutes of unanswered probes) or,
// once the handler sends, by the write timeout. One wait has d as its
// bound even with streams open: the read loop's wait for room in a
// stream's full buffer (a peer that ignores the window, see "With a
// canonical peer" in the package README). It reads nothing meanwhile, so
// it could not learn that the peer left; after d of it the connection
// is closed.
//
// Why 5 minutes: net/http and gRPC-go keep idle connections forever by
// default (http.Server.IdleTimeout 0; gRPC's MaxConnectionIdle infinite,
// with keepalive pings every 2 h), which lets clients that vanished
// without a FIN (a powered-off host, a dropped NAT mapping) hold server
// memory for hours. Five minutes is longer than the idle spells of a
// working client (rpc/cluster redials on demand), and frees a dead
// peer's connection within minutes; load balancers use 60–350 s.
func WithIdleTimeout(d time.Duration) ServerOption {
	d = min(d, maxLimit)
	return serverOption(func(o *serverOptions) { o.idleTimeout = d })
}

// WithMaxConnectionAge limits how long a server connection lives, as
// gRPC-go's keepalive.ServerParameters MaxConnectionAge and
// MaxConnectionAgeGrace do: so that the connections of long-lived clients
// spread over the replicas started since they connected (behind a load
// balancer, or a DNS name that rpc/cluster resolves again). Each
// connection gets an age of its own, age give or take up to 10 % (drawn
// uniformly as it is accepted: connections made together do not all
// leave together). Once the connection is that old, the server sends it
// the go-away that [Server.Shutdown] sends (frame kind 6): this package's
// client takes no new call on it from then on (a call then fails with
// [ErrGoAway], not sent, and may go to a new connection; [WithOnClosing]
// tells of the go-away at once), and rpc/cluster dials a replacement and
// sends its calls there; a call that crosses the go-away is refused as
// not run, as during Shutdown. The calls and streams in flight go on:
// the connection is closed as soon as none is left and the peer
// acknowledged the go-away (a peer that does not acknowledge: once it ran
// no call for [WithShutdownGrace]), or grace after the go-away, whichever
// comes first; what still runs then is cut (its handler's ctx is done,
// its caller gets an error matching [ErrClosed] that says the server cut
// it after its go-away), and that close is logged and counted in
// Stats.Dropped. The grace also bounds a connection the idle timeout
// sent its go-away to ([WithIdleTimeout]; no call runs on that one).
//
// age <= 0: no age limit (the default, as in gRPC-go). grace <= 0: no
// limit, the calls and streams in flight finish however long they take
// (gRPC-go's default too), so that an open stream keeps its connection
// for as long as it stays open. Beyond some 36 years each counts as 36
// years, as for every limit of this package. rpc/cluster takes a
// connection that goes away sooner than its ejection back-off after it
// was made (cluster.WithEjection, 500 ms by default) for a broken
// replica: give ages well above that.
//
// Cost: no timer of its own and no work per call. The age is one more
// bound on the read deadline that the connection's read loop keeps
// anyway (that of the idle timeout, set lazily: an idle connection keeps
// one pending timer, as before), and while the connection runs calls,
// the watchdog's scans, which then watch its read limits in place of a
// deadline, see it pass. Each wait of the read loop compares one more
// time. The go-away is thus sent as the read loop waits for a frame, or
// for the rest of one, once the age has passed: at the age on a
// connection that is idle, waits between calls or receives a frame (a
// busy connection does not escape its age), after the wait for a free
// call slot ([WithMaxInFlight]) or for room in the answer queue, under
// way otherwise; the grace's end is seen the same way, and a frame
// still arriving then is cut too.
func WithMaxConnectionAge(age, grace time.Duration) ServerOption {
	age = min(max(age, 0), maxLimit)
	grace = min(max(grace, 0), maxLimit)
	return serverOption(func(o *serverOptions) { o.maxAge, o.maxAgeGrace = age, grace })
}

// WithReadTimeout bounds the transfer of one frame, measured on progress:
// from its first byte, a frame gets d plus one second for every rate bytes
// of it received so far ([WithMinReadRate]); a frame that has not finished
// by then drops the connection (logged, counted in Stats.Dropped). A peer
// trickling bytes (slowloris) is dropped about d after its frame began; a
// healthy transfer at rate or faster is never cut, whatever its size. The
// TLS handshake also gets d. Over TLS made by [WithTLSConfig], whose
// records reach the server only whole, each record the server waits for
// must be whole within d plus a second per rate bytes of it, or the
// connection is dropped (a listener that is already TLS gets no such
// bound: a trickled record is held to the idle limit there). Default
// DefaultReadTimeout (10 s); d <= 0: no limit (beyond 36 years: 36 years).
//
// Why: net/http has no read timeout by default (ReadTimeout and
// ReadHeaderTimeout 0, so a slowloris peer is held forever); gRPC-go
// leaves it to HTTP/2 flow control and keepalive, and bounds only the
// handshake (ConnectionTimeout, 120 s). 10 s is long for any frame a
// healthy peer sends whole on a LAN, and short enough that 500 slowloris
// connections are all gone within 10–11 s.
func WithReadTimeout(d time.Duration) ServerOption {
	d = min(d, maxLimit)
	return serverOption(func(o *serverOptions) { o.readTimeout = d })
}

// WithMinReadRate sets the rate, in bytes per second, at which a frame's
// transfer earns more time beyond the read timeout (see [WithReadTimeout]):
// a 16 MiB frame sent at 10 MiB/s finishes in 1.6 s; one sent at the
// default 16 KiB/s would get 10 s + 1,024 s. Default DefaultMinReadRate;
// n <= 0: no extension (a frame must finish within the read timeout).
func WithMinReadRate(n int) ServerOption {
	return serverOption(func(o *serverOptions) { o.minReadRate = n })
}

// WithHideErrors makes the server answer a plain handler error (one that
// is not a *[StatusError]) with status 500 and the body "internal error"
// instead of the error's text, for services whose errors may carry
// details callers should not see. The error is logged either way. (The
// 504 of a handler that returned its ctx's error once the call's deadline
// passed, see [Handler], carries "internal error" too, and is not
// logged.) A *StatusError's code and message are not hidden, and that
// includes the error of a call the handler made and returned, wrapped or
// not: the backend's code and message go to the caller (as a gRPC status
// error a handler returns does in gRPC-go); map such an error to one of
// your own to hide it. The words of a wrapper around a *StatusError are
// hidden. Default: the error's text is the answer body (for a wrapped
// *StatusError, the wrapper's words and the status's message).
func WithHideErrors() ServerOption {
	return serverOption(func(o *serverOptions) { o.hideErrors = true })
}

// WithHealthListing makes the 404 of a health check of a service the
// server does not know name services it does know (mounted or set with
// [Health.Set]): the first 8 in byte order, each cut to 64 bytes, within
// about 256 bytes, and a count of the rest, as in
// `rpc: health: no such service "Shop" (known services: "shop.Shop")`.
// It helps find a health name spelled wrong (a probe configured with
// "Shop" for the service "shop.Shop"), but the health service answers any
// peer that connects, before interceptors run (an authenticating one
// included, see [HealthMethod]): with it on, any such peer can learn
// which services the server runs. Turn it on where every peer that can
// connect may know that (a test, a debugging session, a private
// network). Default: off; the 404 quotes only the name asked for, as
// gRPC's health service answers NOT_FOUND without naming others.
func WithHealthListing() ServerOption {
	return serverOption(func(o *serverOptions) { o.healthList = true })
}

// WithBaseContext sets the function that gives the base context of the
// calls served from a listener, as http.Server.BaseContext does: f is
// called once per [Server.Serve] with its listener, and every handler ctx
// of that listener's connections returns the base context's values and
// deadline and is done when it is. f must not return nil. Default
// context.Background().
func WithBaseContext(f func(net.Listener) context.Context) ServerOption {
	return serverOption(func(o *serverOptions) { o.baseContext = f })
}

// WithShutdownGrace sets how long [Server.Shutdown] waits, once a
// connection has no call running, for a peer that did not acknowledge the
// go-away frame before closing it; a connection the server sent its
// go-away to for its idleness ([WithIdleTimeout]) or its age
// ([WithMaxConnectionAge]) gets as long. Streams still open that long after
// Shutdown began are ended with 503. Default DefaultShutdownGrace, 500 ms
// (a d beyond some 36 years counts as 36 years).
//
// A peer that acknowledges (this package's client, rpc/cluster's
// connections) has its connection closed as soon as its calls are
// answered and its streams ended, whatever the grace. One stalled past the grace (a long GC
// pause, a starved process) before it read the go-away loses the calls it
// sends meanwhile: they fail with [ErrClosed], which cannot say they did
// not run, so rpc/cluster does not send them again. For rolling restarts
// behind rpc/cluster, give replicas a grace above the worst stall of
// their clients (rpc/cluster's tests and examples/rolling use 30 s;
// rpc/README.md, "Clusters", the "shutdown grace" row), and a Shutdown
// ctx longer than that.
func WithShutdownGrace(d time.Duration) ServerOption {
	d = min(d, maxLimit)
	return serverOption(func(o *serverOptions) { o.shutdownGrace = d })
}

// WithPipelining turns on promise pipelining (docs/wire.md §6): a call with
// target != 0 gets as payload the body of the OK answer to promise target
// on the same connection, waits for it if it is still running, and is
// refused with 400 if it failed or is unknown. Each connection remembers
// the last tableSize calls (tableSize <= 0: 2 × the in-flight limit);
// older promises are unknown. Default: off, and a call with a target is
// refused with 400.
//
// Memory: the table keeps the answer bodies it remembers, so one
// connection may hold up to tableSize answers of up to the maximum frame
// size each; size both with that product in mind ([frame.WithMaxFrameSize],
// through [WithFrameOptions]). The table itself grows with the calls a
// connection makes, up to tableSize entries of 40 bytes: a connection
// that made none holds none.
func WithPipelining(tableSize int) ServerOption {
	return serverOption(func(o *serverOptions) {
		o.pipelining = true
		o.promiseTable = tableSize
	})
}

// WithLogger sets where the server logs dropped connections and handler
// panics. Default slog.Default().
func WithLogger(l *slog.Logger) ServerOption {
	return serverOption(func(o *serverOptions) { o.logger = l })
}

// Dialer makes the connections of [Dial]: a *net.Dialer, or any
// transport that returns a net.Conn (a proxy, a wrapper that counts
// bytes). With [WithTLSConfig], TLS runs over the connection it returns.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// WithDialer sets the dialer of [Dial]. Default: a zero net.Dialer.
// rpc/cluster takes it through its WithClientOptions.
func WithDialer(d Dialer) ClientOption {
	if nd, ok := d.(*net.Dialer); ok && nd == nil {
		d = nil // a nil *net.Dialer: the default, as before
	}
	return clientOption(func(o *clientOptions) { o.dialer = d })
}

// WithAnswerTimeout sets how long a client with calls outstanding
// (waiting for their answers, or abandoned by their callers and still
// holding their slots) may go without a sign of life from the server
// before it closes the connection as hung: a whole frame (an answer, a
// pong to the ping the client sends after half of d, any frame), or,
// within a quarter of d, bytes at 16 KiB/s or faster (a large answer
// arriving slowly). Bytes that come slower and end no frame (a server
// that trickles its answer a byte at a time) are not one. Its calls then
// fail with ErrClosed (their error also matches os.ErrDeadlineExceeded,
// and says "no answer"), [Client.Closed] turns true and rpc/cluster
// dials a new connection. The check runs in the process-wide beat (beat.go) at
// least every d/4, so the close comes between d and about 1.25 d after
// the last sign of life (plus
// however late a busy machine wakes the beat). Time in which the client
// does not read because a stream's buffer is full (its application does
// not Recv, and the server, a canonical one, sent more than the stream's
// window) is not counted: the client, not the server, is stalled then.
// Default DefaultAnswerTimeout (60 s): longer than a unary call
// should take (a handler that legitimately runs longer with nothing else
// on the connection needs a larger value); d <= 0 turns the check off.
//
// The client also closes a connection whose table of pending calls is
// full while at least half of the slots belong to abandoned calls (ctx
// ended) whose answers never came: the server answers other calls but not
// those, and the slots would otherwise stay taken forever.
func WithAnswerTimeout(d time.Duration) ClientOption {
	d = min(max(d, 0), maxLimit)
	return clientOption(func(o *clientOptions) { o.answerTimeout = d })
}

// WithMaxPending limits the pending calls of one client connection
// (default and maximum DefaultMaxPending; n <= 0 means the default, n
// above it the maximum). A promise ([Client.Send]) not yet waited for
// or released, and a call abandoned by its ctx whose answer has not
// come, hold a place too. A call beyond it ([Client.Call],
// [Client.Send], [Promise.Call], [Promise.Send]) fails with
// ErrTooManyPending, nothing sent.
func WithMaxPending(n int) ClientOption {
	return clientOption(func(o *clientOptions) {
		if n <= 0 || n > DefaultMaxPending {
			n = DefaultMaxPending
		}
		o.maxPending = n
	})
}
