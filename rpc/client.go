package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/frame"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Caller makes unary calls; generated stubs target it. *Client implements
// it, and so does rpc/cluster's Client (calls spread over the replicas of
// a service).
type Caller interface {
	// Call sends req (a ZAP message, may be empty) to the method with the
	// given ordinal and appends the answer body to resp. See Client.Call.
	Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error)
}

var _ Caller = (*Client)(nil)

// Client is one connection to a ZAP-RPC server, safe for concurrent use:
// calls from many goroutines are multiplexed over it and matched to their
// answers by promise_id, in any order. Create it with [Dial] or
// [NewClient].
//
// Promise ids are (generation << 16) | (slot + 1): the slot indexes the
// table of pending calls (no map), the generation changes each time a slot
// is reused; a fresh client's first calls get ids 1, 2, 3... The ids of a
// slot come round again after 65,536 uses of it (the wire's promise_id
// has 32 bits, 16 of them the slot's). A slot is reused only once its
// call's answer came, or the call was never sent, or the connection
// closed: a slot whose call was abandoned (ctx done, a promise released)
// stays reserved until its late answer arrives, so a late answer can
// never reach another call, however late it comes. (A server that
// answered one call twice could reach a later call whose id is the same;
// the client cannot tell such an answer from the right one.)
type Client struct {
	// Read-mostly: set up once (goAway and broken are written once).
	// Kept off the cache lines that every call writes (free, the outbox),
	// so that reading them does not miss (see DESIGN.md).
	nc   net.Conn
	opts clientOptions
	r    *frame.Reader
	peer net.Addr // nc's remote address, for the observer
	// chain is the client's interceptors around unary, built once (nil
	// without interceptors).
	chain Invoker
	// table is the latest copy of the table of slots (it only grows,
	// under mu), read without a lock.
	table    atomic.Pointer[[]*slot]
	goAway   atomic.Bool // set under out.mu: no request may be written after it
	broken   atomic.Bool
	readDone chan struct{}
	// closingNoted: the WithOnClosing functions were called (closing.go).
	closingNoted atomic.Bool

	_ cacheLinePad
	// Idle slots form a stack that any goroutine pushes onto without a
	// lock but that only a holder of out.mu pops from (popLocked): free
	// is count<<16 | (index+1) of the top slot (0: none), where count is
	// the number of slots on the stack; each idle slot's next links to
	// the one below. With one popper at a time, the top slot cannot be
	// popped and pushed again between a pop's load of free and its
	// compare-and-swap (no ABA), so the link is a plain field, written by
	// the pusher before the compare-and-swap that publishes it, and read
	// by the popper after the load that sees it: a push is one locked
	// instruction, a pop one more. Every call writes free twice: it has a
	// cache line of its own. The count tells a flusher whether other
	// calls are under way (busySlots).
	free atomic.Uint64
	_    cacheLinePad

	out outbox // requests and go-away acks
	_   cacheLinePad

	streams streamSet // stream.go

	mu     sync.Mutex
	slots  []*slot
	closed bool // under mu; err says why
	err    error

	// watch is the client's watch of a ctx that many of its calls share
	// (ctxwatch.go); nil none. Replaced under mu. cand and candHits count
	// the calls in a row whose slot's previous call had the same Done
	// (cand), the evidence for a watch of it.
	watch    atomic.Pointer[ctxWatch]
	cand     atomic.Uintptr
	candHits atomic.Int32

	abandoned atomic.Int32 // slots of abandoned calls, waiting for their late answers
	promises  atomic.Int32 // promises sent and not yet waited for or released (pending.go)
	// cancelSt is whether the server takes cancels (cancel.go):
	// cancelUnasked, cancelAsked or cancelOn.
	cancelSt atomic.Uint32
	// zipReq: the server takes compressed requests (compress.go).
	zipReq atomic.Bool

	// The client's place in the beat (beat.go), which runs its periodic
	// checks: the watch of its writes (outbox.watchWrite) and the answer
	// check (check, every answerTimeout/4). nil without either timeout.
	// The rest belongs to the beat.
	beatE      *beatEntry
	nextCheck  int64  // monoNow of the next answer check
	wrSince    int64  // monoNow since which the outbox's writer goroutine is idle (endIdleWriter)
	lastRx     uint64 // bytes received, at the last answer check
	lastFramed uint64 // bytes of whole frames read (frame.Reader.Framed), at the last answer check
	quiet      int

	// names is the client's own table of method names, used without
	// WithMethodNames (methodnames.go).
	names MethodNames
}

// cacheLinePad separates words that different goroutines write from
// each other and from read-mostly words (64 bytes: one cache line).
type cacheLinePad [64]byte

// Slot states: the low 16 bits of slot.st. The high 32 bits are the
// promise id of the slot's current use (its last, for an idle slot).
const slotStateMask = 0xFFFF

const (
	// slotIdle: not in use. A slot pushed on the free stack keeps the
	// state its last use ended in (idle, delivered or late; never
	// waiting, abandoned or canceled), which no answer or cancel acts
	// on: push does not store it again.
	slotIdle uint64 = iota
	slotWaiting
	// slotDelivered: the read loop (or fail) claimed the slot for the
	// answer; the caller takes it from ch. Final until release.
	slotDelivered
	slotAbandoned
	// slotCanceled: the client's watch of the call's ctx (ctxwatch.go)
	// canceled the call and woke its caller, which has not yet left.
	// slotLate: the call's answer came while it was canceled (and was
	// dropped); its caller frees the slot.
	slotCanceled
	slotLate
)

// slot is one pending call. Its first 64 bytes are what the caller and
// the read loop hand each other once per call, a cache line of their own
// (the allocator's 128-byte class is 128-byte aligned), so that
// neighbours used by other callers do not share it. The second line is
// written by calls whose ctx can end (and cleared by the next call that
// no watch may cancel), and read by the client's watch of a ctx when
// that ctx ends (ctxwatch.go).
type slot struct {
	slotLine
	_ [64 - unsafe.Sizeof(slotLine{})]byte

	// The Done channel (chanID) of the latest call with a ctx that can
	// end, and that call's pid; written before the call is waiting.
	doneID atomic.Uintptr
	// rmd receives the response metadata of the slot's current call
	// (WithResponseMetadata), nil when the call did not ask: written by
	// acquire before the call is waiting, read by the read loop's
	// delivery (readFrames) only for an answer that carries metadata,
	// cleared by release.
	rmd     *Metadata
	donePid atomic.Uint32
	// spent is the pid of the promise whose Wait or Release began (see
	// Promise.spend); promises only.
	spent atomic.Uint32
	// epoch counts the wraps of gen: with the pid, it tells a use of the
	// slot from one 65,536 uses earlier whose pid was the same (a
	// Promise keeps it, see Promise.owned). Written by acquire once every
	// 65,536 uses.
	epoch atomic.Uint32
	// cancelPid is the pid of the slot's call whose caller canceled it
	// (cancel.go), for the cancels the read loop sends when the server's
	// announcement comes; cleared when the slot of such a call is freed.
	cancelPid atomic.Uint32
	_         [64 - unsafe.Sizeof(atomic.Uintptr{}) - unsafe.Sizeof((*Metadata)(nil)) - 4*unsafe.Sizeof(atomic.Uint32{})]byte
}

