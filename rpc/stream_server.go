package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// HandleStream registers h for the streaming method with the given 1-based
// ordinal, replacing an earlier one; a nil h removes it. Safe to call
// while serving. Streaming and unary methods are separate tables (a
// stream open, kind 3, never reaches a unary handler, nor a request a
// stream handler), so one ordinal may have both. Method 0 is ignored; an
// ordinal above [MaxMethod] panics. The server's stream interceptors
// ([WithStreamInterceptors]) are wrapped around h here, once; the stream
// observer ([WithStreamObserver]) and [Server.Stats] see every stream
// whose handler runs, and every open refused without one (an unknown
// method among them). The unary interceptors ([WithInterceptors]) do not
// run around stream handlers.
func (s *Server) HandleStream(method uint32, h StreamHandler) {
	if method == 0 {
		return
	}
	if method > MaxMethod {
		panic(fmt.Sprintf("rpc: HandleStream: method ordinal %d above MaxMethod (%d)", method, MaxMethod))
	}
	if h != nil && len(s.opts.streamInterceptors) > 0 {
		h = chainStreamHandler(s.opts.streamInterceptors, method, h)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	var old map[uint32]StreamHandler
	if p := s.streamHandlers.Load(); p != nil {
		old = *p
	}
	m := make(map[uint32]StreamHandler, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if h == nil {
		delete(m, method)
	} else {
		m[method] = h
	}
	s.streamHandlers.Store(&m)
}

func (s *Server) streamHandler(method uint32) StreamHandler {
	if p := s.streamHandlers.Load(); p != nil {
		return (*p)[method]
	}
	return nil
}

// streamKey is the ctx Value key of a stream handler's ctx: its stream.
type streamKey struct{}

// streamFrom returns the stream a stream handler's ctx (or one derived
// from it) belongs to, nil for any other ctx.
func streamFrom(ctx context.Context) *Stream {
	st, _ := ctx.Value(streamKey{}).(*Stream)
	return st
}

// errStreamShutdown is what a handler's Send and Recv return once
// Shutdown's grace ended its stream.
var errStreamShutdown = &StatusError{Code: StatusUnavailable, Message: streamShutdown}

// errPeerClosed: the peer sent its last frame (it closed or half-closed
// the connection) before ending its direction of the stream.
var errPeerClosed = fmt.Errorf("%w: the peer closed the connection before ending the stream", ErrClosed)

// streamFrame handles a frame of kind 3, 4, 5 or 9 in the read loop. It
// reports false when the connection is closed.
func (c *serverConn) streamFrame(kind byte, p []byte) bool {
	t := &c.streams
	switch kind {
	case wire.KindStreamOpen:
		c.active = true
		return c.streamOpen(p)
	case wire.KindStreamMsg:
		if !t.onMsg(p, false) {
			if t.peerFC.Load() && !t.peerNoWindow.Load() {
				// A client that sent its hello, and no no-window notice
				// since, went past the window it keeps: the stream ends
				// with an error, and the read loop goes on.
				c.streamOverrun(p)
				return true
			}
			// The stream's buffer is full: the peer ignores our window (a
			// canonical client). Wait for room, as the canonical runtime
			// does, after the answers owed so far leave.
			if err := c.flushOwed(); err != nil {
				c.close(fmt.Errorf("write: %w", err))
				return false
			}
			bounded := c.boundStall()
			t.onMsg(p, true)
			if bounded {
				c.stall.Stop()
			}
			return !c.closed.Load()
		}
	case wire.KindStreamEnd:
		e, err := wire.ParseStreamEnd(p)
		if err != nil {
			return true
		}
		if st := t.lookup(e.ID); st != nil {
			if e.Status == 0 {
				st.ended(io.EOF, false, nil)
			} else {
				// The client canceled: the handler's ctx ends, its Send
				// and Recv fail, and no end of ours follows (the client
				// has forgotten the stream).
				err := endError(e, false)
				st.endedWith(StatusCanceled) // whatever status it carries: a peer cannot pose as a failing handler
				st.ended(err, true, err)
				st.endCtx(context.Canceled)
			}
		}
	case wire.KindStreamWindow:
		if t.onWindow(p) {
			// A zapcodec client's hello: answer with ours, before anything
			// we send on the streams it opens next.
			t.mu.Lock()
			var err error
			if !t.helloSent {
				t.helloSent = true
				err = t.hello(c.out.lock())
				c.owed = c.out.unlock() || c.owed
			}
			t.mu.Unlock()
			if err != nil {
				c.close(fmt.Errorf("write: %w", err))
				return false
			}
		}
	}
	return true
}

// errStreamOverrun is what a handler's Send and Recv return once its
// client went past the stream's window (streamOverrun).
var errStreamOverrun = &StatusError{Code: StatusBadRequest, Message: streamOverrunText}

// streamOverrun ends the stream of p, a message its buffer had no room
// for, from a client that keeps our windows (it sent its hello and no
// no-window notice): a zapcodec client never has more than the window
// outstanding, so its stream's buffer has room for each message it
// sends (a message finds less than the limit queued: what is queued was
// sent, and not granted back, before it). Waiting for room, as for a
// canonical client, would stop the connection's read loop, every call
// and stream on it, until the handler read; dropping the message would
// lose it unseen. The message is dropped and so are those queued: the
// handler's Recv and Send return errStreamOverrun at once, its ctx is
// canceled, and the client gets an error end 400 (unless our direction
// had ended), written on a goroutine: the read loop goes on at once, and
// a Send of the handler's under way is queued before the end. The later
// messages of the stream are dropped as after any end.
func (c *serverConn) streamOverrun(p []byte) {
	id, _, _ := wire.ParseStreamMsg(p) // parsed by onMsg
	c.streamFailed(id, errStreamOverrun)
}

// streamFailed ends the stream id, from the read loop, for a message it
// cannot take (see streamOverrun): its handler's Recv and Send return
// e, its ctx is canceled, and the client gets an error end of e's code
// and message unless our direction had ended. Nothing when no such
// stream runs.
func (c *serverConn) streamFailed(id uint32, e *StatusError) {
	st := c.streams.lookup(id)
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.rdone {
		// Ended since put found it full (its handler returned, the
		// connection closed): the message is dropped as after any end.
		st.mu.Unlock()
		return
	}
	st.rdone, st.rerr = true, e
	st.q, st.qh, st.qBytes = putQueue(st.q), 0, 0
	send := !st.sdone || st.endOwed
	if !st.sdone {
		st.sdone, st.serr = true, e
	}
	st.endOwed = false
	if st.acct.status == 0 {
		st.acct.status = e.Code
	}
	st.cond.Broadcast()
	st.mu.Unlock()
	st.endCtx(context.Canceled)
	if send {
		go func() {
			st.wmu.Lock() // a Send's message, once queued, goes before the end
			//lint:ignore SA2001 the lock is taken only to wait for the Send that holds it
			st.wmu.Unlock()
			if !c.closed.Load() {
				c.streams.writeEnd(noCtx, id, e.Code, e.Message)
			}
		}()
	}
}

// boundStall bounds the read loop's wait for room in a full stream buffer
// (a peer that ignores the window) by the idle timeout: once that passes
// with no room made, the connection is closed, which ends the wait and
// the connection's streams. While it waits the read loop reads no byte,
// so nothing else would learn that the peer left: a peer that overflowed
// a stream whose handler does not read (a server-streaming handler with
// nothing to send, say) and then closed its socket held the connection,
// its read loop and handler goroutines and the buffered messages for
// ever (TestStreamStallBoundedByIdleTimeout). It reports whether it set
// the bound (c.stall, which the caller stops once the wait is over): not
// with no idle limit. A canonical client whose handler reads slower than
// it sends stalls the read loop at each message, so the connection keeps
// one timer for its stalls rather than making one at each.
func (c *serverConn) boundStall() bool {
	d := c.s.opts.idleTimeout
	if d <= 0 {
		return false
	}
	if c.stall == nil {
		c.stall = time.AfterFunc(d, func() {
			c.close(fmt.Errorf("stream stall: the read loop waited %v (WithIdleTimeout) for a stream's handler to make room for a message sent past the window; no byte was read meanwhile", d))
		})
	} else {
		c.stall.Reset(d)
	}
	return true
}

// streamOpen handles a kind 3 frame: it hands the stream's handler to a
// worker goroutine (an idle one, or a new one), or refuses the open.
func (c *serverConn) streamOpen(p []byte) bool {
	arrived := monoNow() // the deadline counts from here, as a call's does
	req, err := wire.ParseRequest(p)
	malformed := ""
	if err != nil {
		var ee *wire.EnvelopeError
		if !errors.As(err, &ee) || !ee.HasPromise {
			c.close(err)
			return false
		}
		// req holds what the parse read: the method and initial message
		// when it got that far.
		req.PromiseID, malformed = ee.PromiseID, ee.Reason
	}
	id := req.PromiseID
	if id == 0 {
		// Id 0 names no stream: the opener numbers streams from its
		// promise-id counter, from 1 (WIRE.md §6), and zapcodec gives id
		// 0 to the connection's hello (kind 9). An end for id 0 would
		// answer no stream the peer can have opened, and WIRE.md has a
		// receiver drop a frame for an unknown stream id: the open is
		// refused without one, whatever else is wrong with it (this
		// check comes first), and is seen and counted as refused.
		c.streamUnanswered(&req, StatusBadRequest)
		return true
	}
	if err != nil {
		return c.streamRefuse(&req, StatusBadRequest, malformed, true, false)
	}
	if len(req.Metadata) > 0 {
		lim := c.s.opts.maxMetadata
		if lim <= 0 {
			lim = DefaultMaxMetadata
		}
		if len(req.Metadata) > lim {
			var text [metadataTextSize]byte
			return c.streamRefuse(&req, StatusMetadataTooLarge, metadataTooLarge(&text, len(req.Metadata), lim), true, true)
		}
		if !validMetadata(req.Metadata) {
			return c.streamRefuse(&req, StatusBadRequest, malformedMetadata, true, false)
		}
	}
	if req.PayloadDeflated {
		// Streams are never compressed (docs/wire.md §8): the handler
		// would take the compressed bytes for its first message.
		return c.streamRefuse(&req, StatusBadRequest, streamDeflated, true, false)
	}
	if c.goAwaySent.Load() {
		return c.streamRefuse(&req, StatusUnavailable, streamGoingAway, true, true)
	}
	h := c.s.streamHandler(req.Method)
	if h == nil {
		// The canonical server ignores such an open; a zapcodec client
		// learns why at once.
		return c.streamRefuse(&req, StatusNotFound, streamNoHandler, false, false)
	}
	t := &c.streams
	t.mu.Lock()
	if t.err != nil {
		// The connection is closing (Close, or a failed write, on
		// another goroutine): its streams are ending and nothing more
		// is written on it, so the open gets no end; it is refused
		// with 503, as one read after the go-away is.
		t.mu.Unlock()
		c.streamUnanswered(&req, StatusUnavailable)
		return false
	}
	if old, used := t.m[id]; used {
		t.mu.Unlock()
		if old.canceledByPeer() {
			// The client canceled the stream that has the id, whose
			// handler still runs, and then reused the id (its counter
			// wrapped after 2^31 opens): it forgot the old stream at
			// its cancel, so an end reaches the new one alone. Refused
			// with 503 (a new open gets a new id) rather than left
			// waiting until its ctx ends.
			return c.streamRefuse(&req, StatusUnavailable, streamIDInUse, true, false)
		}
		// A peer reusing the id of a stream still running (a zapcodec
		// client skips the ids still open): an end would end that
		// stream on the peer, so the open is refused without one, and
		// the running stream goes on. streamRefuse does the same for
		// an open it would refuse for another reason.
		c.streamUnanswered(&req, StatusBadRequest)
		return true
	}
	if len(t.m) >= t.max {
		t.mu.Unlock()
		// Not marked not run: a marked 503 means going away to a
		// zapcodec client (see WithMaxStreams).
		return c.streamRefuse(&req, StatusUnavailable, streamTooMany, true, false)
	}
	var dl int64
	if req.Timeout != 0 {
		dl = deadlineAfter(arrived, req.Timeout)
		if monoNow() >= dl {
			// The client has given up: refused without running the
			// handler, as a call whose deadline passed before it could
			// run is answered 504 unrun.
			t.mu.Unlock()
			return c.streamRefuse(&req, StatusDeadlineExceeded, streamDeadlineText, true, true)
		}
	}
	if t.m == nil {
		t.m = make(map[uint32]*Stream)
	}
	st := newStream(t, id, req.Method)
	// A Send waiting for a grant wakes when the ctx ends (its deadline,
	// the base context), and one writing is interrupted (ctxEnded); the
	// other ends of the ctx abort the stream.
	st.initCtx(dl)
	st.acct.start = monoNow()
	t.m[id] = st
	t.count()
	if !t.ctxWatched {
		// The connection's context ends its streams' ctxs: one watch
		// for all of them, made at the connection's first stream.
		t.ctxWatched = true
		context.AfterFunc(c.ctx, c.ctxEndsStreams)
	}
	t.mu.Unlock()
	if err := c.ctx.Err(); err != nil {
		st.endCtxByConn(err) // the watch may have looked before st was in the set
	}
	if len(req.Cap) > 0 {
		st.capv = append([]byte(nil), req.Cap...)
	}
	if len(req.Metadata) > 0 {
		st.mdv = append([]byte(nil), req.Metadata...)
	}
	var init []byte
	if len(req.Payload) > 0 {
		init = append([]byte(nil), req.Payload...)
	}
	st.h, st.init = h, init
	c.inflight.Add(1) // runStream's doneOne ends it
	c.s.dispatchStream(st)
	return true
}

// ctxEndsStreams ends the ctxs of the connection's streams when its
// context ends (the base context's end, or the connection's close), as
// it ended them when each was derived from it.
func (c *serverConn) ctxEndsStreams() {
	err := c.ctx.Err()
	t := &c.streams
	t.mu.Lock()
	ss := t.listLocked()
	t.mu.Unlock()
	for _, st := range ss {
		st.endCtxByConn(err)
	}
}

// interruptWrite ends the wait of a handler's Send (or CloseSend, or
// Recv's grant) for the connection's write, once the stream's ctx ended:
// it may be the writer, stuck on a peer that does not read, which no
// deadline of its ctx bounds (a server's write sets none: outbox.write).
// A past write deadline ends the write, which sees ctx's end and hands
// the rest to another goroutine (errHandOff), and the caller returns:
// Send with nil (its message is in the write), Recv with the message it
// took (its grant is in the write). Only where a write cut by a deadline
// can go on (resumable; over TLS such a write is bounded by the write
// timeout alone). The deadline may land on another goroutine's write
// instead (the caller was not the writer, or its write had ended): a
// deadline that is not its own restarts that write (see writeWatched and
// outbox.write).
func (st *Stream) interruptWrite() {
	if o := st.set.out; st.writing.Load() > 0 && o.resumable {
		interruptedSends.Add(1)
		o.nc.SetWriteDeadline(pastDeadline)
	}
}

// interruptedSends counts the writes interruptWrite ended (tests).
var interruptedSends atomic.Int64

// streamRefuse answers the open r from the read loop with an error end
// (with all false, only to a peer that does flow control: a zapcodec
// one), after the stream observer saw it (to a peer that gets no end
// too); an open that reuses the id of a running stream gets no end and
// status 400 instead. With notRun a KindStreamNotRun frame goes just
// before the end, so that a zapcodec client knows the refusal from a
// handler's end of the same status and text (a canonical one ignores the
// kind): it is set for the refusals a unary call gets with the not-run
// flag, 503 for an open read after the go-away, 504 for one whose
// deadline passed before its handler could run, 431 for metadata over
// the limit, and 413 for an open over the maximum frame size
// (oversize.go). It reports false when the connection broke.
func (c *serverConn) streamRefuse(r *wire.Request, status uint32, text string, all, notRun bool) bool {
	if old := c.streams.lookup(r.PromiseID); old != nil && !old.canceledByPeer() {
		// The open reuses the id of a stream still running: its end
		// would end that stream on the peer. It is refused as such,
		// without an end (see streamOpen), whatever else is wrong with
		// it. Checked here, not before every open: an open taken on
		// looks at the set once. (A stream the client canceled is one
		// it forgot: the end reaches the new open alone.)
		c.streamUnanswered(r, StatusBadRequest)
		return true
	}
	c.streamUnanswered(r, status)
	if !all && !c.streams.peerFC.Load() {
		return true
	}
	if notRun && !c.endOwed(wire.AppendStreamNotRun(c.out.begin(wire.KindStreamNotRun), r.PromiseID)) {
		return false
	}
	return c.endOwed(wire.AppendStreamEndError(c.out.begin(wire.KindStreamEnd), r.PromiseID, status, text))
}

// canceledByPeer reports whether the client canceled st (its error end
// came): the client has forgotten the stream, whose handler may still
// run.
func (st *Stream) canceledByPeer() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.acct.status == StatusCanceled
}

// streamUnanswered counts the open r refused with status (and its initial
// message, as far as it was parsed, in the bytes in, as the observer's
// event does) and reports it to the stream observer, if any; it writes
// nothing. An open that may get no end (see streamOpen) is refused with
// this alone, and streamRefuse writes the end after it. Without an
// observer it costs the counts and a nil check.
func (c *serverConn) streamUnanswered(r *wire.Request, status uint32) {
	c.s.streamStats.refused.Add(1)
	if n := len(r.Payload); n > 0 {
		c.s.streamStats.bytesIn.Add(uint64(n))
	}
	if obs := c.s.opts.streamObserver; obs != nil {
		c.observeRefusedStream(obs, r, status)
	}
}

// runStream runs a stream's handler (st.h, with st.init) on a worker and
// ends the server's direction with its result (unless CloseSend, an
// abort or the connection ended it).
func (c *serverConn) runStream(st *Stream) {
	h, init := st.h, st.init
	st.h, st.init = nil, nil // the stream does not keep them past its handler
	started, ended := false, false
	defer func() {
		if !ended {
			// The handler called runtime.Goexit (a panic is recovered by
			// invokeStream), or the stream observer did as it saw the
			// start: the stream ends as after a panic.
			who := "stream handler"
			if !started {
				who = "stream observer"
			}
			c.s.opts.logger.Error("rpc: "+who+" called runtime.Goexit", "method", st.method, "stream", st.id,
				"remote", c.remote())
			c.endStream(st, StatusInternal, streamExitText)
		}
	}()
	c.serverStreamStart(st, init)
	started = true
	status, text := c.invokeStream(st, h, init)
	ended = true
	if zapdebug && poison.Enabled() {
		// -tags zapdebug: a view of the open's cap or metadata (CapFrom,
		// MetadataFrom) kept past the handler reads poison by the time
		// the client has the end. init is the handler's own: kept as it is.
		poison.Fill(st.capv)
		poison.Fill(st.mdv)
	}
	c.endStream(st, status, text)
}

// endStream ends st once its handler has returned with status and text
// (status 0: a clean end).
func (c *serverConn) endStream(st *Stream, status uint32, text string) {
	st.mu.Lock()
	open := !st.sdone
	st.sdone, st.serr = true, ErrStreamClosed
	if !st.rdone {
		st.rdone, st.rerr = true, ErrStreamClosed
	}
	st.q, st.qh, st.qBytes = putQueue(st.q), 0, 0
	st.cond.Broadcast() // a read loop waiting for room, a Send waiting for credit
	st.mu.Unlock()
	// A Send of the handler's still under way (on a goroutine of its,
	// which it left running) stops waiting, for credit (above) or for
	// room in the queue (the ctx): the end must not wait for a grant
	// that may never come.
	st.stopCtx()
	st.endCtx(context.Canceled)
	st.wmu.Lock() // a Send's message, once queued, goes before the end
	st.mu.Lock()
	send := open || st.endOwed // a CloseSend whose end was not queued
	st.endOwed = false
	st.mu.Unlock()
	// Out of the set before the end can reach the peer: a client that
	// reads the end frees its own count at once and may open the next
	// stream right away, which must not be refused as one too many.
	c.streams.remove(st)
	if send && !c.closed.Load() {
		md, tooLarge := c.takeTrailer(st)
		if tooLarge != nil && text != streamPanicText && text != streamExitText {
			// As a call's answer: a 500 that says so, without the
			// trailer (after a panic, the panic's 500 stays).
			status, text = StatusInternal, c.handlerError("rpc: stream handler error", st.method, "stream", st.id, tooLarge)
		}
		if len(md) == 0 || c.streams.writeFrame(noCtx, wire.KindStreamTrailer, st.id, md, false) == nil {
			c.streams.writeEnd(noCtx, st.id, status, text)
		}
		putQueue(md) // copied into the write queue, or not sent
	}
	st.wmu.Unlock()
	// Deferred: a stream observer that calls runtime.Goexit as it sees
	// the end must not leave the stream counted in flight (Shutdown
	// would wait for it for ever).
	defer c.doneOne()
	c.serverStreamEnd(st, status)
}

// invokeStream runs the handler, turning its error or panic into the
// status and text of the end (status 0: a clean end).
func (c *serverConn) invokeStream(st *Stream, h StreamHandler, init []byte) (status uint32, text string) {
	defer func() {
		if r := recover(); r != nil {
			c.s.opts.logger.Error("rpc: stream handler panic", "method", st.method, "stream", st.id,
				"remote", c.remote(), "panic", fmt.Sprint(r))
			status, text = StatusInternal, streamPanicText
		}
	}()
	err := h(st.ctx, init, st)
	if err == nil {
		return 0, ""
	}
	if se := StatusOf(err); se != nil {
		if se.Code == StatusOK || se.Code == 0 {
			return 0, ""
		}
		return handlerStatus(err, se, c.s.opts.hideErrors)
	}
	if st.endedFromOutside(err) {
		// Not the handler's failure: its stream ended (the client's
		// cancel, its only way to stop a server stream early; the
		// connection closed; the deadline) and the handler returned what
		// that made its ctx, Send or Recv return, as it should. Each such
		// stream used to log an error. The end's text is as for any other
		// error; its status too, but for a deadline that passed: 504
		// (StatusDeadlineExceeded), as gRPC-go reports
		// codes.DeadlineExceeded and as a call so ended is answered; and
		// for a client that went away (the connection closed, or the
		// client sent its last frame): that is counted canceled, as
		// gRPC-go reports codes.Canceled on a server whose client went
		// away. Both were counted Internal. The ctx keeps the error of
		// what ended it first.
		status := uint32(StatusInternal)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && errors.Is(st.ctx.Err(), context.DeadlineExceeded):
			status = StatusDeadlineExceeded
		case c.closed.Load() || c.eof.Load():
			status = StatusCanceled
		}
		if c.s.opts.hideErrors {
			return status, internalErrorText
		}
		return status, err.Error()
	}
	return StatusInternal, c.handlerError("rpc: stream handler error", st.method, "stream", st.id, err)
}

