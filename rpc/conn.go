package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/frame"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// serverConn is one accepted connection: a read loop (serve) that parses
// requests and hands them to workers, and an outbox that workers append
// answers to: answers that are ready together leave in one write.
type serverConn struct {
	s  *Server
	nc net.Conn
	r  *frame.Reader

	out outbox // answers and go-away; the last writer in line flushes

	streams streamSet // stream.go

	done chan struct{} // closed by close

	// ctx is the handlers' context: derived from the listener's base
	// context (WithBaseContext), canceled by close.
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool
	// wdListed: c is on the watchdog's list (set under s.wdMu; see
	// Server.watch). Beside closed, in what would be padding.
	wdListed atomic.Bool
	// tlsState is the TLS handshake's state (PeerFrom), set by serve
	// before the read loop starts; nil on a plain connection.
	tlsState *tls.ConnectionState

	// free holds the jobs not in use (see jobs.go); nJobs (role holder
	// only) counts the jobs the connection holds, at most the in-flight
	// limit.
	free  jobFree
	nJobs int
	// jobs (role holder only) heads the list (job.jnext) of the jobs the
	// connection holds: every one until the peer first asks about
	// cancels or sends one (cx), changed only as jobs are taken from
	// and given back to the pool, not per call; after it, those not yet
	// in a bucket of cx.
	jobs *job
	// cx (role holder only) is nil until the peer asks whether the
	// server takes cancels, or sends one; from then on the read loop
	// keeps the jobs in its buckets, by the promise id of their calls, so
	// that a cancel looks at one bucket, not at every job (cancel.go).
	cx *cancelIndex
	// trimAt (role holder only, monoNow) is when the jobs that sat unused
	// in the free list are given back while the connection holds more
	// than one (trimJobs); 0 while it holds one or none.
	trimAt int64
	// stall (role holder only) bounds the read loop's waits for room in a
	// full stream buffer (boundStall): made at the first such wait, reset
	// at each one after.
	stall *time.Timer
	// slotProbe (role holder only) wakes the read loop's wait for an
	// in-flight slot each read timeout to look for a peer that left
	// (probeWait): made at the first such wait, reset at each one after.
	slotProbe *time.Timer

	inflight   atomic.Int32 // requests being parsed, run or answered
	goAwaySent atomic.Bool
	acked      atomic.Bool  // peer answered our go-away: no more calls follow
	eof        atomic.Bool  // the peer sent its last frame
	quietSince atomic.Int64 // monoNow: go-away sent, or in-flight fell to 0 after a call that ran

	promises *promiseTable // nil unless WithPipelining

	// Calls whose ctx Done was armed for their deadline (deadline.go).
	dmu       sync.Mutex
	armedJobs []*job
	armDead   bool // the connection's context is done
	// rdPast belongs to the read deadlines below (under rdMu), here in
	// what would be padding: the deadline on nc may have passed (it
	// fired, or pokeRead set one in the past).
	rdPast bool
	// zipTold: an answer told the client that this server takes
	// compressed requests (compress.go); here, in what would be padding.
	zipTold atomic.Bool
	stopArm func() bool // the context.AfterFunc that runs fireArmed

	// The read loop is a role, not a goroutine: it runs calls inline and
	// the server's watchdog hands it to a worker when an inline handler
	// does not return promptly (see runInline). inl is the sequence number
	// of the inline call running now, 0 when none, readerTaken after the
	// watchdog took the role away from it.
	inl atomic.Uint64
	// inlJob is the job of the inline call c.inl names (and, after it, of
	// the last one): stored by the role holder before c.inl, and only
	// when it changes (most calls run on the read loop's spare, the job
	// of the call before). An inline call keeps job.live at 0: while
	// its handler runs, the read loop reads no cancel, and its ctx tells
	// that it runs by c.inl and inlJob (job.running); the watchdog sets
	// job.live as it takes the call over, so that a cancel read by the
	// new read loop finds it (scanLocked). Two locked instructions a
	// call fewer than storing and clearing live for it.
	inlJob atomic.Pointer[job]
	seq    uint64  // role holder: last inline sequence number used
	ans    *outBuf // role holder: answers of inline calls not yet in out (inlineAnswer); nil none
	ansB   []byte  // role holder: ans's bytes while it is the read loop's (ans.B is stale)
	// hs is the role holder's copy of the server's handler table, taken
	// when the read loop starts and after each read from the socket (a
	// frame sent after Handle returned is read after it): a call's
	// lookup loads from a line the read loop owns instead of following
	// three dependent loads through the Server.
	hs    []Handler
	owed  bool // role holder: answers wait in out for its flush
	spill bool // role holder: dispatch calls to workers until the next wait
	batch bool // role holder: holds one unit of inflight for the calls it answers
	// batchRan (role holder): a call of the batch was taken on, not
	// refused after the go-away; only such a batch's end restarts the
	// go-away's quiet time (see doneOne).
	batchRan bool
	active   bool  // role holder: a request was read since the last wait (readtimeout.go)
	wdIdle   uint8 // watchdog only, under s.wdMu: scans in a row without an inline call
	local    connStats
	spare    *job   // role holder: a free job kept out of free
	wdSeen   uint64 // watchdog only: inl at its previous scan
	// ran is seq as of the read loop's latest wait (published by the role
	// holder only when it moved, ranPub): a scan that finds it moved knows
	// inline calls ran since the scan before, though it saw none running,
	// and keeps the connection listed (wdRan: the scan's last look).
	ran    atomic.Uint64
	ranPub uint64 // role holder
	wdRan  uint64 // watchdog only, under s.wdMu

	// Read deadlines (see readtimeout.go), role holder only but for
	// those under rdMu, which the watchdog's scans use too. Times are
	// monoNow values.
	rdMu      sync.Mutex
	armed     int64        // under rdMu: the read deadline set on nc, 0 none
	rdLimit   atomic.Int64 // written under rdMu: when the read loop's wait must end, 0 never
	readPokes atomic.Int64 // waits ended by pokeRead (tests)
	// writePokes counts the writes pokeWrite ended (tests; writewatch.go).
	writePokes atomic.Int64
	// wdUnlists counts the times the watchdog took c off its list (tests).
	// It and roomWaits are 32 bits (tests look for a change, and a wrap
	// after 2^31 harms nothing): the 8 bytes they gave up hold inlJob
	// within the 1,024-byte size class (TestServerConnSizeClass).
	wdUnlists atomic.Int32
	// roomWaits counts the read loop's waits for room in the outbox
	// before it handed a call to a worker (answerRoom; tests).
	roomWaits atomic.Int32
	// A goroutine sets the past read (write) deadline of a scan's
	// pokeRead (pokeWrite) now; wClosing: pokeWrite closed the connection,
	// the write deadline having failed to end a write. wPokedAt: when the
	// goroutine of the latest pokeWrite began to set its deadline (monoNow).
	rPoking, wPoking, wClosing atomic.Bool
	// handshake is the state of the TLS handshake (hsNone on a plain
	// connection): a go-away sent before it finishes is written by serve
	// once it has (see goAway). Here, in what would be padding.
	handshake atomic.Uint32
	wPokedAt  atomic.Int64
	// beatE is c's membership of the beat, joined at its first write the
	// scans do not watch (joinBeat), nil before and once c is closed.
	beatE atomic.Pointer[beatEntry]

	frameStart int64 // when the loop first waited inside the current frame, 0 between frames
	waitStart  int64 // when the current wait between frames began, 0 none
	idleSince  int64 // when the loop last waited after reading a request
	// away is the read loop's own go-away (readtimeout.go): once the idle
	// timeout or the connection's age (WithMaxConnectionAge) sent it, the
	// time it did (> 0); before, minus the time the age's is due (< 0),
	// or 0 without an age limit.
	away int64

	// rjob is dispatched to a worker to take over the read loop; made at
	// the connection's first take-over (watchdog only, under s.wdMu): a
	// job is a quarter of the connection's struct, and most connections
	// never need it.
	rjob *job

	// ansBudget is the connection's answer budget, made at its first
	// reservation (answerbudget.go).
	ansBudget atomic.Pointer[answerBudget]
}