// slotLine is the first cache line of a slot (see slot).
type slotLine struct {
	st     atomic.Uint64 // pid<<32 | state: a state change names its use
	ch     chan struct{} // capacity 1: one signal per delivered answer
	resp   []byte        // the caller's buffer while waiting
	err    *error        // the call failed (rare): *err says why
	status uint32
	pid    uint32 // of the current use: gen<<16 | index+1; written by acquire
	gen    uint16 // generation of the next use
	notRun bool   // the server refused the call without running it
	// sameDone (the caller's, from acquire): the slot's previous call
	// with a ctx that can end had the same Done channel as this one.
	sameDone bool
	// next is, while the slot is on the free stack, index+1 of the slot
	// below it (0 none): written by push before it publishes the slot,
	// read by popLocked (see Client.free).
	next uint16
	// zipped (the caller's, from send): the call's payload went
	// compressed (compress.go).
	zipped bool
}

// Dial connects to addr ("tcp", "tcp4", "tcp6" or "unix"; with
// [WithTLSConfig], TLS over it) and returns a client. ctx bounds the dial
// and the TLS handshake only. It fails with [ErrHTTPFraming] before
// dialing when the options select the HTTP framing. Otherwise its error
// is the dialer's or the TLS handshake's, as they return it: a
// *net.OpError (errors.Is(err, syscall.ECONNREFUSED) for a port nothing
// listens at), a *tls.CertificateVerificationError (errors.As) for a
// certificate the config does not trust.
func Dial(ctx context.Context, network, addr string, opts ...ClientOption) (*Client, error) {
	o := buildClientOptions(opts)
	if err := checkFraming(o.frame); err != nil {
		return nil, err
	}
	d := o.dialer
	if d == nil {
		d = &net.Dialer{}
	}
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if o.tls != nil {
		cfg := tlsConfig(o.tls)
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			if cfg == o.tls {
				cfg = cfg.Clone()
			}
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return newClient(nc, o), nil
}

// NewClient runs a client over an established connection (net.Pipe, a
// custom dialer's result...). The client owns nc and closes it, and sets
// its write deadlines (nothing else may). With options [Dial] refuses
// (the HTTP framing) the client is closed at once and its calls fail with
// an error matching [ErrClosed] that says why.
//
// With [WithTLSConfig], the client runs TLS over nc, as Dial does over
// the connection it dials, unless nc is TLS already (it has a
// ConnectionState method, as *tls.Conn does). NewClient does not wait
// for the handshake (the client's read loop runs it at once): one that
// fails (a cfg with neither ServerName, which NewClient has no dialed
// address to take from, nor InsecureSkipVerify, among others), or is
// not done within the shorter of the write and answer timeouts that are
// set, closes the client, and its calls fail with an error matching
// [ErrClosed] that says why.
//
// A call whose ctx ends while its write is blocked cuts the write short
// with a deadline (another goroutine writes the rest) only on a
// connection where a write can go on after that: a *net.TCPConn,
// *net.UnixConn or net.Pipe end, or a wrapper that unwraps to one with a
// NetConn method (and is not TLS: it has no ConnectionState). Over any
// other, TLS among them, a caller with a ctx that can end leaves the
// write to the connection's writer goroutine and waits for the answer
// (or its ctx); the write timeout bounds the write. That goroutine is
// started by the first such write and ends once no such write came for
// a second or more, at the client's periodic check (every quarter of the
// shorter of the write and answer timeouts: 7.5 to 15 s after the last
// write with the defaults), so an idle connection does not keep its
// stack; the next such write starts it again (two allocations). With
// neither timeout there is no periodic check, and it lives as long as
// the connection.
func NewClient(nc net.Conn, opts ...ClientOption) *Client {
	o := buildClientOptions(opts)
	if o.tls != nil {
		if _, ok := nc.(interface{ ConnectionState() tls.ConnectionState }); !ok {
			nc = tls.Client(nc, tlsConfig(o.tls))
		}
	}
	c := newClient(nc, o)
	if err := checkFraming(o.frame); err != nil {
		c.fail(err)
	}
	return c
}

func newClient(nc net.Conn, o clientOptions) *Client {
	c := &Client{
		nc:       nc,
		opts:     o,
		readDone: make(chan struct{}),
	}
	c.r = frame.NewReader(nc, o.frame...)
	c.r.DiscardTooLarge(oversizeHead) // an answer over the maximum fails alone (oversize.go)
	c.out.setup(nc, o.writeTimeout, c.r.MaxFrameSize())
	// Only the outbox sets nc's write deadline; a write that breaks the
	// stream fails the client at once, whichever goroutine ran it (fail
	// takes the outbox's lock, which broke holds: in a goroutine).
	c.out.soleDL = true
	c.out.keepWriter = true // the beat ends it when idle (Client.beat)
	c.out.onBreak = func(err error) { go c.fail(err) }
	c.streams.setup(&c.out, o.streamWindow, o.maxStreams)
	c.streams.cl = c
	c.peer = nc.RemoteAddr()
	c.chain = ChainInvoker(o.interceptors, c.unary)
	c.streams.chain = ChainStreamer(o.streamInterceptors, c.openStream)
	// The periodic checks run in the beat: no runtime timer stays pending
	// for them (beat.go). The write timeout is watched from there too:
	// healthy writes set no deadline on nc (outbox.watchWrite).
	if o.writeTimeout > 0 {
		c.out.ww = &writeWatch{}
	}
	every := c.beatEvery()
	if every == 0 && !c.out.resumable {
		// No timeout to watch, but a writer goroutine to end once idle
		// (TLS: see outbox.handToWriter), which only the beat does.
		every = writerIdle
	}
	if every > 0 {
		c.nextCheck = monoNow() + int64(max(o.answerTimeout/4, 1))
		c.beatE = beats.join(c, every)
	}
	go c.readLoop()
	return c
}

// beatEvery returns how often the client's checks run: a quarter of the
// shorter of its write and answer timeouts (0: neither is set; a client
// over TLS then beats every writerIdle, to end its idle writer
// goroutine).
func (c *Client) beatEvery() time.Duration {
	every := time.Duration(0)
	for _, d := range [2]time.Duration{c.opts.writeTimeout, c.opts.answerTimeout} {
		if d > 0 && (every == 0 || d/4 < every) {
			every = max(d/4, 1)
		}
	}
	return every
}

// beat runs the client's periodic checks (see beatEvery): the watch of
// its writes and the end of its idle writer goroutine at every beat, the
// answer check every answerTimeout/4.
func (c *Client) beat(now int64) {
	if c.broken.Load() {
		return
	}
	if c.out.ww != nil && c.out.watchWrite(now) {
		// fail closes nc, which may take its time: the beat goes on.
		go c.fail(errDeadlineIgnored)
	}
	if !c.out.resumable {
		// Only such a connection has a writer goroutine (TLS: see
		// outbox.handToWriter).
		c.out.endIdleWriter(now, &c.wrSince)
	}
	if a := c.opts.answerTimeout; a > 0 && now >= c.nextCheck {
		// Every answerTimeout/4, at the first beat after (a write
		// timeout shorter than the answer timeout beats more often).
		every := int64(max(a/4, 1))
		if c.nextCheck += every; c.nextCheck <= now {
			c.nextCheck = now + every
		}
		c.check()
	}
}

// Call sends a request for method (1-based ordinal) with payload req and
// appends the answer body to resp, returning the extended slice. req is
// only read, and only during Call; nothing of req or resp is kept after
// Call returns.
//
// Call returns by ctx's deadline (or soon after ctx is canceled) whatever
// the server does: a request that cannot be queued because the
// connection's queue is full is not sent; a request already queued is
// still sent (its answer will be dropped); a request whose write is
// blocked when ctx ends is finished by another goroutine (the stream
// cannot be cut mid-frame) while Call returns. Without a deadline, a peer that stops
// reading is dropped after the write timeout ([WithWriteTimeout]), and so
// is one that takes a write, in all, slower than 16 KiB/s past it; one
// that stops answering after the answer timeout ([WithAnswerTimeout]).
//
// Errors: a non-200 answer is a *[StatusError] (errors.As); its Message
// holds at most [MaxErrorMessage] bytes of the answer body, and the whole
// body is appended to resp and returned with the error. ctx's error when
// ctx ends first (the call is abandoned, a late answer is dropped; the
// call may or may not have run). When ctx was canceled (not its deadline,
// which the request carried), the server is told, as gRPC's is, by a
// cancel frame (a zapcodec extension, docs/wire.md §8) that ends the
// handler's ctx with context.Canceled; only a server that announced it
// takes cancels gets it (the first canceled call on a connection asks,
// with a ping a canonical server ignores), and a canonical server's
// handler runs on to its end or its deadline. The cancel is queued
// without waiting (a full queue drops it): Call returns at once;
// context.DeadlineExceeded, nothing sent, when ctx's deadline has passed,
// even while its Done is not closed yet (its timer late). [ErrGoAway]
// when the server announced shutdown before the call was sent, or
// refused it unrun ([IsRetryable]). An error matching [ErrClosed] when
// the connection is closed or breaks before the answer arrives; it wraps
// what broke it (io.EOF, a *net.OpError, a TLS error...: see
// [ErrClosed]). frame.ErrFrameTooLarge when the request
// exceeds the maximum frame size: at once, whether or not the
// connection's queue is full; nothing is sent and the connection is
// unaffected.
// [ErrTooManyPending].
//
// What the request carries beside req: when ctx has a deadline, the time
// left (in microseconds, a zapcodec extension field that a canonical
// server ignores; a zapcodec server gives the handler's ctx that deadline
// and answers a call whose deadline passed before it could run with a
// 504 that matches context.DeadlineExceeded); the token of [WithCap] in
// the canonical cap field; the pairs of [WithMetadata] in an extension
// field. Without any of them the request is the canonical envelope,
// byte for byte. The answer's response metadata, which a handler sets
// with [SetResponseMetadata], goes to the receiver of
// [WithResponseMetadata] when ctx has one, and is ignored otherwise.
//
// Once warm, a call allocates nothing, with or without those. A ctx
// that can end and that many calls share (64 in a row, see ctxwatch.go)
// is watched once for all of them, with context.AfterFunc (four
// allocations, once per such ctx), instead of by each call; the client
// keeps that ctx until it ends, the client closes, or another shared ctx
// replaces it.
// Interceptors ([WithClientInterceptors]) run around the call, the
// observer ([WithObserver]) sees it.
func (c *Client) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if c.chain != nil {
		return c.chain(ctx, method, req, resp)
	}
	if obs := c.opts.observer; obs != nil {
		return c.observedCall(obs, ctx, method, 0, req, resp)
	}
	// c.call by hand: the caller parks in wait, and every frame between
	// it and the caller's own costs a mispredicted return once it runs
	// again.
	done := ctx.Done()
	if done == nil && !c.opts.deflate && (!wireInUse.Load() || wireFrom(ctx) == nil) {
		// The plain call (send's work for it, by hand): a ctx that can
		// never end (no deadline, nothing to watch), no compression, no
		// cap or metadata in ctx (none in the process while wireInUse
		// is unset, the only load), so the request is the canonical
		// envelope. send's thirteen argument words do not fit in
		// registers, nor does its wire.Request.
		if c.goAway.Load() {
			return resp, ErrGoAway
		}
		// acquire's work by hand for a slot off the free stack, popped
		// under the outbox's lock that the request is queued under
		// (popLocked and use are inlined; an idle slot's rmd is nil
		// already, see drop); acquire itself for a new slot or a broken
		// client.
		c.out.mu.Lock() // queuePlain unlocks it
		s := c.popLocked()
		if s != nil {
			s.use(resp)
			if s.donePid.Load() != 0 {
				s.donePid.Store(0) // see acquire
			}
			s.st.Store(uint64(s.pid)<<32 | slotWaiting)
		}
		if s != nil && c.broken.Load() {
			c.out.mu.Unlock()
			c.unsend(s) // see acquire, which reports the error
			s = nil
			c.out.mu.Lock()
		}
		if s == nil {
			var err error
			if s, err = c.acquire(resp, nil, nil); err != nil {
				return resp, err
			}
		}
		if lead, ok := c.out.queuePlain(method, s.pid, 0, req, &c.goAway); ok {
			if lead {
				c.flushRequests(ctx)
			}
		} else if err := c.queuePlainSlow(ctx, s, method, 0, req); err != nil {
			return resp, err
		}
		<-s.ch
		if s.err != nil || s.status != StatusOK {
			return c.answerFailed(ctx, s, resp)
		}
		// answer's plain case, by hand (push is inlined).
		out := s.resp
		s.resp = nil
		if s.rmd != nil {
			s.rmd = nil
		}
		c.push(s)
		return out, nil
	}
	var s *slot
	if done != nil && !c.opts.deflate && (!wireInUse.Load() || wireFrom(ctx) == nil) {
		// The call with a ctx that can end (a deadline: nearly every
		// real caller's) and nothing else that changes the request (no
		// compression, cap or metadata): send's work by hand, as for
		// the plain call (send's thirteen argument words spill, and
		// callRequest and acquire look at what this call has not).
		// Anything rare (a deadline passed, a new slot, a broken
		// client, a full queue) goes send's way or its helpers'.
		select {
		case <-done:
			return resp, ctx.Err()
		default:
		}
		if c.goAway.Load() {
			return resp, ErrGoAway
		}
		var timeout uint64 // the request's: 0 none (a cancel alone)
		passed := false
		if dl, has := ctx.Deadline(); has {
			timeout, passed = timeoutMicros(dl)
		}
		if !passed {
			// acquire's work by hand for a slot off the free stack and
			// a call that a watch of ctx may cancel (see the plain
			// call's, and acquire).
			// Popped under the outbox's lock that the request is
			// queued under.
			c.out.mu.Lock()
			if s = c.popLocked(); s != nil {
				s.use(resp)
				id := chanID(done)
				if s.sameDone = s.doneID.Load() == id; !s.sameDone {
					s.doneID.Store(id) // see acquire
				}
				s.donePid.Store(s.pid)
				s.st.Store(uint64(s.pid)<<32 | slotWaiting)
				if c.broken.Load() {
					c.out.mu.Unlock()
					c.unsend(s) // send's acquire reports the error
					s = nil
				}
			} else {
				c.out.mu.Unlock()
			}
			if s != nil {
				// The canonical envelope, with the timeout when ctx has
				// a deadline (queueDeadline, and queuePlain, unlock mu).
				var lead, ok bool
				if timeout != 0 {
					lead, ok = c.out.queueDeadline(method, s.pid, timeout, req, &c.goAway)
				} else {
					lead, ok = c.out.queuePlain(method, s.pid, 0, req, &c.goAway)
				}
				if ok {
					if lead {
						c.flushRequests(ctx)
					}
				} else if err := c.queuePlainSlow(ctx, s, method, timeout, req); err != nil {
					return resp, err
				}
			}
		}
	}
	if s == nil {
		var err error
		if s, err = c.send(ctx, done, done, method, 0, req, resp, false); err != nil {
			return resp, err
		}
		if s.zipped {
			return c.waitZipped(ctx, done, s, method, 0, req, resp)
		}
	}
	if done != nil {
		if w := c.watchFor(ctx, done, s.sameDone); w != nil {
			return c.waitWatched(ctx, w, s, resp)
		}
		return c.wait(ctx, done, s, resp)
	}
	// wait without a ctx to watch, by hand: a frame between the caller's
	// and the channel receive costs another mispredicted return after
	// the wake-up.
	<-s.ch
	return c.answer(ctx, s, resp)
}

