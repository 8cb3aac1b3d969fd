package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/internal/poison"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// run executes a call on a worker goroutine and answers it.
func (c *serverConn) run(j *job) {
	if c.closed.Load() {
		// The connection died while the call waited for its worker: no
		// answer can reach the peer, so the handler does not start.
		if obs := c.s.opts.observer; obs != nil {
			c.observeUnrun(obs, j.method, StatusUnavailable, len(j.req), 0)
		}
		c.finish(j, StatusUnavailable, nil, false)
		return
	}
	ended := false
	defer func() {
		if !ended {
			// The handler called runtime.Goexit (a panic is recovered
			// by invoke): the worker ends, the call is answered 500.
			c.handlerExited(j)
			c.finish(j, StatusInternal, nil, false)
		}
	}()
	status, body := c.call(j)
	ended = true
	c.finish(j, status, body, false)
}

// finish answers a call and frees its job. inReader: the caller holds the
// read loop role and flushes later (see readLoop). runInline answers the
// common inline call itself and calls finishAny for the rest.
func (c *serverConn) finish(j *job, status uint32, body []byte, inReader bool) {
	// Over for its caller's cancel (cancel.go), and, with armedAny in
	// finishAny, for a late Done (see armDone).
	j.live.Store(0)
	c.finishAny(j, status, body, inReader)
}

// finishAny is finish after the store to j.live: it undoes
// and checks what the call may have set (promises, compression, refusal,
// response metadata, answer budget, deadline and Done, cap and metadata,
// buffers grown too large), and clears j.undo.
//
// j.undo is the one test in runInline that stands for a dozen (session 27
// counted one word each, about 50 instructions a call): it is set by
// whatever gives a call something to undo or check here, setExt (a
// deadline, and with it a refusal; cap and metadata; compression),
// inflateRequest and a request buffer that grew (either may pass
// maxKeptBuffer), SetResponseMetadata, ReserveAnswer. A Done or AfterFunc
// sets armedAny (from any goroutine: atomic), runInline's other test. A
// worker's call, or one whose answer is large, always comes here.
func (c *serverConn) finishAny(j *job, status uint32, body []byte, inReader bool) {
	j.undo = false
	// -tags zapdebug: a view of the request, or of its cap and metadata
	// (CapFrom, MetadataFrom), kept past the handler reads poison (see
	// poisonRequest); compiled out otherwise.
	late := zapdebug && poisonRequest(j.req, body)
	lateExt := zapdebug && poisonRequest(j.ext, body)
	if c.promises != nil {
		// An answer above the largest frame goes out as a 500
		// (answerTooLarge; an empty one from writeAnswer or inlineAnswer
		// for an error text that large): the calls pipelined on it see
		// it failed, as its caller does.
		c.promises.complete(j.pslot, j.pseq, status == StatusOK && c.answerFits(len(body)), body)
	}
	deflate := j.deflate // compress.go
	if deflate {
		j.deflate = false
	}
	if j.refused {
		j.refused = false
		c.writeAnswerString(status, j.pid, deadlineRefusal, true, inReader)
	} else {
		md := j.rmd
		if len(md) > 0 && (len(md) > c.maxMetadata() || !c.answerFits(len(body)+respMDExtra(md))) {
			// Set by a handler that then panicked or exited (a returning
			// one's is checked by invokeBody), or too large for a frame
			// with the error's text: not sent, so that the text goes
			// out rather than an empty 500.
			md = nil
		}
		switch {
		case deflate && c.writeDeflated(status, j.pid, body, md, inReader):
			// Sent compressed (compress.go).
		case inReader && len(body) < frame.DefaultWritevThreshold:
			// writeAnswer's first case, without its call.
			if c.closed.Load() {
				// No answer can reach the peer.
			} else if len(md) != 0 {
				c.inlineAnswerAny(status, j.pid, body, md)
			} else {
				c.inlineAnswer(status, j.pid, body)
			}
		default:
			c.writeAnswer(status, j.pid, body, md, inReader)
		}
	}
	if j.reserved != 0 {
		// The answer has left the call (written, copied into the
		// queue, or dropped): its budget goes back (ReserveAnswer).
		c.releaseAnswer(j)
	}
	if zapdebug && late {
		poison.Fill(j.req)
	}
	if zapdebug && lateExt {
		poison.Fill(j.ext)
	}
	if j.armedAny.Load() {
		j.endDeadline()
	} else if j.dl.Load() != 0 {
		// A deadline, and no Done or AfterFunc during the call: armDone
		// sets armedAny before it looks at the call's running state,
		// which was cleared before this look (finish, or runInline's
		// compare-and-swap). Nothing is armed and no callback runs, so
		// endDeadline's locks have nothing to do (three locked
		// instructions and some 30 others a call): only the deadline
		// goes. A late Done that reads the deadline before this store
		// arms the job as it could after endDeadline's unlock: it
		// leaves armedAny set, and the next call's finish disarms it.
		j.dl.Store(0)
	}
	j.capv, j.mdv = nil, nil
	if cap(j.ext) > maxKeptBuffer {
		j.ext = nil
	}
	if len(j.rmd) > 0 {
		dropResponseMetadata(j)
	}
	if cap(j.req) > maxKeptBuffer {
		j.req = nil
	}
	if cap(j.resp) > maxKeptBuffer {
		j.resp = make([]byte, 0, 512)
	}
	j.h = nil
	if inReader {
		c.spare = j // the read loop's next call takes it without a channel op
	} else {
		c.putFree(j)
		c.doneOne()
	}
}