const readerTaken = ^uint64(0)

// takingOver is c.inl while the watchdog takes over the inline call it
// held (scanLocked): between its compare-and-swap and its store of
// readerTaken it sets the call's live word. The goroutine whose
// compare-and-swap fails meanwhile waits for readerTaken (waitTaken)
// before it finishes the call, so that its finish clears the live word
// after that store; a ctx of the call (job.running) counts it running.
const takingOver = ^uint64(0) - 1

// connStats are counters the read loop keeps without atomics and adds to
// the server's at its flush points (before its answers leave). The bytes
// written are counted by the outbox as it writes them (outbox.sent).
type connStats struct {
	calls, bytesIn uint64
	byStatus       [6]uint64
}

func (l *connStats) answered(status uint32) { l.byStatus[statusIndex(status)]++ }

// publish adds the read loop's counters to the server's.
func (c *serverConn) publish() {
	l, st := &c.local, &c.s.stats
	if l.calls != 0 {
		st.calls.Add(l.calls)
	}
	if l.bytesIn != 0 {
		st.bytesIn.Add(l.bytesIn)
	}
	for i, n := range l.byStatus {
		if n != 0 {
			st.byStatus[i].Add(n)
		}
	}
	*l = connStats{}
}

// flushOwed is the read loop's flush point: it publishes its counters,
// writes the answers it owes and gives back its unit of inflight (the
// calls it answered are done once their answers are written).
func (c *serverConn) flushOwed() error {
	c.publish()
	err := c.moveAnswers()
	if c.owed {
		c.owed = false
		if ferr := c.out.flush(false); err == nil {
			err = ferr
		}
	}
	if c.batch {
		c.batch = false
		ran := c.batchRan
		c.batchRan = false
		c.endUnit(ran)
	}
	return err
}