// call is one call on the wire, without interceptors or observer.
func (c *Client) call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	done := ctx.Done()
	s, err := c.send(ctx, done, done, method, 0, req, resp, false)
	if err != nil {
		return resp, err
	}
	if s.zipped {
		return c.waitZipped(ctx, done, s, method, 0, req, resp)
	}
	return c.wait(ctx, done, s, resp)
}

// send takes a slot for a call (resp is the buffer its answer will be
// appended to) and queues its request; target is the promise it
// pipelines on, 0 none. done is ctx.Done(), which the caller looks up
// once for send and wait: each lookup walks ctx's chain of parents.
// watchDone is done when the call will be waited for under ctx (a watch
// of ctx may then cancel it, see acquire), nil when not (a promise's
// wait has a ctx of its own). On error nothing was sent and the slot is
// free. A write failure after the request was queued fails the slot
// with the connection (wait returns it). With [WithCompression], a large
// payload goes compressed once the server said it takes that, unless
// plain (a call sent again after a refusal, see waitZipped); the slot
// says whether it did (zipped).
func (c *Client) send(ctx context.Context, done, watchDone <-chan struct{}, method, target uint32, req, resp []byte, plain bool) (*slot, error) {
	if done != nil {
		// ctx.Err without another walk of ctx's parents: Err is not nil
		// once Done is closed.
		select {
		case <-done:
			return nil, ctx.Err()
		default:
		}
	}
	if c.goAway.Load() {
		return nil, ErrGoAway
	}
	var r wire.Request
	rmd, ok := callRequest(&r, ctx, done, method, target, req)
	if c.opts.deflate {
		// WithCompression (compress.go): compressed answers welcome;
		// a large payload goes compressed once the server said it
		// takes that.
		r.AcceptDeflate = true
		if len(req) >= c.opts.deflateMin && !plain && c.zipReq.Load() {
			d := deflateRequest(&r)
			defer putDeflater(d) // r.Payload is d's until the request is queued
		}
	}
	if rmd != nil {
		*rmd = Metadata{} // emptied when the call is sent
	}
	c.out.mu.Lock() // the slot is popped under it (acquire), the request queued
	s, err := c.acquire(resp, watchDone, rmd)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.out.mu.Unlock()
		c.unsend(s)
		return nil, context.DeadlineExceeded
	}
	r.PromiseID = s.pid
	s.zipped = r.PayloadDeflated

	// Queued at once when there is room (the common case); else the
	// general way (queueSlow), which waits for room or reports the error.
	if lead, ok := c.out.queueRequestLocked(&r, &c.goAway); ok {
		if lead {
			c.flushRequests(ctx)
		}
		return s, nil
	}
	return c.queueSlow(ctx, s, &r)
}