// invoke runs the handler, turning its error or panic into a status.
func (c *serverConn) invoke(j *job) (status uint32, body []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.handlerPanic(j, r)
			status, body = StatusInternal, nil
		}
	}()
	return c.invokeBody(j)
}

// handlerPanic logs the panic of j's handler (answered 500).
func (c *serverConn) handlerPanic(j *job, r any) {
	c.s.opts.logger.Error("rpc: handler panic", "method", j.method, "promise", j.pid,
		"remote", c.remote(), "panic", fmt.Sprint(r))
}

// handlerExited logs that j's handler called runtime.Goexit (t.FailNow
// in a test's handler, say): the call is answered 500, and the goroutine
// that ran it ends. The observer, if any, sees that 500: the handler
// never returned to call, which would have reported it.
//
// When the handler had returned and the observer was reporting its call
// (j.obsIn is observerRunning), the observer called runtime.Goexit: the
// call is answered 500 all the same, and the observer is not called again
// (it would exit again, before the answer is written).
func (c *serverConn) handlerExited(j *job) {
	obs := c.s.opts.observer
	if obs != nil && j.obsIn == observerRunning {
		c.s.opts.logger.Error("rpc: observer called runtime.Goexit", "method", j.method, "promise", j.pid,
			"remote", c.remote())
		return
	}
	c.s.opts.logger.Error("rpc: handler called runtime.Goexit", "method", j.method, "promise", j.pid,
		"remote", c.remote())
	if obs != nil {
		observeCall(obs, c.serverEvent(j.method, StatusInternal, j.obsStart, monoNow(), j.obsIn, 0), c.s.opts.logger)
	}
}

// invokeBody is invoke without the recover: a panic goes to the caller's
// (readGuarded for a call run inline).
func (c *serverConn) invokeBody(j *job) (status uint32, body []byte) {
	if j.target != 0 {
		var ok bool
		if j.req, ok = c.promises.wait(j.target, j.pseq, j.req[:0], j); !ok && !j.expired() {
			return StatusBadRequest, append(j.resp[:0], "promise target failed or unknown"...)
		}
	}
	if j.expired() {
		// The caller has given up: answer without running the handler.
		j.refused = true
		return StatusDeadlineExceeded, nil
	}
	out, err := j.h(j, j.req, j.resp[:0])
	return c.result(j, out, err)
}

