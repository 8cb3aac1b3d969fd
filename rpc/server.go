package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Handler serves one method. req is the request payload (a ZAP message);
// it aliases a buffer the server owns and is valid only until the handler
// returns. The handler appends its answer body to resp (a server-owned
// buffer, also valid only until return) and returns the extended slice.
// The server reuses both buffers for its later calls: a handler must not
// keep req or resp, nor any slice of them, nor hand them to a goroutine
// that outlives it (it would read another call's bytes, or write into
// them); copy what it keeps. The slice it returns, resp extended or one
// of its own, is read after it returns, while the answer is queued or
// written: a slice of its own must not change until the next call (a
// pooled buffer put back by a deferred function is reused too early).
//
// An error that wraps a *[StatusError] (see [Errorf]) answers its code,
// unless that code is 0 or 200 (no error status), with the error's text
// as body, the status's own "rpc: status N: " words left out: the
// message, and the words a wrapper added ("loading user 7: no user";
// the message alone under [WithHideErrors]). A 404 [NoSuchMethod] from a
// call the handler made answers 500 instead (see [IsNoSuchMethod]). Any other error answers 500 with the error's text as body (or
// "internal error" under [WithHideErrors]) and is logged with the method
// and the peer's address, but for the error the call's end gave the
// handler, which is not logged: ctx's context.DeadlineExceeded (wrapped or
// not) once the call's deadline passed answers 504
// ([StatusDeadlineExceeded], without the not-run flag: the call ran),
// ctx's context.Canceled once the caller canceled the call answers
// [StatusCanceled] (the caller dropped the call: it discards the answer),
// and ctx's error once the connection is gone is seen as [StatusCanceled]
// (no answer can be written). A panic answers 500 and is
// logged the same way; the connection goes on. So does a call to
// runtime.Goexit (t.FailNow in a test's handler): it ends the goroutine
// the handler ran on, and another takes its place. Handlers, stream
// handlers too, run on goroutines the server reuses (a read loop, a
// worker): a handler that calls runtime.LockOSThread must unlock it, and
// one that sets pprof labels must restore them, before it returns, or
// the next handler on that goroutine inherits them.
//
// A handler may block: calls run in the connection's read loop, and one
// still running after a millisecond or two is left there while a worker
// goroutine takes over reading (other calls on the connection go on).
//
// ctx carries the values of the base context ([WithBaseContext]) and is
// done when the connection dies (the peer reset it, a write failed, a
// timeout dropped it, Close, or the end of Shutdown's grace), the base
// context is done, the deadline the request carried passes (its
// Deadline reports it), or the caller cancels the call. What a handler
// sees when its caller cancels: as with gRPC, its ctx's Done closes and
// Err returns context.Canceled, when the caller is a zapcodec [Client]
// (rpc/cluster's too) whose ctx was canceled before the answer came
// (docs/wire.md §8, "Cancel": a frame of kind 12 naming the call, sent
// to a server that announced it takes them). The cancel arrives a round
// trip after the caller's, or two for the first on a connection (the
// client asks first); a handler running in the read loop sees it no
// sooner than a worker took over reading, which the watchdog does a
// millisecond or two after the handler began (later on a loaded machine,
// or when calls had stopped and the watchdog had slowed down: see
// rpc/README.md), as nothing reads the connection before. A caller whose
// deadline passed sends no cancel: the handler's ctx ends by the
// deadline its request carried, with context.DeadlineExceeded. A
// canonical client never cancels: its calls run to their end or their
// deadline. [CapFrom] and [MetadataFrom] read the call's cap
// token and metadata. [CallInfo] reads the call's method and promise id from
// it or from any context derived from it. It is a pooled value: do not
// use it after the handler returns (copy what you need first).
type Handler func(ctx context.Context, req []byte, resp []byte) ([]byte, error)