// queuePlainSlow is queueSlow for Call's plain call or call with a
// deadline (method, payload req, timeout 0 or the time left) in slot s,
// whose quick queueing failed. It returns the error of a call that was
// not sent (its slot freed), nil when the caller is to wait for the
// answer.
func (c *Client) queuePlainSlow(ctx context.Context, s *slot, method uint32, timeout uint64, req []byte) error {
	r := wire.Request{Method: method, PromiseID: s.pid, Payload: req, Timeout: timeout}
	_, err := c.queueSlow(ctx, s, &r)
	return err
}

// queueSlow queues request r of the call in slot s the general way, when
// queueRequest could not: it waits for room (until ctx ends), or reports
// why the call was not sent (its slot freed). See send.
func (c *Client) queueSlow(ctx context.Context, s *slot, r *wire.Request) (*slot, error) {
	if n := 1 + wire.RequestLen(r); n > c.out.max {
		// Never sent, however much room the queue has: not worth a wait
		// for room (until ctx ends, or the write timeout closes the
		// connection), nor a copy into the queue.
		c.unsend(s)
		return nil, fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, c.out.max)
	}
	buf, err := c.out.beginCtx(ctx, wire.KindRequest)
	if err != nil {
		// ctx ended while the queue was full: nothing was sent.
		c.unsend(s)
		return nil, err
	}
	if c.goAway.Load() {
		c.out.abandon(buf)
		c.unsend(s)
		return nil, ErrGoAway
	}
	if r.Timeout != 0 {
		// The time left as of now: the wait for room may have taken some.
		if dl, ok := ctx.Deadline(); ok {
			var passed bool
			if r.Timeout, passed = timeoutMicros(dl); passed {
				c.out.abandon(buf)
				c.unsend(s)
				return nil, context.DeadlineExceeded
			}
		}
	}
	buf = wire.AppendRequest(buf, r)
	lead, err := c.out.end(buf)
	if err != nil && err != ctx.Err() {
		if errors.Is(err, frame.ErrFrameTooLarge) {
			c.unsend(s)
			return nil, err
		}
		c.fail(err) // fails s with the other pending calls
		return s, nil
	}
	if lead {
		c.flushRequests(ctx)
	}
	return s, nil
}

// flushRequests is the flush of a caller whose request made it the
// flusher. A write error fails the connection, and with it the calls
// that wait (the caller's among them). ctx may end during the write
// (flushCtx hands the rest of it to another goroutine): the caller's wait
// then abandons the call.
func (c *Client) flushRequests(ctx context.Context) {
	// Other calls that hold slots are likely to send soon: those that
	// have their answers are about to return to callers that tend to call
	// again at once, and the others may get theirs meanwhile. The flusher
	// then yields first, so that they join its write.
	if err := c.out.flushCtx(ctx, c.busySlots() > 1); err != nil && err != ctx.Err() {
		c.fail(err)
	}
}

// wait waits for the answer of the call in slot s (sent by send with
// resp), or abandons the call when ctx ends first (done is ctx.Done()),
// and frees the slot.
func (c *Client) wait(ctx context.Context, done <-chan struct{}, s *slot, resp []byte) ([]byte, error) {
	if done == nil {
		<-s.ch
	} else {
		select {
		case <-s.ch:
		case <-done:
			if c.abandonCanceled(ctx, s) {
				return resp, ctx.Err()
			}
			<-s.ch // the answer is being delivered: take it
		}
	}
	return c.taken(ctx, s, resp)
}

// taken ends the wait of a caller that took the signal of s.ch: the
// answer, or, when the client's watch of the call's ctx canceled the call
// (ctxwatch.go; a call that shares its Done with the watched ctx may be
// canceled so even when it waited in a select), ctx's error.
func (c *Client) taken(ctx context.Context, s *slot, resp []byte) ([]byte, error) {
	if c.settle(ctx, s) {
		return resp, ctx.Err()
	}
	return c.answer(ctx, s, resp)
}