// result is invokeBody's status and body for what j's handler returned:
// the result's buffer kept for the next call, the response metadata
// checked, an error turned into its status and text, a result too large
// for a frame into a 500.
func (c *serverConn) result(j *job, out []byte, err error) (status uint32, body []byte) {
	if len(out) > 0 || cap(out) > 0 {
		if unsafe.SliceData(out) == unsafe.SliceData(j.resp) {
			if cap(out) != cap(j.resp) {
				// The handler resliced it smaller: keep its cap.
				// (j.resp is always empty: with the same cap, out[:0]
				// is j.resp, and storing it again is a pointer store.)
				j.resp = out[:0]
			}
		} else if cap(out) > cap(j.resp) && cap(out) <= maxKeptBuffer {
			// The answer outgrew the job's buffer: grow it once for the
			// next call (never keep out itself: it may be the handler's).
			j.resp = make([]byte, 0, cap(out))
		}
	}
	if len(j.rmd) > 0 {
		if status, body, ok := c.checkResponseMetadata(j); !ok {
			return status, body
		}
	}
	if err != nil {
		// Code 0 is no status an answer can carry (and a stream's clean
		// end), and 200 no error status (the client would read the text
		// as the result): such an error answers as a plain one, 500.
		if se := StatusOf(err); se != nil && se.Code != 0 && se.Code != StatusOK {
			status, text := handlerStatus(err, se, c.s.opts.hideErrors)
			return status, append(j.resp[:0], text...)
		}
		if j.deadlineError(err) {
			// The call's deadline passed and the handler returned what
			// that made its ctx return, as it should: 504, as gRPC-go
			// reports codes.DeadlineExceeded; not a handler error (it was
			// logged at Error and answered 500). The answer is no refusal
			// (the call ran).
			if c.s.opts.hideErrors {
				return StatusDeadlineExceeded, append(j.resp[:0], internalErrorText...)
			}
			return StatusDeadlineExceeded, append(j.resp[:0], err.Error()...)
		}
		if j.canceled.Load() && errors.Is(err, context.Canceled) {
			// The caller canceled the call (cancel.go) and the handler
			// returned what that made its ctx return, as it should:
			// canceled, as gRPC-go reports it; not a handler error. The
			// answer goes out (the client drops it as a late one).
			if c.s.opts.hideErrors {
				return StatusCanceled, append(j.resp[:0], internalErrorText...)
			}
			return StatusCanceled, append(j.resp[:0], err.Error()...)
		}
		if c.closed.Load() {
			if ctxErr := j.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
				// The connection is gone (the client went away, most
				// often) and the handler returned its ctx's error, as it
				// should: canceled, as a stream so ended is, and as
				// gRPC-go reports it; not a handler error (logged at
				// Error, seen as 500). No answer can reach the client.
				return StatusCanceled, nil
			}
		}
		return c.internalError(j, err)
	}
	if n := len(out) + respMDExtra(j.rmd); !c.answerFits(n) {
		// The 500 that says so goes without the metadata, which may be
		// what does not fit.
		dropResponseMetadata(j)
		return c.answerTooLarge(j, n)
	}
	return StatusOK, out
}

// answerTooLarge answers 500 for a handler's result of n bytes that no
// frame can carry, saying so to the peer (the answer used to be an empty
// 500, which told a client nothing) and in the log, as a handler error:
// the server's frame limit must grow, or the result shrink.
func (c *serverConn) answerTooLarge(j *job, n int) (uint32, []byte) {
	return c.internalError(j, errors.New(answerTooLargeText(frameHeader+wire.ResponseOverhead+n-4, c.out.max)))
}

// answerTooLargeText is the text of answerTooLarge's error for an answer
// whose frame would hold frameLen bytes (its length field) where max may.
func answerTooLargeText(frameLen, max int) string {
	return fmt.Sprintf("rpc: answer too large for a frame (len:%d max:%d): raise the maximum frame size on both sides (WithFrameOptions(frame.WithMaxFrameSize(n))) or send the result in parts (a stream)", frameLen, max)
}