// endedFromOutside reports whether err, a stream handler's error, is the
// one its stream's end gave it: its ctx's error once that ended, or the
// error Recv returns for the peer's end or the connection's (not io.EOF,
// which no end from outside gives).
func (st *Stream) endedFromOutside(err error) bool {
	if ctxErr := st.ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return true
	}
	st.mu.Lock()
	rerr := st.rerr
	st.mu.Unlock()
	return rerr != nil && rerr != io.EOF && errors.Is(err, rerr)
}

// shutdownStreams is Shutdown's tick for a connection told to go away:
// the streams still open grace after Shutdown first found them are ended
// with status 503 (the peer's Recv returns it; the handlers' ctx is
// canceled and their Send and Recv fail). now is a monoNow value: the
// grace is measured on the monotonic clock, so a step of the wall clock
// (NTP, an operator) during Shutdown neither cuts the streams at once
// nor keeps them open past the grace (it was measured between wall
// clock readings, time.Time.UnixNano).
func (c *serverConn) shutdownStreams(now int64, grace time.Duration) {
	t := &c.streams
	t.mu.Lock()
	if len(t.m) == 0 {
		t.mu.Unlock()
		return
	}
	if t.graceAt == 0 {
		t.graceAt = max(now, 1) // 0: not yet begun
	}
	if now-t.graceAt < int64(grace) {
		t.mu.Unlock()
		return
	}
	if t.graceDone {
		t.mu.Unlock()
		return
	}
	t.graceDone = true // no stream opens after the go-away
	ss := t.listLocked()
	t.mu.Unlock()
	// A goroutine each: a peer that does not read must not stall
	// Shutdown, nor one stream's end, waiting for room in the write
	// queue, the cancel of the others (they were ended one after another
	// on one goroutine, and the first end that waited for room held the
	// other handlers running until the write timeout).
	for _, st := range ss {
		go st.abort(noCtx, errStreamShutdown, false, StatusUnavailable, streamShutdown)
	}
}