// settle is for a caller that took the signal of s.ch: when a watch
// canceled the call (ctxwatch.go), it leaves the slot to the late answer
// (abandoned), or frees it when the answer came already, and reports
// true; false when the call was answered (or failed).
func (c *Client) settle(ctx context.Context, s *slot) bool {
	pid := uint64(s.pid) << 32
	switch s.st.Load() {
	case pid | slotCanceled:
		// The server may stop the handler (cancel.go).
		send := sendsCancel(ctx)
		if send {
			s.cancelPid.Store(s.pid) // before the abandon: see cancelSlot
		}
		if s.st.CompareAndSwap(pid|slotCanceled, pid|slotAbandoned) {
			c.abandoned.Add(1)
			if send {
				c.cancelSlot(ctx, s, uint32(pid>>32))
			}
			return true
		}
		// The answer came meanwhile: slotLate.
	case pid | slotLate:
	default:
		return false
	}
	s.cancelPid.Store(0)
	c.release(s)
	return true
}

// answer returns the answer delivered to s, a call made with resp and
// ctx, and frees the slot.
func (c *Client) answer(ctx context.Context, s *slot, resp []byte) ([]byte, error) {
	if s.err != nil || s.status != StatusOK {
		return c.answerFailed(ctx, s, resp)
	}
	// drop and push by hand: s.err is nil already, and nothing of the
	// failed case's stays live across push's loop.
	out := s.resp
	s.resp = nil
	if s.rmd != nil {
		s.rmd = nil
	}
	c.push(s)
	return out, nil
}

// answerFailed is answer for a call that failed (s.err) or whose answer
// is not StatusOK.
func (c *Client) answerFailed(ctx context.Context, s *slot, resp []byte) ([]byte, error) {
	out, status, notRun, errp := s.resp, s.status, s.notRun, s.err
	zipped := s.zipped
	s.drop() // c.release(s) by hand (see drop)
	c.push(s)
	if errp != nil {
		return resp, *errp
	}
	if status != StatusOK {
		if zipped && notRun && status == StatusBadRequest {
			// The server does not take compressed requests (see
			// waitZipped): the next payloads go plain until one says it
			// does.
			c.zipReq.Store(false)
		}
		return out, answerError(ctx, status, out[len(resp):], notRun)
	}
	return out, nil
}

// abandon gives up the call waiting in s: the slot is no longer the
// caller's (the read loop frees it when the late answer comes). false:
// the answer is being or was delivered, and the caller must take it from
// s.ch.
func (c *Client) abandon(s *slot) bool {
	if w := uint64(s.pid) << 32; s.st.CompareAndSwap(w|slotWaiting, w|slotAbandoned) {
		c.abandoned.Add(1)
		return true
	}
	return false
}

// appendCall appends the request envelope of a call: the canonical
// envelope, plus the timeout of ctx's deadline and the cap and metadata
// of ctx (WithCap, WithMetadata) when it has them.
func appendCall(dst []byte, ctx context.Context, method, pid, target uint32, payload []byte) []byte {
	var r wire.Request
	callRequest(&r, ctx, ctx.Done(), method, target, payload)
	r.PromiseID = pid
	return wire.AppendRequest(dst, &r)
}

// callRequest sets *r to the request envelope of a call without its
// promise id: payload, and what ctx adds (see appendCall); done is
// ctx.Done(). send builds it before it takes the outbox's mutex, which
// every caller of the connection waits for. It reports false when ctx's
// deadline has passed (see timeoutMicros): the caller does not send the
// call (*r is complete all the same, with a timeout of 1 µs). rmd is the
// receiver of the call's response metadata ([WithResponseMetadata]), nil
// when ctx asks for none; callRequest leaves it as it is (a call's send
// empties it, a stream's open under its owner's lock: claimReceiver).
func callRequest(r *wire.Request, ctx context.Context, done <-chan struct{}, method, target uint32, payload []byte) (rmd *Metadata, ok bool) {
	r.Method, r.Target, r.Payload = method, target, payload
	ok = true
	// A ctx that can never be canceled (Done nil) has no deadline: its
	// chain of parents is not walked for one.
	if done != nil {
		if dl, has := ctx.Deadline(); has {
			var passed bool
			r.Timeout, passed = timeoutMicros(dl)
			ok = !passed
		}
	}
	// wireFrom's own first look, here: a load instead of a call (it is
	// not inlined) while no ctx can carry anything.
	if wireInUse.Load() {
		if w := wireFrom(ctx); w != nil {
			r.Cap, r.Metadata = w.cap, w.md
			rmd = w.rmd
		}
	}
	return rmd, ok
}

// acquire takes a slot for a call whose answer is to be appended to resp
// and which ends when done (a ctx's Done) is closed: the client's watch
// of a ctx with that Done may cancel it (ctxwatch.go); nil: it may not.
// rmd receives the answer's response metadata, nil for none.
// On a closed connection it fails with notSent's error. It is called with
// c.out.mu held (it pops under it, see Client.free), and returns with it
// held, unless it fails: the request is queued under the same hold.
func (c *Client) acquire(resp []byte, done <-chan struct{}, rmd *Metadata) (*slot, error) {
	s := c.popLocked()
	if s == nil {
		// A new slot, under c.mu, which is not taken under c.out.mu (fail
		// takes them the other way round).
		c.out.mu.Unlock()
		c.mu.Lock()
		if c.closed {
			err := c.notSent(c.err)
			c.mu.Unlock()
			return nil, err
		}
		if len(c.slots) >= c.opts.maxPending {
			c.mu.Unlock()
			if a := int(c.abandoned.Load()); a > 0 && a >= c.opts.maxPending/2 {
				// Half the table waits for answers that do not come
				// while others do: give the connection up (Closed turns
				// true, rpc/cluster redials).
				c.fail(errAbandonedFull)
			}
			return nil, ErrTooManyPending
		}
		s = new(slot)
		s.pid, s.ch = uint32(len(c.slots))+1, make(chan struct{}, 1)
		c.slots = append(c.slots, s)
		table := c.slots
		c.table.Store(&table)
		c.mu.Unlock()
		c.out.mu.Lock()
	}
	s.use(resp)
	if s.rmd != rmd {
		s.rmd = rmd
	}
	if done != nil {
		// Before the call is waiting: a watch that sees it waiting
		// reads its Done (see ctxEnded).
		id := chanID(done)
		// Stored only when it changes: a caller that gets its own slot
		// back (the free stack is LIFO) with the same ctx, or calls that
		// share a ctx, save a locked instruction.
		if s.sameDone = s.doneID.Load() == id; !s.sameDone {
			s.doneID.Store(id)
		}
		s.donePid.Store(s.pid)
	} else if s.donePid.Load() != 0 {
		// No watch may cancel this call, not even after 65,536 uses of
		// the slot, when its pid comes round to an old call's (0 is no
		// pid).
		s.donePid.Store(0)
	}
	w := uint64(s.pid) << 32
	s.st.Store(w | slotWaiting)
	if c.broken.Load() {
		c.out.mu.Unlock()
		// fail may have passed this slot before it was waiting: give it
		// back, or take the signal fail (or a watch's cancel) sent
		// meanwhile.
		c.unsend(s)
		c.mu.Lock()
		err := c.notSent(c.err)
		c.mu.Unlock()
		return nil, err
	}
	return s, nil
}