// hold makes the read loop hold its unit of inflight: the calls it answers
// count as in flight until its next flush point.
func (c *serverConn) hold() {
	if !c.batch {
		c.batch = true
		c.inflight.Add(1)
	}
}

func newServerConn(s *Server, nc net.Conn, base context.Context) *serverConn {
	o := &s.opts
	c := &serverConn{
		s:    s,
		nc:   nc,
		r:    frame.NewReader(nc, o.frame...),
		done: make(chan struct{}),
	}
	c.r.DiscardTooLarge(oversizeHead) // a frame over the maximum fails alone (oversize.go)
	c.free.wake = make(chan struct{}, 1)
	c.ctx, c.cancel = context.WithCancel(base)
	c.out.setup(nc, o.writeTimeout, c.r.MaxFrameSize())
	c.out.wlisted = &c.wdListed // the scans bound its writes while listed (writewatch.go)
	c.out.watchOff = c.joinBeat // the beat backs up the deadlines of the others
	c.out.sent = &s.stats.bytesOut
	c.streams.setup(&c.out, o.streamWindow, o.maxStreams)
	c.streams.sc = c
	c.streams.limit = max(c.streams.window, preHelloWindow)
	if o.pipelining {
		c.promises = newPromiseTable(o.promiseTable)
	}
	if _, ok := nc.(*tls.Conn); ok {
		c.handshake.Store(hsPending)
	}
	return c
}

// close closes the connection once. A non-nil reason is logged and counted
// as a dropped connection. A second call returns at once.
//
// Everything that waits on the connection learns of the close at once,
// and the socket's Close runs in a goroutine of its own: a Close may
// block (a TLS connection sends its close-notify alert, with a 5 s
// deadline, to a peer that may not read; a wrapper may hold one lock over
// Write and Close), and the handlers, streams and appenders, the caller
// of close among them, must not wait for it. The connection leaves the
// server's count (and Shutdown's and Close's wait) once Close has
// returned.
func (c *serverConn) close(reason error) {
	if c.closed.Swap(true) {
		return
	}
	if reason != nil {
		// Logged before the peer can see the close.
		c.s.stats.dropped.Add(1)
		c.s.opts.logger.Warn("rpc: closing connection", "remote", c.remote(), "reason", reason.Error())
	}
	close(c.done)
	c.cancel()
	c.out.shut(ErrClosed)
	if c.promises != nil {
		c.promises.close()
	}
	c.streams.closeAll(ErrClosed)
	if e := c.beatE.Swap(nil); e != nil {
		beats.leave(e)
	}
	go func() {
		c.nc.Close()
		c.s.removeConn(c)
	}()
}