// deadlineError reports whether err, a unary handler's error, is the one
// its ctx gave it once the call's deadline passed: context.DeadlineExceeded
// (wrapped or not) with the call's deadline, or the base context's, past.
// A handler's own context.DeadlineExceeded before then (a shorter timeout
// of its own on a call it made) is its failure, not the call's deadline.
func (j *job) deadlineError(err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if dl := j.dl.Load(); dl != 0 && monoNow() >= dl {
		return true
	}
	return errors.Is(j.conn().ctx.Err(), context.DeadlineExceeded)
}

// internalErrorText is the answer body of a plain handler error under
// WithHideErrors.
const internalErrorText = "internal error"

// internalError answers a handler error that is not a *StatusError: 500
// with the error's text (or internalErrorText under WithHideErrors), and
// logs it (at most MaxErrorMessage bytes of it) with the method and the
// peer. The text is bounded by the
// maximum frame size like any answer (beyond it the answer is an empty
// 500).
func (c *serverConn) internalError(j *job, err error) (uint32, []byte) {
	msg := c.handlerError("rpc: handler error", j.method, "promise", j.pid, err)
	return StatusInternal, append(j.resp[:0], msg...)
}

// handlerError logs a handler's error with the method and the call's
// promise or stream id (idKey says which) and returns the text the peer
// gets: the error's, or internalErrorText under WithHideErrors.
func (c *serverConn) handlerError(what string, method uint32, idKey string, id uint32, err error) string {
	msg := err.Error()
	o := &c.s.opts
	// The log keeps what a client's error string keeps: a handler error
	// of megabytes must not become a log line of megabytes.
	o.logger.Error(what, "method", method, idKey, id,
		"remote", c.remote(), "err", msg[:messageCut(msg)], "len", len(msg))
	if o.hideErrors {
		return internalErrorText
	}
	return msg
}

// answerDirect answers r from the read loop with status and msg, without
// running its handler (notRun: with the not-run flag, docs/wire.md §8
// extension), and reports it to the observer: the server's observer sees
// every call it answers, not only those that ran a handler.
func (c *serverConn) answerDirect(r *wire.Request, status uint32, msg string, notRun bool) {
	if obs := c.s.opts.observer; obs != nil {
		c.observeUnrun(obs, r.Method, status, len(r.Payload), len(msg))
	}
	c.writeAnswerString(status, r.PromiseID, msg, notRun, true)
}

// refuse answers, from the read loop, a call read after the go-away: 503
// with the not-run flag (docs/wire.md §8 extension), so the client knows it may
// send the call again. A canonical client reads a plain 503 "going away".
func (c *serverConn) refuse(r *wire.Request) {
	c.answerDirect(r, StatusUnavailable, goAwayRefusal, true)
}

// writeAnswer writes the answer of a call: status, body and the response
// metadata md the handler set (none: the canonical envelope).
func (c *serverConn) writeAnswer(status, pid uint32, body, md []byte, inReader bool) {
	if c.closed.Load() {
		return
	}
	if inReader && len(body) < frame.DefaultWritevThreshold {
		if len(md) != 0 {
			c.inlineAnswerAny(status, pid, body, md)
		} else {
			c.inlineAnswer(status, pid, body)
		}
		return
	}
	var lead bool
	var err error
	switch {
	case len(md) > 0:
		buf := c.out.begin(wire.KindResponse)
		buf = wire.AppendResponseHeaderMD(buf, status, pid, len(body), false, len(md))
		buf = append(append(buf, body...), md...)
		lead, err = c.out.end(buf)
	case len(body) >= frame.DefaultWritevThreshold:
		// A big body is not copied: it leaves with its headers in one
		// writev on a socket (after the frames already waiting).
		var hb [wire.ResponseOverhead]byte
		head := wire.AppendResponseHeader(hb[:0], status, pid, len(body))
		err = c.out.lock().WriteFrameParts(wire.KindResponse, head, body)
		lead = c.out.unlock()
	default:
		buf := c.out.begin(wire.KindResponse)
		buf = wire.AppendResponseHeader(buf, status, pid, len(body))
		buf = append(buf, body...)
		lead, err = c.out.end(buf)
	}
	if errors.Is(err, frame.ErrFrameTooLarge) {
		status, body = StatusInternal, nil
		buf := c.out.begin(wire.KindResponse)
		buf = wire.AppendResponseHeader(buf, status, pid, 0)
		var l bool
		l, err = c.out.end(buf)
		lead = lead || l
	}
	c.finishWrite(lead, err, status, inReader)
}