// use starts the next use of slot s, whose answer is to be appended to
// resp: its pid (see slotLine).
func (s *slot) use(resp []byte) {
	g := s.gen // loaded once: the store of pid may alias it, for the compiler
	s.pid = uint32(g)<<16 | s.pid&0xFFFF
	if s.gen = g + 1; s.gen == 0 {
		s.epoch.Add(1) // the next use's pid is one 65,536 uses old
	}
	s.resp = resp
}

// notSent is the error of a call (or stream) refused, before anything of
// it was written, because the connection closed with err: ErrGoAway when
// the server told us to go away before it closed (the call did not run
// and may go to another server; a caller that looked for the go-away
// just before it came, and met the close just after, must not get a
// plain ErrClosed, which rpc/cluster does not send elsewhere), else err.
func (c *Client) notSent(err error) error {
	if c.goAway.Load() {
		return ErrGoAway
	}
	return err
}

// popLocked takes an idle slot off the free stack; nil when it is empty.
// The caller holds c.out.mu, which makes it the only popper (see
// Client.free).
func (c *Client) popLocked() *slot {
	for {
		h := c.free.Load()
		i := h & 0xFFFF
		if i == 0 {
			return nil
		}
		s := (*c.table.Load())[i-1]
		// The new head: the slot below s in place of s, the count (bits
		// 16–31, at least 1 here) one less, in one sum. The
		// compare-and-swap fails only on a push meanwhile.
		if c.free.CompareAndSwap(h, h-i+uint64(s.next)-1<<16) {
			return s
		}
	}
}

// push puts a slot on the free stack: it links the slot to the one below
// (a plain store: no popper reads it before the compare-and-swap that puts
// it on top). The slot's state stays as its use left it (see slotIdle).
func (c *Client) push(s *slot) {
	top := uint64(s.pid & 0xFFFF)
	for {
		h := c.free.Load()
		i := h & 0xFFFF
		s.next = uint16(i)
		// The new head: s in place of the top i, the count (bits 16–31,
		// at most the table's length, under 65,536, once s is on) one
		// more, in one sum.
		if c.free.CompareAndSwap(h, h-i+top+1<<16) {
			return
		}
	}
}

// busySlots returns the number of slots off the free stack: calls
// between acquire and release, and abandoned calls waiting for their
// late answers. One load of the free stack's head (and of the table,
// which rarely changes); a caller that pops or pushes at the same time
// may or may not be counted.
func (c *Client) busySlots() int {
	t := c.table.Load()
	if t == nil {
		return 0
	}
	return len(*t) - int(c.free.Load()>>16&0xFFFF)
}

// release makes s idle and puts it on the free stack. It first drops
// what the slot held of its last call: its caller's buffer, metadata
// receiver and error, which an idle slot would otherwise keep alive (for
// the garbage collector) until its next use. rmd is written only when it
// was set: it shares a cache line with what acquire reads anyway, and a
// call without response metadata leaves the line as it found it.
func (c *Client) release(s *slot) {
	s.drop()
	c.push(s)
}

// drop is release's first half: the slot lets go of its last call's
// buffer, error and metadata receiver. answer calls it and push itself:
// push is inlined there, release (too large) would be a call more.
func (s *slot) drop() {
	s.resp, s.err = nil, nil
	if s.rmd != nil {
		s.rmd = nil
	}
}

// unsend gives back the slot of a call that was not written, idle.
func (c *Client) unsend(s *slot) {
	if w := uint64(s.pid) << 32; !s.st.CompareAndSwap(w|slotWaiting, w|slotIdle) {
		<-s.ch // failed by fail(), or canceled by a watch, meanwhile
		// Idle again: no answer comes for a call not written, and a
		// slot on the free stack keeps its state (see slotIdle), which
		// must not say canceled there (pending, cancelAnnounced). A
		// fail meanwhile may move a canceled slot to late: it then
		// finds it idle and leaves it.
		s.st.Store(w | slotIdle)
	}
	c.release(s)
}

// deliverErr fails the call waiting for pid with err (an answer that did
// not parse); see readFrames' delivery of an answer.
func (c *Client) deliverErr(pid uint32, err error) {
	if s := c.claim(pid); s != nil {
		s.err = &err
		s.ch <- struct{}{}
	}
}

// claim returns the slot of the call waiting for pid, now delivered to;
// nil when no call waits for pid (the slot of an abandoned call is freed).
func (c *Client) claim(pid uint32) *slot {
	idx := int(pid&0xFFFF) - 1
	table := c.table.Load()
	if table == nil || idx < 0 || idx >= len(*table) {
		return nil
	}
	s := (*table)[idx]
	w := uint64(pid) << 32
	if s.st.CompareAndSwap(w|slotWaiting, w|slotDelivered) {
		return s
	}
	return c.claimSlot(s, pid)
}

// claimSlot is claim for pid's slot s, whose state was not pid's
// waiting call a moment ago (abandoned, canceled, another use's, or a
// compare-and-swap that lost to a change).
func (c *Client) claimSlot(s *slot, pid uint32) *slot {
	w := uint64(pid) << 32
	for {
		switch v := s.st.Load(); v {
		case w | slotWaiting:
			if s.st.CompareAndSwap(v, w|slotDelivered) {
				return s
			}
		case w | slotAbandoned:
			if s.st.CompareAndSwap(v, w|slotIdle) {
				c.abandoned.Add(-1)
				s.cancelPid.Store(0)
				c.release(s)
				return nil
			}
		case w | slotCanceled:
			// Canceled by a watch, its caller not yet gone: the caller
			// frees the slot (settle). A caller that goes meanwhile
			// leaves it abandoned: the next turn frees it.
			if s.st.CompareAndSwap(v, w|slotLate) {
				return nil
			}
		default:
			return nil // not pid's call, or delivered
		}
	}
}

// readLoop reads the connection's frames until it fails (readFrames).
// An observer that calls runtime.Goexit on it (a stream observer told of
// a stream's end, which the read loop reports when the server's end
// comes) ends the goroutine: the connection is then closed, its calls and
// streams fail, and the exit is logged (closeIfReadLoopExited), where it
// would otherwise be left open and unread, its calls waiting for ever.
func (c *Client) readLoop() {
	defer close(c.readDone)
	returned := false
	defer c.closeIfReadLoopExited(&returned)
	c.readFrames()
	returned = true
}

// closeIfReadLoopExited, deferred by readLoop, fails the client unless
// the read loop returned (*returned): runtime.Goexit ended it.
func (c *Client) closeIfReadLoopExited(returned *bool) {
	if *returned {
		return
	}
	slog.Default().Error("rpc: stream observer called runtime.Goexit on the client's read loop; closing the connection",
		"remote", addrString(c.peer))
	c.fail(errReadLoopExited)
}

// addrString is a's text, "" for nil (a wrapper's RemoteAddr may be
// nil).
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// errReadLoopExited is why a client closes whose read loop an observer
// ended with runtime.Goexit (see readLoop).
var errReadLoopExited = errors.New("rpc: the stream observer called runtime.Goexit on the client's read loop")