// Server serves ZAP-RPC calls on any number of listeners. Create it with
// [NewServer], register handlers with [Server.Handle], then call
// [Server.Serve]. Its methods are safe for concurrent use.
type Server struct {
	opts serverOptions

	// takeoverHook, when set (tests only, before Serve), runs in the
	// watchdog's scan right after it takes a connection's read loop from
	// a stuck handler and before a worker gets the role.
	takeoverHook func(*serverConn)

	hmu      sync.Mutex
	handlers atomic.Pointer[[]Handler] // index: method ordinal; copied on write
	mounts   atomic.Pointer[mountSet]  // copied on write, under hmu (mount.go)
	health   Health                    // health.go

	reflection serverReflection // reflection.go

	// streamHandlers: by method ordinal; copied on write (stream_server.go)
	streamHandlers atomic.Pointer[map[uint32]StreamHandler]

	// work hands a job (a pipelined call, or a read loop taken from a slow
	// handler) to an idle worker goroutine, streamWork a stream whose
	// handler is to run; when none is idle, a new worker is started and
	// stays (see dispatch, dispatchStream). A nil job tells an
	// idle worker to exit; all idle workers exit once the server closes.
	work       chan *job
	streamWork chan *Stream
	workers    atomic.Int64
	idleWork   atomic.Int64
	// The reaper of idle workers parks while fewer than two are idle
	// (reapWorkers); a worker going idle wakes it.
	reapParked atomic.Bool
	reapWake   chan struct{} // capacity 1
	reapWakes  atomic.Int64  // times the parked reaper was woken (tests)

	// The watchdog takes the read loop away from slow inline handlers
	// (see serverConn.runInline). Read loops scan for it while calls
	// flow (scanDue); it parks while no handler runs inline for a while,
	// and a read loop starting an inline call wakes it.
	wdParked atomic.Bool
	wdWake   chan struct{} // capacity 1
	wdLast   atomic.Int64  // monoNow of the last scan; written under wdMu
	wdByLoop atomic.Int64  // monoNow of the last scan a read loop made (scanDue)
	wdMu     sync.Mutex
	wdList   []*serverConn // under wdMu: connections that ran calls inline lately
	wdBusy   bool          // under wdMu: the last scan saw a handler running inline
	wdLooks  int64         // under wdMu: connections the watchdog looked at (tests)
	wdScans  int64         // under wdMu: its scans (tests)

	readWakes atomic.Int64 // read deadlines that fired (tests)

	mu sync.Mutex
	// listeners holds the listeners Serve runs on, keyed by a pointer to
	// each: a listener's dynamic type need not be comparable (a struct
	// with a func field), and hashing it as an interface would panic.
	listeners map[*net.Listener]struct{}
	conns     map[*serverConn]struct{}
	closing   bool // Shutdown or Close called
	closed    bool // Close called (Shutdown's own at its ctx's end too)
	done      chan struct{}
	janitor   bool

	connWG sync.WaitGroup

	stats       serverStats
	streamStats streamCounters // stream_observe.go

	// The server's answer budget and the calls waiting for answer
	// budget, the connection's or the server's (answerbudget.go).
	ansBudget answerBudget
	ansWaits  atomic.Int64
}

type serverStats struct {
	accepted, rejected, active atomic.Int64
	// admitted counts the connections WithMaxConns' limit applies to:
	// from admit to removeConn, so from before active (which counts a
	// connection once it is registered, for Shutdown to reach it).
	admitted          atomic.Int64
	calls             atomic.Uint64
	byStatus          [6]atomic.Uint64 // 200, 400, 404, 500, 503, other
	bytesIn, bytesOut atomic.Uint64
	dropped           atomic.Uint64
}

// Stats is a snapshot of a server's counters.
type Stats struct {
	Accepted uint64 // connections accepted
	Rejected uint64 // connections closed at once because of WithMaxConns
	Active   int64  // connections open now
	Dropped  uint64 // connections closed because of a protocol violation, timeout or I/O error
	Calls    uint64 // requests read
	// Answers counts answers sent by status.
	OK, BadRequest, NotFound, Internal, Unavailable, OtherStatus uint64
	// BytesIn counts the bytes of the frames read (of a frame over the
	// maximum frame size, read past, its header and the 64 bytes looked
	// at), BytesOut the bytes
	// written to the connections: frames of every kind (calls and their
	// answers, refusals, stream opens, messages, ends and windows, pings
	// and pongs, go-aways), headers included. BytesOut counts a write as
	// it returns, so it may lag an answer its client already has.
	BytesIn, BytesOut uint64
	// Workers counts the worker goroutines alive: running a call handed
	// from a read loop, a read loop taken from a slow handler, or a
	// stream's handler, or idle (half the idle ones end each second).
	Workers int64
	// Streams counts streams and their messages (Calls and the answers
	// by status above are unary calls only).
	Streams StreamStats
	// AnswerBytes is the answer budget reserved now by unary handlers
	// ([ReserveAnswer]) and by inflated compressed requests
	// ([WithCompression]) whose answers have not left, on all
	// connections; AnswerWaits counts the calls waiting now in
	// ReserveAnswer, and read loops waiting to run such a request.
	AnswerBytes, AnswerWaits int64
}