// inlineAnswer queues the answer of a call the read loop ran in c.ans,
// the read loop's own buffer, without the outbox's lock; the read loop
// moves the buffer into the outbox at its flush point (flushOwed), one
// lock for the answers of a read batch, or once it holds ansMove bytes.
// The bytes are the ones writeAnswer would queue: an answer above the
// maximum frame size becomes an empty 500.
//
// It takes no response metadata: an answer with some goes to
// inlineAnswerAny.
func (c *serverConn) inlineAnswer(status, pid uint32, body []byte) {
	// The common answer in a few stores: a batch begun (c.ans taken)
	// with room for the frame in c.ansB, under ansMove after it, and
	// within the frame limit. (Before the batch's first answer c.ans and
	// c.ansB are both nil: the test of room sends it to inlineAnswerAny.)
	// The bytes are inlineAnswerAny's: the frame's length, the kind,
	// AppendResponseHeader's envelope (written in place: the room is
	// there), the body.
	b := c.ansB
	start := len(b)
	n := frameHeader + wire.ResponseOverhead + len(body)
	if cap(b)-start < n || start+n >= ansMove || !c.answerFits(len(body)) {
		c.inlineAnswerAny(status, pid, body, nil)
		return
	}
	b = b[:start+frameHeader+wire.ResponseOverhead]
	binary.LittleEndian.PutUint32(b[start:], uint32(n-4))
	b[start+4] = wire.KindResponse
	wire.PutResponseHeader((*[wire.ResponseOverhead]byte)(b[start+frameHeader:]), status, pid, len(body))
	c.ansB = append(b, body...)
	c.local.answered(status)
}

// inlineAnswerAny is inlineAnswer for every answer: the first of a batch,
// one with metadata, one that needs room or fills ansMove, one above the
// frame limit.
func (c *serverConn) inlineAnswerAny(status, pid uint32, body, md []byte) {
	if c.ans == nil {
		c.ans = outBufs.Get().(*outBuf)
		c.ansB = c.ans.B
	}
	// The bytes are appended to c.ansB, in the connection's struct, not
	// to c.ans.B, a small pooled object whose cache line other objects
	// share (other cores write them): c.ans.B is set once per batch, by
	// moveAnswers.
	b := c.ansB
	start := len(b)
	if !c.answerFits(len(body) + respMDExtra(md)) {
		status, body, md = StatusInternal, nil, nil
	}
	if len(md) == 0 {
		// The common answer: its length is known up front, so the
		// frame's header is written once, and one growth makes room for
		// the header, the envelope's and the body (the appends below
		// then find it).
		n := frameHeader + wire.ResponseOverhead + len(body)
		if cap(b)-start < n {
			b = slices.Grow(b, n)
		}
		b = b[:start+frameHeader]
		binary.LittleEndian.PutUint32(b[start:], uint32(n-4))
		b[start+4] = wire.KindResponse
		b = wire.AppendResponseHeader(b, status, pid, len(body))
		b = append(b, body...)
	} else {
		b = append(b, 0, 0, 0, 0, wire.KindResponse)
		b = wire.AppendResponseHeaderMD(b, status, pid, len(body), false, len(md))
		b = append(append(b, body...), md...)
		binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	}
	c.ansB = b
	c.local.answered(status)
	if len(b) >= ansMove {
		// A large batch leaves in writes of about ansMove bytes, as a
		// buffered writer's would, each from a buffer handed over whole.
		err := c.moveAnswers()
		if err == nil && c.owed {
			c.owed = false
			err = c.out.flush(false)
		}
		if err != nil {
			c.close(fmt.Errorf("write: %w", err))
		}
	}
}