// readFrames is the read loop's work: it reads and handles frames until
// the connection fails, and fails the client then.
func (c *Client) readFrames() {
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc) {
		return
	}
	for {
		kind, p, err := c.r.Next()
		if err != nil {
			if tl, ok := err.(*frame.TooLargeError); ok {
				if c.oversized(tl, p) {
					continue // read past, failing its call or stream alone (oversize.go)
				}
				err = unrefusable(tl, "client")
			}
			if werr := c.out.failure(); werr != nil {
				err = werr // the write side closed the connection: say why
			} else if errors.Is(err, frame.ErrEmptyFrame) || errors.Is(err, frame.ErrForeignProtocol) {
				// Bytes that are no frame stream: the peer's fault.
				err = fmt.Errorf("%w: %w", ErrProtocol, err)
			} else if c.goAway.Load() {
				// The server told us to go away and then closed the
				// connection: the calls and streams still pending were
				// cut by it, not lost to the network. Their error says
				// so (and still matches io.EOF, a reset...).
				err = fmt.Errorf("%w after the server's go-away (it cut what was still running: its grace for them ended, rpc.WithMaxConnectionAge or its Shutdown's ctx)", err)
			}
			c.fail(err)
			return
		}
		switch kind {
		case wire.KindResponse:
			var r wire.Response // a new one each answer: the plain parse sets three fields
			var err error       // the canonical layout into r's fields directly, else the general parse
			var plain bool
			if r.Status, r.PromiseID, r.Body, plain = wire.ParsePlainResponse(p); !plain {
				err = wire.ParseResponseTo(&r, p)
			}
			if err != nil {
				var ee *wire.EnvelopeError
				if errors.As(err, &ee) && ee.HasPromise {
					c.deliverErr(ee.PromiseID, err)
					continue
				}
				c.fail(fmt.Errorf("%w: %w", ErrProtocol, err))
				return
			}
			if (r.Deflated || r.TakesDeflate) && c.deliverFlagged(&r, frameHeader+len(p)) { // compress.go
				continue
			}
			// The delivery of the answer, here in the loop (a function
			// of its own, not inlined, cost a call per answer). It takes
			// no lock on the way to a waiting call: the slot's state word
			// names the promise id, so one compare-and-swap both matches
			// the answer to the slot's current use and claims it (claim's
			// first one; the channel orders the writes that follow
			// before the caller's reads). An answer for an abandoned call
			// frees its slot, one for an unknown pid is dropped
			// (claimSlot). The response metadata goes to the call's
			// receiver when it has one (takeMetadata).
			t := c.table.Load()
			i := uint(r.PromiseID&0xFFFF) - 1
			if t == nil || i >= uint(len(*t)) {
				continue // no such slot (0 included: i wraps)
			}
			s := (*t)[i]
			if w := uint64(r.PromiseID) << 32; !s.st.CompareAndSwap(w|slotWaiting, w|slotDelivered) {
				if s = c.claimSlot(s, r.PromiseID); s == nil {
					continue
				}
			}
			s.resp = append(s.resp, r.Body...)
			s.status, s.notRun = r.Status, r.NotRun
			if len(r.Metadata) > 0 && s.rmd != nil {
				c.takeMetadata(s, r.Metadata)
			}
			s.ch <- struct{}{}
		case wire.KindGoAway:
			w := c.out.lock()
			first := !c.goAway.Swap(true)
			var err error
			if first {
				// Acknowledge: no request of ours follows this frame.
				err = w.WriteFrame(wire.KindGoAway, nil)
			}
			// The acknowledgement leaves from a goroutine of its own: the
			// server's read loop may be writing the answers it owes right
			// now, and over a transport with no room (net.Pipe; a socket
			// or an rpctest.Pipe whose buffer is full) a read loop that
			// waited for its own write would never read that one, and
			// both would wait until the write timeout broke the
			// connection.
			if lead := c.out.unlock(); lead || err != nil {
				go func() {
					if err := c.out.flushIf(lead, err); err != nil {
						c.fail(err)
					}
				}()
			}
			c.noteClosing()
		case wire.KindPing:
			if !c.replies(kind, p) {
				return
			}
		case wire.KindRequest:
			// The connection is symmetric, but a Client serves nothing.
			if !c.replies(kind, p) {
				return
			}
		case wire.KindStreamMsg:
			c.streams.canonicalEvidence()
			// A full stream buffer (a server that ignores our window: a
			// canonical one) holds the read loop until Recv makes room.
			c.streams.onMsg(p, true)
		case wire.KindStreamEnd:
			c.streams.canonicalEvidence()
			c.streams.onClientEnd(p)
		case wire.KindStreamWindow:
			c.streams.onWindow(p)
		case wire.KindStreamNotRun:
			c.streams.onClientNotRun(p)
		case wire.KindStreamTrailer:
			c.streams.onTrailer(p)
		case wire.KindCancel:
			c.cancelAnnounced(p)
			// A client serves no streams: a peer's open (kind 3) is
			// dropped, as the canonical runtime drops an open no handler
			// takes.
		}
	}
}

// replies answers a ping (kind, payload p) with a pong, or a request
// with 404 "no such method" (a client serves nothing; 400 and what is
// wrong for a malformed one that names its promise id), and so the pings
// and requests buffered right behind it, then writes the answers at
// once: a peer's flood of pings costs a write per read, not one per ping.
// The answers go through begin: a peer that does not read them meets the
// queue bound (the read loop waits).
// It reports false when it closed the client (a protocol error, a write
// that failed).
func (c *Client) replies(kind byte, p []byte) bool {
	lead := false
	for {
		var buf []byte
		if kind == wire.KindPing {
			if len(p) > maxPingPayload {
				c.fail(fmt.Errorf("%w: ping payload of %d bytes", ErrProtocol, len(p)))
				return false
			}
			buf = append(c.out.begin(wire.KindPong), p...)
		} else {
			// The bodies are those a Server answers with (and, for 404,
			// the canonical runtime): "no such method", or what is
			// wrong with the envelope.
			req, err := wire.ParseRequest(p)
			status, text := uint32(StatusNotFound), NoSuchMethod
			if err != nil {
				var ee *wire.EnvelopeError
				if !errors.As(err, &ee) || !ee.HasPromise {
					c.fail(fmt.Errorf("%w: %w", ErrProtocol, err))
					return false
				}
				req.PromiseID, status, text = ee.PromiseID, StatusBadRequest, ee.Reason
			}
			buf = wire.AppendResponseHeader(c.out.begin(wire.KindResponse), status, req.PromiseID, len(text))
			buf = append(buf, text...)
		}
		l, err := c.out.end(buf)
		if err != nil {
			c.fail(err)
			return false
		}
		lead = lead || l
		// The next frame, if it is buffered whole and one to answer too,
		// joins this write. (While the read loop holds the flusher's
		// role, callers' requests wait for this write: it comes once the
		// frames read are answered, without a wait for the socket.)
		if k, ok := c.r.PeekKind(); !ok || k != wire.KindPing && k != wire.KindRequest {
			break
		}
		if kind, p, err = c.r.Next(); err != nil {
			// Not expected (the frame is buffered whole): as readLoop.
			c.fail(err)
			return false
		}
	}
	if err := c.out.flushIf(lead, nil); err != nil {
		c.fail(err)
		return false
	}
	return true
}