// serve runs the connection: the TLS handshake if any, then the read loop.
func (c *serverConn) serve() {
	o := &c.s.opts
	if o.maxAge > 0 {
		c.away = -(monoNow() + int64(connAge(o.maxAge))) // counted from the accept
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		d := o.readTimeout
		if d <= 0 {
			d = DefaultReadTimeout
		}
		ctx, cancel := context.WithTimeout(c.ctx, d)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			c.close(fmt.Errorf("tls handshake: %w", err))
			return
		}
		st := tc.ConnectionState()
		c.tlsState = &st
		if !c.handshake.CompareAndSwap(hsPending, hsNone) {
			// Shutdown began during the handshake: its go-away leaves
			// now, before any answer.
			c.writeGoAway()
		}
	}
	c.idleSince = monoNow()
	c.serveReads()
}

// serveReads runs the read loop on this goroutine (serve's, or a new one
// after a handler run inline called runtime.Goexit).
func (c *serverConn) serveReads() {
	if !c.readLoop() {
		// The read loop moved to another goroutine while a handler ran
		// here: this goroutine joins the workers.
		c.s.workers.Add(1)
		c.s.worker(nil)
	}
}

// readLoop reads and handles frames while this goroutine holds the read
// loop role. It returns true when the connection is done, false when the
// role was handed to another goroutine.
//
// The read loop role moves between goroutines; its states:
//
//	       accept
//	         |
//	         v
//	+---> READING ----- Next blocks? ----> flush owed answers,
//	|        |                             arm read deadline, block
//	|   request read                            |
//	|        v                                  |
//	|   conn dead or go-away sent? -- yes --> refuse / stop (no handler runs)
//	|        | no                               |
//	|        v                                  |
//	|   INLINE (c.inl = seq) -- handler returns, CAS seq->0 ok --> answer owed
//	|        |                                                      |
//	+--------+------------------------------------------------------+
//	         |
//	watchdog sees the same seq at two scans: CAS seq -> takingOver,
//	sets the call's job.live, stores readerTaken, dispatches c.rjob
//	to a worker
//	         |
//	         v
//	TAKEN: the worker becomes the new READING holder; the old goroutine's
//	CAS fails when its handler returns: it waits for readerTaken
//	(waitTaken), answers like a worker (doneOne) and joins the workers
//	(serve) or goes back to its pool (worker).
//
// Only the role holder touches the fields marked "role holder"; the
// hand-over goes through c.inl (compare-and-swap) and the work channel,
// which order those writes before the new holder's reads.
func (c *serverConn) readLoop() bool {
	var g inlineGuard
	for {
		done, panicked := c.readGuarded(&g)
		if !panicked {
			return done
		}
		// A handler running inline panicked (logged): go on reading.
		if !c.failInline(&g) {
			return false
		}
	}
}

// failInline answers 500 the call g runs inline, whose handler panicked
// or exited, as runInline would have answered it, and reports whether
// this goroutine still holds the read loop role (false: taken over
// meanwhile, the call answered like a worker's).
func (c *serverConn) failInline(g *inlineGuard) bool {
	j, seq := g.j, g.seq
	g.seq = 0
	if !c.inl.CompareAndSwap(seq, 0) {
		c.waitTaken()
		c.finish(j, StatusInternal, nil, false)
		return false
	}
	c.finish(j, StatusInternal, nil, true)
	return true
}

// inlineGuard is what the read loop's goroutine runs inline now: the
// sequence number of the call whose handler runs (0 when none) and its
// job (j is left as it is after the call: the next call is most often the
// same job, the read loop's spare, and a pointer store costs a
// write-barrier check). It is the goroutine's own (a local of readLoop),
// not the connection's: after a take-over, the new read loop has its own.
type inlineGuard struct {
	j   *job
	seq uint64
}