// answerFits reports whether an answer with an n-byte body fits in a
// frame. A handler's result that does not is answered 500 with a text
// that says so (answerTooLarge); a larger error text, which should not
// happen, goes out as an empty 500 (writeAnswer, inlineAnswer).
func (c *serverConn) answerFits(n int) bool {
	return frameHeader+wire.ResponseOverhead+n-4 <= c.out.max
}

// ansMove: once the read loop's answers take this many bytes, it moves
// them into the outbox and writes them, without waiting for the read
// batch to end.
const ansMove = 64 << 10

// moveAnswers moves the answers in c.ans into the outbox (waiting for room
// like any appender); when that makes the read loop the outbox's flusher,
// its flush point writes them (c.owed).
func (c *serverConn) moveAnswers() error {
	a := c.ans
	if a == nil {
		return nil
	}
	a.B = c.ansB
	c.ans, c.ansB = nil, nil
	o := &c.out
	o.room(noCtx) // mu held from here
	if o.err != nil {
		err := o.err
		o.mu.Unlock()
		a.B = a.B[:0]
		outBufs.Put(a)
		return err
	}
	// No frame is begun while mu is free: the queue holds whole frames.
	switch {
	case o.cur == nil:
		o.cur = a
	case len(o.cur.B) == 0:
		if o.spare == nil {
			o.spare = o.cur
		} else {
			outBufs.Put(o.cur)
		}
		o.cur = a
	default:
		o.cur.B = append(o.cur.B, a.B...)
		a.B = a.B[:0]
		outBufs.Put(a)
	}
	lead := o.claim()
	o.mu.Unlock()
	c.owed = c.owed || lead
	return nil
}

func (c *serverConn) writeAnswerString(status, pid uint32, msg string, notRun, inReader bool) {
	if c.closed.Load() {
		return
	}
	buf := c.out.begin(wire.KindResponse)
	if notRun {
		buf = wire.AppendRefusalHeader(buf, status, pid, len(msg))
	} else {
		buf = wire.AppendResponseHeader(buf, status, pid, len(msg))
	}
	buf = append(buf, msg...)
	lead, err := c.out.end(buf)
	c.finishWrite(lead, err, status, inReader)
}

// pong answers a ping from the read loop; the flush is left to the read
// loop like an inline answer's. It reports false when the write failed and
// the connection is closed.
func (c *serverConn) pong(payload []byte) bool {
	return c.endOwed(append(c.out.begin(wire.KindPong), payload...))
}

// endOwed ends a frame the read loop began (c.out.begin) and leaves its
// flush to the read loop. It reports false when the write failed and the
// connection is closed.
func (c *serverConn) endOwed(buf []byte) bool {
	lead, err := c.out.end(buf)
	if err != nil {
		c.close(fmt.Errorf("write: %w", err))
		return false
	}
	c.owed = c.owed || lead
	return true
}

// finishWrite flushes when the caller became the outbox's flusher (or, in
// the read loop, leaves the flush to it) and accounts the answer.
func (c *serverConn) finishWrite(lead bool, err error, status uint32, inReader bool) {
	if lead && inReader {
		c.owed = true
	} else if lead {
		if ferr := c.out.flush(c.inflight.Load() > 1); err == nil {
			err = ferr
		}
	}
	if err != nil {
		c.close(fmt.Errorf("write: %w", err))
		return
	}
	if inReader {
		c.local.answered(status)
		return
	}
	c.s.stats.answered(status)
}