// handshake runs the TLS handshake of a client NewClient made over a
// connection whose handshake has not run (Dial's has: nothing to do),
// bounded by the shorter of the write and answer timeouts that are set,
// and reports whether it succeeded; when not, the client failed, saying
// so. A call's
// write waits for the handshake (crypto/tls runs one at a time): without
// the bound, a peer that took the ClientHello and never answered made
// the calls fail by the write timeout's last resort, a write timeout
// after the beat's past write deadline (which cannot end a wait for the
// handshake), as a peer that "does not read". The client fails before
// the connection is closed, so that no write the close ends reports
// first.
//
// (Not ConnectionState first, to skip a handshake done: it waits for a
// handshake under way, which a call's write may have begun, and the
// bound would not be armed meanwhile. Handshake returns at once when it
// is done.)
func (c *Client) handshake(tc *tls.Conn) bool {
	d := time.Duration(0)
	for _, t := range [2]time.Duration{c.opts.writeTimeout, c.opts.answerTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	if d > 0 {
		t := time.AfterFunc(d, func() {
			c.fail(fmt.Errorf("tls handshake not done within %v (the shorter of WithWriteTimeout and WithAnswerTimeout)", d))
		})
		defer t.Stop()
	}
	if err := tc.Handshake(); err != nil {
		c.fail(fmt.Errorf("tls handshake: %w", err))
		return false
	}
	return true
}

// fail closes the connection once and fails every pending call with an
// error matching ErrClosed that wraps cause (see closedBy).
func (c *Client) fail(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	err := closedBy(cause)
	c.closed, c.err = true, err
	errp := &err // what the pending calls fail with
	c.broken.Store(true)
	c.stopWatch()
	if c.beatE != nil {
		beats.leave(c.beatE)
	}
	for _, s := range c.slots {
		c.failSlot(s, errp)
	}
	c.mu.Unlock()
	c.noteClosing()
	c.out.shut(err)
	// The socket is closed last, in a goroutine of its own: a Close may
	// block (a TLS connection sends its close-notify alert, with a 5 s
	// deadline, when no write is under way; a wrapper may hold one lock
	// over Write and Close), and neither the pending calls, nor the
	// calls that find the client closed, nor the goroutines waiting for
	// room in the outbox, nor the caller whose write failed wait for it.
	// (Close waits for it: the read loop ends with it.) Deferred: a
	// stream observer that calls runtime.Goexit as closeAll reports a
	// stream's end ends this goroutine, and the socket closes all the
	// same.
	defer func() { go c.nc.Close() }()
	c.streams.closeAll(err)
}

// failSlot ends the use of s for a client that closed: a waiting call
// fails with *errp; an abandoned one's slot, whose late answer will not
// come, is freed; a call canceled by a watch, whose caller has not yet
// woken, is left to its caller to free (slotLate, see settle). It
// retries on the state it finds: the caller (abandon, settle) or the
// watch may move the slot meanwhile. Called by fail, with c.mu held.
func (c *Client) failSlot(s *slot, errp *error) {
	for {
		v := s.st.Load()
		w := v &^ 0xFFFFFFFF
		switch v & slotStateMask {
		case slotWaiting:
			if s.st.CompareAndSwap(v, w|slotDelivered) {
				s.err = errp
				s.ch <- struct{}{}
				return
			}
		case slotAbandoned:
			if s.st.CompareAndSwap(v, w|slotIdle) {
				c.abandoned.Add(-1)
				s.cancelPid.Store(0)
				c.release(s)
				return
			}
		case slotCanceled:
			if s.st.CompareAndSwap(v, w|slotLate) {
				return
			}
		default:
			return // idle, delivered, or late: nothing is owed
		}
	}
}

// check is the answer check, run by the beat every answerTimeout/4: a
// client that had calls outstanding at five checks in a row (four periods,
// one answer timeout) and received no sign of life since the first of
// them closes the connection. A sign of life is a whole frame (an answer,
// a pong, any frame), or, within one period, bytes at minAnswerRate or
// faster (a large answer arriving slowly): a server that trickles a byte
// now and then, never finishing a frame, is not alive. What it has to
// write or close runs in a goroutine of its own: the beat does not wait
// (see beater). A read loop that waits for room in a stream the
// application does not read (see Stream.put) receives nothing meanwhile,
// through no fault of the server's: that time is not counted.
func (c *Client) check() {
	rx, framed := c.r.Received(), c.r.Framed()
	period := max(c.opts.answerTimeout/4, 1)
	life := framed != c.lastFramed || rx-c.lastRx >= minAnswerBytes(period)
	c.lastRx, c.lastFramed = rx, framed
	if life || !c.pending() || c.streams.stalling.Load() > 0 {
		c.quiet = 0
	} else if c.quiet++; c.quiet == 5 {
		go c.fail(errNoAnswer)
	} else if c.quiet == 2 {
		// Half the timeout without a sign of life: ask a zapcodec server
		// for one (a canonical one ignores the frame).
		go c.ping()
	}
}

// minAnswerRate is the least rate, in bytes per second, at which bytes
// that end no frame count as a sign of life for the answer check (see
// check): a large answer arriving at it or faster keeps its connection,
// as a frame sent to a server at WithMinReadRate's default earns more
// time. 16 KiB/s.
const minAnswerRate = DefaultMinReadRate

// minAnswerBytes is the number of bytes that count as life over a period
// of the answer check: minAnswerRate for that long, at least one.
func minAnswerBytes(period time.Duration) uint64 {
	n := uint64(period.Seconds() * minAnswerRate)
	return max(n, 1)
}

// pending reports whether a call waits for its answer, abandoned ones
// included (WithAnswerTimeout). The answer check asks it every quarter of
// the answer timeout, when no byte came since the last: a slot off the
// free stack is not enough, since a promise's call that has its answer
// holds its slot until Wait or Release (a caller may take its time), so
// the slots are looked at then.
func (c *Client) pending() bool {
	if c.busySlots() == 0 {
		return false
	}
	t := c.table.Load()
	if t == nil {
		return false
	}
	for _, s := range *t {
		switch s.st.Load() & slotStateMask {
		case slotWaiting, slotAbandoned, slotCanceled:
			// slotCanceled: the ctx ended, the answer is still owed
			// (the slot turns abandoned as its caller leaves).
			return true
		}
	}
	return false
}

// active returns the number of calls between acquire and release: the
// slots off the free stack less the abandoned ones; see Pending.
func (c *Client) active() int { return max(c.busySlots()-int(c.abandoned.Load()), 0) }

// ping sends a wire.KindPing frame; a failed write closes the connection.
func (c *Client) ping() {
	err := c.out.lock().WriteFrame(wire.KindPing, nil)
	err = c.out.flushIf(c.out.unlock(), err)
	if err != nil {
		c.fail(err)
	}
}

// Close closes the connection; pending calls fail with ErrClosed. It
// waits for the read loop to end.
func (c *Client) Close() error {
	c.fail(ErrClosed)
	<-c.readDone
	return nil
}

// Draining reports whether the server sent a go-away: new calls fail fast
// with ErrGoAway.
func (c *Client) Draining() bool { return c.goAway.Load() }

// Closed reports whether the connection is closed or broken, including
// closed by the client itself: a write that made no progress for the write
// timeout, no sign of life (a whole frame) for the answer timeout while
// calls were outstanding, or a table of pending calls full of abandoned
// ones.
// rpc/cluster replaces a closed client with a new connection.
func (c *Client) Closed() bool { return c.broken.Load() }