// WithStreamWindow sets the flow-control window of each stream's receive
// side, in bytes (a message counts its length plus 4): a zapcodec peer
// never has more than that outstanding, so a stream buffers at most n
// plus one message (on a server at least 16 KiB plus one message: what a
// client may send before it has the server's hello). The window is announced in the hello; a larger one
// lets a fast sender go further ahead of the reader. Default
// DefaultStreamWindow (64 KiB); n <= 0 means the default, values above
// 1 GiB are 1 GiB.
func WithStreamWindow(n int) Option {
	n = min(n, 1<<30)
	return bothOption{
		s: func(o *serverOptions) { o.streamWindow = n },
		c: func(o *clientOptions) { o.streamWindow = n },
	}
}

// WithMaxStreams bounds the streams open at once on one connection: a
// server answers an open beyond it with an error end of status 503 "too
// many open streams" (its handler does not run), a client's OpenStream
// fails with [ErrTooManyStreams]. Default DefaultMaxStreams (128); n <= 0
// means the default.
//
// The server's 503 is not marked as not run ([IsRetryable] is false of
// it, as of a handler's own 503), though the handler did not run: the
// only mark the wire has for a refused stream open (the not-run frame,
// docs/wire.md section 9) gives a 503 the meaning of a server going away,
// which every zapcodec client acts on by the status alone (the error
// matches [ErrGoAway], and rpc/cluster replaces the connection), where
// this server goes on. A client whose own limit is at most the server's
// (both are this option's, equal by default) never meets the refusal:
// its OpenStream fails with ErrTooManyStreams first, nothing sent, which
// rpc/cluster takes to another replica.
func WithMaxStreams(n int) Option {
	return bothOption{
		s: func(o *serverOptions) { o.maxStreams = n },
		c: func(o *clientOptions) { o.maxStreams = n },
	}
}