// NewServer returns a server with no handlers.
func NewServer(opts ...ServerOption) *Server {
	s := &Server{
		opts:       buildServerOptions(opts),
		work:       make(chan *job),
		streamWork: make(chan *Stream),
		wdWake:     make(chan struct{}, 1),
		reapWake:   make(chan struct{}, 1),
		listeners:  make(map[*net.Listener]struct{}),
		conns:      make(map[*serverConn]struct{}),
		done:       make(chan struct{}),
	}
	s.ansBudget.limit = int64(s.opts.serverAnswerBudget)
	empty := []Handler{}
	s.handlers.Store(&empty)
	s.health.s = s
	if s.opts.reflection {
		s.reflection.h = s.serveReflection
		if len(s.opts.interceptors) > 0 {
			s.reflection.h = chainHandler(s.opts.interceptors, ReflectionMethod, s.reflection.h)
		}
	}
	return s
}

// MaxMethod is the largest method ordinal [Server.Handle] takes. Dispatch
// is a slice indexed by ordinal, so the bound keeps that slice small;
// schema ordinals count methods from 1.
const MaxMethod = 1 << 16

// Handle registers h for the method with the given 1-based ordinal,
// replacing an earlier one; a nil h removes it. Safe to call while serving.
// The server's interceptors ([WithInterceptors]) are wrapped around h
// here, once. Generated Register…Server functions call it after
// [Server.Mount], which checks that interfaces do not overlap.
// Method 0 is not a valid ordinal and is ignored. Handle panics on an
// ordinal above [MaxMethod], a programming error caught at registration.
func (s *Server) Handle(method uint32, h Handler) {
	if method == 0 {
		return
	}
	if method > MaxMethod {
		panic(fmt.Sprintf("rpc: Handle: method ordinal %d above MaxMethod (%d)", method, MaxMethod))
	}
	if h != nil && len(s.opts.interceptors) > 0 {
		h = chainHandler(s.opts.interceptors, method, h)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	old := *s.handlers.Load()
	n := len(old)
	if int(method) >= n {
		n = int(method) + 1
	}
	hs := make([]Handler, n)
	copy(hs, old)
	hs[method] = h
	s.handlers.Store(&hs)
}

// handlerTable returns the current handler table (read-only).
func (s *Server) handlerTable() []Handler { return *s.handlers.Load() }

// handler looks method up in the read loop's copy of the handler table
// (see serverConn.hs).
func (c *serverConn) handler(method uint32) Handler {
	if hs := c.hs; uint64(method) < uint64(len(hs)) {
		return hs[method]
	}
	switch method {
	case HealthMethod:
		return serveHealth
	case ReflectionMethod:
		return c.s.reflection.h // nil without WithReflection: 404
	}
	return nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := &s.stats
	return Stats{
		Accepted:    uint64(st.accepted.Load()),
		Rejected:    uint64(st.rejected.Load()),
		Active:      st.active.Load(),
		Dropped:     st.dropped.Load(),
		Calls:       st.calls.Load(),
		OK:          st.byStatus[0].Load(),
		BadRequest:  st.byStatus[1].Load(),
		NotFound:    st.byStatus[2].Load(),
		Internal:    st.byStatus[3].Load(),
		Unavailable: st.byStatus[4].Load(),
		OtherStatus: st.byStatus[5].Load(),
		BytesIn:     st.bytesIn.Load(),
		BytesOut:    st.bytesOut.Load(),
		Workers:     s.workers.Load(),
		Streams:     s.streamStats.snapshot(),
		AnswerBytes: s.ansBudget.reserved(),
		AnswerWaits: s.ansWaits.Load(),
	}
}

func (st *serverStats) answered(status uint32) { st.byStatus[statusIndex(status)].Add(1) }

// statusIndex is the index of status in serverStats.byStatus.
func statusIndex(status uint32) int {
	switch status {
	case StatusOK:
		return 0
	case StatusBadRequest:
		return 1
	case StatusNotFound:
		return 2
	case StatusInternal:
		return 3
	case StatusUnavailable:
		return 4
	}
	return 5
}

// Serve accepts connections on l and serves each in its own read loop
// until l fails or the server shuts down. A temporary accept error (out of
// file descriptors: EMFILE, ENFILE; ECONNABORTED...) is logged and retried
// after a pause of 5 ms doubling to 1 s, as net/http does. Serve returns
// [ErrServerClosed] (as soon as Shutdown or Close begins) or the accept
// error. As with net/http, Serve's return is no sign that the calls are
// done: a program that exits when Serve returns cuts the calls Shutdown is
// letting finish, so it waits for Shutdown to return (ExampleServer_Shutdown).
// l is closed when Serve returns. TCP, Unix and TLS listeners all work; with
// [WithTLSConfig] every accepted connection is wrapped in TLS. A
// listener that wraps its connections (netutil.LimitListener, a metrics
// wrapper) should give them a NetConn method that returns the socket,
// as crypto/tls does: a write to a connection the server cannot see
// through is taken for one a deadline cannot cut and resume (it might
// hide TLS), so each write must end within the write timeout, not only
// make progress ([WithWriteTimeout]). With the
// HTTP framing among the server's frame options it returns
// [ErrHTTPFraming] at once (l closed).
func (s *Server) Serve(l net.Listener) error {
	if err := checkFraming(s.opts.frame); err != nil {
		l.Close()
		return err
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[&l] = struct{}{}
	if !s.janitor {
		s.janitor = true
		go s.reapWorkers()
		go s.watchdog()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, &l)
		s.mu.Unlock()
		l.Close()
	}()

	base := context.Background()
	if f := s.opts.baseContext; f != nil {
		if base = f(l); base == nil {
			panic("rpc: WithBaseContext function returned a nil context")
		}
	}
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			if temporaryAcceptError(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.opts.logger.Warn("rpc: accept error, retrying", "err", err, "delay", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-s.done:
					return ErrServerClosed
				}
			}
			return err
		}
		backoff = 0
		s.stats.accepted.Add(1)
		if !s.admit() {
			s.stats.rejected.Add(1)
			nc.Close()
			continue
		}
		if s.opts.tls != nil {
			if s.opts.readTimeout > 0 {
				// A record trickled in bounds the read timeout too
				// (tlsrecord.go).
				nc = newRecordConn(nc, s.opts.readTimeout, s.opts.minReadRate)
			}
			nc = tls.Server(nc, tlsConfig(s.opts.tls))
		}
		c := newServerConn(s, nc, base)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			s.stats.admitted.Add(-1)
			nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.stats.active.Add(1)
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// admit counts a connection just accepted among the admitted ones, unless
// WithMaxConns' limit is reached (it reports false then). The check and
// the count are one step: listeners served at once (one Serve each)
// could otherwise all pass the check before any counted, and exceed the
// limit by one per listener.
func (s *Server) admit() bool {
	limit := int64(s.opts.maxConns)
	for {
		n := s.stats.admitted.Load()
		if limit > 0 && n >= limit {
			return false
		}
		if s.stats.admitted.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// temporaryAcceptError reports whether Accept may succeed if tried again
// later: out of file descriptors (EMFILE, ENFILE), of buffer memory, a
// connection aborted before it was accepted, or a timeout. net/http backs
// off on the same errors (5 ms doubling to 1 s) instead of returning.
func temporaryAcceptError(err error) bool {
	for _, e := range [...]error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func tlsConfig(cfg *tls.Config) *tls.Config {
	if cfg.MinVersion != 0 {
		return cfg
	}
	c := cfg.Clone()
	c.MinVersion = tls.VersionTLS13
	return c
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *Server) removeConn(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.active.Add(-1)
	s.stats.admitted.Add(-1)
	s.connWG.Done()
}