// readGuarded runs the read loop (readFrames) and recovers the panic of a
// handler it runs inline (g.seq set): one deferred recover for the read
// loop's life instead of one per call (which cost some 10 ns a call). A
// panic anywhere else in the read loop is not recovered.
//
// A handler that calls runtime.Goexit ends this goroutine, which nothing
// can stop: its call is answered 500 and a new goroutine takes the read
// loop over, as after a panic.
func (c *serverConn) readGuarded(g *inlineGuard) (done, panicked bool) {
	defer func() {
		if g.seq == 0 {
			return
		}
		j := g.j
		if r := recover(); r != nil {
			c.handlerPanic(j, r)
			panicked = true
			return
		}
		// recover returned nil with a handler running: runtime.Goexit.
		c.handlerExited(j)
		if c.failInline(g) {
			go c.serveReads()
		}
	}()
	return c.readFrames(g), false
}

// readFrames is the read loop proper (see readLoop).
func (c *serverConn) readFrames(g *inlineGuard) bool {
	c.hs = c.s.handlerTable()
	for {
		if c.closed.Load() {
			// Known dead (a write failed, a timeout, Close): the frames
			// still buffered are not run.
			c.flushOwed()
			return true
		}
		read := false // Next (or Wait) may read from the socket
		// A frame buffered whole is taken at once (Ready and Next in one).
		kind, p, ok := c.r.TryNext()
		if !ok && !c.r.Ready() {
			if c.seq != c.ranPub {
				// Before the answers leave: a peer that has them sees
				// it (TestBusyConnStaysListed).
				c.ranPub = c.seq
				c.ran.Store(c.seq)
			}
			// Next is about to block: the answers of the calls run
			// inline so far leave now, in one write.
			if err := c.flushOwed(); err != nil {
				c.close(fmt.Errorf("write: %w", err))
				return true
			}
			c.spill = false
			c.releaseSpare()
			c.s.scanDue(c.armWait()) // one clock read for both
			read = true
		}
		var err error
		if !ok && (c.r.Buffered() == 0 || c.r.Discarding()) && c.s.opts.readTimeout > 0 {
			// Between frames: wait for a frame to begin under the wait's
			// deadline (the idle one on a quiet connection), so that an
			// idle connection is not woken every read timeout; a frame
			// that begins but is not all there gets the frame deadline
			// (armWait, at the top of the loop) for the rest. Inside a
			// frame over the maximum that the Reader reads past
			// (oversize.go), Wait reads the rest of it under its frame
			// deadline and returns once the next frame has begun, which
			// gets a clock of its own.
			past := c.r.Buffered() != 0
			if err = c.r.Wait(); err == nil {
				if past {
					c.frameStart = 0
				}
				if !c.r.Ready() {
					continue
				}
			}
		}
		if !ok && err == nil {
			kind, p, err = c.r.Next()
		}
		if read && err == nil {
			// The frames this Next (or the Wait before it) read may have
			// been sent after a Handle returned: they see its handler.
			c.hs = c.s.handlerTable()
		}
		if err != nil {
			if tl, ok := err.(*frame.TooLargeError); ok {
				// A frame over the maximum, read past: it fails alone
				// (oversize.go).
				if c.oversized(tl, p) {
					if !c.r.Discarding() {
						// Read whole (its rest came with the bytes
						// after it): the next frame, begun or not,
						// gets a clock of its own, as after any frame.
						c.frameStart = 0
					}
					continue
				}
				c.flushOwed()
				return true
			}
			// A broken stream may fail Next at once: answers owed so far
			// still go out (a write error is the read error's business).
			c.flushOwed()
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.closed.Load() {
				if c.deadlineFired() {
					continue
				}
				return true
			}
			switch {
			case err == io.EOF:
				// The peer half-closed (or closed) between frames: answer
				// the calls still running, then close.
				c.eof.Store(true)
				c.streams.readEnded(errPeerClosed)
				if c.inflight.Load() == 0 {
					c.close(nil)
				}
			case c.closed.Load():
				c.close(nil)
			default:
				if werr := c.out.brokenBy(); werr != nil {
					// A write failed and closed the socket (outbox.broke),
					// and the read ended with it, before the writer
					// closed the connection: its error is the reason.
					c.close(fmt.Errorf("write: %w", werr))
				} else if errors.Is(err, net.ErrClosed) {
					c.close(nil)
				} else {
					c.close(fmt.Errorf("read: %w", err))
				}
			}
			return true
		}
		c.frameStart = 0
		c.local.bytesIn += uint64(len(p) + 5)
		switch kind {
		case wire.KindRequest:
			c.active = true
			switch c.request(p, g) {
			case reqClosed:
				c.flushOwed() // gives back the read loop's unit of inflight
				return true
			case reqLost:
				return false
			}
		case wire.KindGoAway:
			// Only an answer to our own go-away is an acknowledgement; a
			// peer's unsolicited kind 6 means nothing to a server.
			if c.goAwaySent.Load() {
				c.acked.Store(true)
				c.flushOwed()
				if c.inflight.Load() == 0 && c.outIdle() {
					c.close(nil)
					return true
				}
			}
		case wire.KindPing:
			// A zapcodec client with calls outstanding checks that we
			// are alive (docs/wire.md §8 extension): echo the payload.
			if len(p) > maxPingPayload {
				c.close(fmt.Errorf("%w: ping payload of %d bytes", ErrProtocol, len(p)))
				return true
			}
			if string(p) == wire.CancelQuestion {
				if c.cx == nil {
					c.indexCancels()
				}
				if !c.announceCancel() {
					return true
				}
			}
			if !c.pong(p) {
				return true
			}
		case wire.KindCancel:
			c.cancelCall(p)
		case wire.KindStreamOpen, wire.KindStreamMsg, wire.KindStreamEnd, wire.KindStreamWindow:
			if !c.streamFrame(kind, p) {
				c.flushOwed()
				return true
			}
		default:
			// Answers and unknown kinds are ignored (docs/wire.md §7: a
			// reader ignores a kind it does not know).
		}
	}
}

// pipeliningOff is the body of the 400 answer to a call with a promise
// target on a server without WithPipelining. It names the option, so that
// the caller who reads it knows which side turns pipelining on.
const pipeliningOff = "promise pipelining is not enabled on this server (rpc.WithPipelining)"

// Results of request.
const (
	reqNext   = iota // go on reading
	reqClosed        // the connection is closed
	reqLost          // the read loop role went to another goroutine
)

// request handles one request frame.
func (c *serverConn) request(p []byte, g *inlineGuard) int {
	s := c.s
	c.local.calls++
	c.hold()
	var req wire.Request
	// The canonical layout into req's fields directly, then a call's with
	// a deadline (PutDeadlineRequestHeader's), else the general parse.
	var err error
	var ok bool
	if req.Method, req.PromiseID, req.Target, req.Payload, ok = wire.ParsePlainRequest(p); !ok {
		if req.Method, req.PromiseID, req.Target, req.Timeout, req.Payload, ok = wire.ParseDeadlineRequest(p); !ok {
			err = wire.ParseRequestTo(&req, p)
		}
	}
	if err != nil {
		var ee *wire.EnvelopeError
		if errors.As(err, &ee) && ee.HasPromise {
			// req holds what the parse read: this promise id, the
			// method and payload when it got that far.
			req.PromiseID = ee.PromiseID
			c.promiseFailed(ee.PromiseID)
			c.answerDirect(&req, StatusBadRequest, ee.Reason, false)
			return reqNext
		}
		c.publish()
		c.close(err)
		return reqClosed
	}
	if c.goAwaySent.Load() {
		// Read after our go-away: refused at once, not run, so the
		// client may send it elsewhere (its peer may not have seen the
		// go-away yet when it sent it).
		c.promiseFailed(req.PromiseID)
		c.refuse(&req)
		return reqNext
	}
	c.batchRan = true
	h := c.handler(req.Method)
	if h == nil {
		c.promiseFailed(req.PromiseID)
		c.answerDirect(&req, StatusNotFound, NoSuchMethod, false)
		return reqNext
	}
	if req.Target != 0 && c.promises == nil {
		c.answerDirect(&req, StatusBadRequest, pipeliningOff, false)
		return reqNext
	}
	if len(req.Metadata) > 0 && !c.checkMetadata(&req) {
		c.promiseFailed(req.PromiseID)
		return reqNext
	}
	var arrived int64 // the deadline counts from here, before any wait for a job
	if req.Timeout != 0 {
		arrived = monoNow()
	}
	j := c.acquire()
	if j == nil {
		return reqClosed
	}
	if req.PayloadDeflated {
		if next := c.inflateRequest(j, &req); next >= 0 {
			return next // answered 400, or closed (compress.go)
		}
	}
	j.h, j.method, j.pid, j.target = h, req.Method, req.PromiseID, req.Target
	if c.cx != nil {
		c.indexJob(j)
	}
	if j.canceled.Load() {
		// A cancel meant for the job's previous call, read as that
		// call ended (cancel.go).
		j.canceled.Store(false)
	}
	if n := len(req.Payload); n <= cap(j.req) {
		// The job's buffer holds it (nearly always): only j.req's length
		// is stored, with no pointer store and its write barrier check.
		j.req = j.req[:n]
		copy(j.req, req.Payload)
	} else {
		j.req = append(j.req[:0], req.Payload...)
		j.undo = true // finishAny drops a buffer above maxKeptBuffer
	}
	if req.Timeout != 0 || len(req.Cap) > 0 || len(req.Metadata) > 0 || req.AcceptDeflate {
		j.setExt(&req, arrived)
	}
	if c.promises != nil || c.spill {
		// Pipelined calls may wait for each other: each runs on a worker.
		// So do the calls read right after the watchdog took the read loop
		// from a slow handler, up to the next wait (a burst of slow calls
		// then starts at once instead of one per watchdog tick or two).
		if !c.answerRoom() {
			if j.reserved != 0 {
				c.releaseAnswer(j) // an inflated request's (compress.go)
			}
			c.spare = j
			return reqClosed
		}
		if c.promises != nil {
			j.pslot, j.pseq = c.promises.record(req.PromiseID)
		}
		// Running, for a cancel and the call's ctx (an inline call
		// tells it by c.inl instead: see inlJob). After setExt: a late
		// Done that sees it sees the call's deadline too.
		j.live.Store(1<<32 | uint64(req.PromiseID))
		c.inflight.Add(1) // the worker's doneOne ends it
		s.dispatch(j)
		return reqNext
	}
	return c.runInline(j, g)
}

// answerRoom is the read loop's backpressure on calls that go to
// workers: while the outbox holds outboxLimit bytes that no write has
// taken (the peer does not read its answers), it waits for room before
// it hands over another call (and reads no more frames meanwhile), as an
// inline call's answer waits for room in moveAnswers. Without it a peer
// that pipelined calls and never read their answers had the read loop go
// on reading up to the in-flight limit: each of up to 256 calls took a
// worker, which ran its handler and then waited, its request and answer
// held, for room in the queue, until the write timeout closed the
// connection. A call the read loop handed over before the queue filled
// still runs (it was taken on). It reports false when the connection
// closed.
func (c *serverConn) answerRoom() bool {
	o := &c.out
	o.mu.Lock()
	full := o.err == nil && o.queued() >= outboxLimit
	o.mu.Unlock()
	if !full {
		return true
	}
	c.roomWaits.Add(1)
	// Answers the read loop owes leave first, and its unit of inflight is
	// given back: the wait may be long (acquire does the same).
	if err := c.flushOwed(); err != nil {
		c.close(fmt.Errorf("write: %w", err))
		return false
	}
	c.hold()
	o.room(noCtx) // the write timeout breaks a peer that takes nothing
	o.mu.Unlock()
	return !c.closed.Load()
}

// promiseFailed records, with pipelining on, a call the read loop
// answered without running it (see promiseTable.recordFailed).
func (c *serverConn) promiseFailed(pid uint32) {
	if c.promises != nil {
		c.promises.recordFailed(pid)
	}
}

// doneOne ends one unit of inflight; the last one closes a connection
// whose peer sent its last frame, or starts the quiet time of one told to
// go away.
func (c *serverConn) doneOne() { c.endUnit(true) }

// endUnit is doneOne for a unit that ran a call (ran) or only refused
// calls read after the go-away: those do not restart the quiet time, so
// that a peer that ignores the go-away (a canonical one) and keeps
// sending does not keep its connection open for ever.
func (c *serverConn) endUnit(ran bool) {
	if c.inflight.Add(-1) == 0 {
		if c.eof.Load() {
			c.close(nil)
		} else if ran && c.goAwaySent.Load() {
			c.quietSince.Store(monoNow())
			// A read loop that sent its own go-away (readtimeout.go)
			// waits for this: the connection may close now.
			c.wakeRead()
		}
	}
}
