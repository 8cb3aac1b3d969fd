package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// StreamOpener opens streams; generated clients of streaming methods
// need their Caller to be one. *Client and rpc/cluster's Client implement
// it.
type StreamOpener interface {
	// OpenStream opens a stream to the method with the given ordinal (see
	// Client.OpenStream).
	OpenStream(ctx context.Context, method uint32, init []byte) (*Stream, error)
}

var _ StreamOpener = (*Client)(nil)

// ErrNoStreams is returned by generated streaming methods whose Caller is
// not a [StreamOpener].
var ErrNoStreams = errors.New("rpc: the caller cannot open streams (not an rpc.StreamOpener)")

// OpenStream opens a stream to the method with the given ordinal, with
// init as its initial message (may be empty; only read, only during
// OpenStream), and returns it once the open frame is queued: it does not
// wait for the server. The open is the canonical kind 3 frame byte for
// byte (a request envelope whose promise_id is the stream id) unless ctx
// has a deadline, a cap or metadata, which it carries as a call does (see
// [Client.Call]; the handler's ctx gets them). Before the first open on
// a connection the client also sends its flow-control hello (a kind 9
// frame, which a canonical server ignores).
//
// Stream ids are odd, counted from 1, and never those of a stream still
// open on the connection; unary calls have their own promise ids. After
// about 2^31 opens on one connection the count wraps, and a stream may
// get the id of one canceled earlier whose server handler still runs: a
// zapcodec server ends it with status 503 (Recv returns it), and the
// next open gets another id.
//
// ctx bounds the whole stream: when it ends before the stream does, the
// client sends an error end with [StatusCanceled] (the server handler's
// ctx is canceled) and Send and Recv return ctx's error. To be told of
// that end the client puts a context.AfterFunc on a ctx that can end (3
// allocations per open). A stream that is
// neither read to its end nor canceled keeps its place (see
// [WithMaxStreams]) and its server handler, like an unread HTTP/2 stream:
// cancel the ctx of a stream you give up on. Errors:
// ctx's error (context.DeadlineExceeded, nothing sent, once its deadline
// has passed, even before its Done is closed), [ErrGoAway] after the
// server's go-away, [ErrTooManyStreams]
// ([WithMaxStreams]), frame.ErrFrameTooLarge for an open frame (init
// with what ctx adds) over the maximum frame size (nothing is sent), an
// error matching [ErrClosed].
//
// OpenStream returns by ctx's deadline whatever the server does, as
// [Client.Call] does: an open that cannot be queued (the connection's
// queue is full) is not sent; one whose write is blocked when ctx ends
// still goes out, written by another goroutine, followed by the
// StatusCanceled end, and OpenStream returns ctx's error.
//
// The server answers an open that no handler takes with an error end of
// status 404 ([IsNoSuchMethod] reports it, as it does a call's), and one beyond its stream limit or after its go-away with
// 503; a canonical server ends neither (Recv then waits until the
// connection closes).
//
// Stream interceptors ([WithStreamClientInterceptors]) run around the
// open; the stream observer ([WithStreamObserver]) sees its start and its
// end.
func (c *Client) OpenStream(ctx context.Context, method uint32, init []byte) (*Stream, error) {
	if c.streams.chain != nil {
		st, err := c.streams.chain(ctx, method, init)
		if st == nil && err == nil {
			err = ErrNoStreamFromInterceptor
		}
		return st, err
	}
	return c.openStream(ctx, method, init)
}

// openStream opens a stream on the wire: the innermost Streamer of the
// client's chain.
func (c *Client) openStream(ctx context.Context, method uint32, init []byte) (*Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.goAway.Load() {
		return nil, ErrGoAway
	}
	t := &c.streams
	// Under a chain of stream interceptors (ours, or a cluster's around
	// this client), the open is recorded on it (see ChainStreamer).
	oc, ctx := openOf(ctx)
	var r wire.Request
	if _, ok := callRequest(&r, ctx, ctx.Done(), method, 0, init); !ok {
		return nil, context.DeadlineExceeded
	}
	if n := 1 + wire.RequestLen(&r); n > c.out.max {
		// Never sent, as a Call's request that large: refused before the
		// stream takes an id and before it is copied into the queue,
		// whose buffer would keep its size until the next write.
		return nil, fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, c.out.max)
	}
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, c.notSent(err)
	}
	if len(t.m) >= t.max {
		t.mu.Unlock()
		return nil, ErrTooManyStreams
	}
	if t.m == nil {
		t.m = make(map[uint32]*Stream)
	}
	s := newStream(t, t.allocID(), method)
	s.ctx = ctx
	if w := wireFrom(ctx); w != nil && w.rmd != nil {
		s.claimReceiver(w.rmd, w.rown) // emptied at the open, as at a call's send
	}
	s.acct.start, s.acct.bytesOut = monoNow(), int64(len(init))
	t.m[s.id] = s
	t.count()
	var err error
	lead := false
	if !t.helloSent {
		// Queued before any open: the server reads it first.
		t.helloSent = true
		w := c.out.lock()
		err = t.hello(w)
		mark := c.out.taken
		lead = c.out.unlock()
		t.awaitHello(mark)
	}
	t.mu.Unlock()
	// The writes below are bounded by ctx, as a Call's are: a peer that
	// does not read holds OpenStream up until ctx ends, not for the write
	// timeout (flushCtx hands the rest of a blocked write over).
	err = c.out.flushIfCtx(ctx, lead, err)
	if err != nil {
		if err == ctx.Err() {
			return nil, t.unopened(s, err) // the hello still goes out
		}
		// The open was not sent: after a go-away, ErrGoAway.
		return nil, t.unopened(s, c.notSent(t.broken(err)))
	}
	// After the hello's flush, which this goroutine may lead: an observer
	// that calls runtime.Goexit must not leave the hello unwritten.
	c.clientStreamStart(s)
	buf, err := c.out.beginCtx(ctx, wire.KindStreamOpen)
	if err != nil {
		return nil, t.unopened(s, err)
	}
	if c.goAway.Load() {
		c.out.abandon(buf)
		return nil, t.unopened(s, ErrGoAway)
	}
	buf = appendCall(buf, ctx, method, s.id, 0, init)
	lead, err = c.out.end(buf)
	err = c.out.flushIfCtx(ctx, lead, err)
	// ctx ended during the write: the open goes out with the rest of it,
	// and the stream is canceled by the AfterFunc below (ctx is done: it
	// runs at once), its end following its open.
	handedOff := err != nil && err == ctx.Err()
	if err != nil && !handedOff {
		if errors.Is(err, frame.ErrFrameTooLarge) {
			return nil, t.unopened(s, err)
		}
		return nil, t.unopened(s, t.broken(err))
	}
	if ctx.Done() != nil {
		s.done = ctx.Done()
		s.setStop(context.AfterFunc(ctx, func() { s.clientCancel(noCtx, ctx.Err()) }))
	}
	if handedOff {
		return nil, err
	}
	if oc != nil {
		oc.record(s) // canceled unless the chain returns it to its caller
	}
	return s, nil
}

// clientCancel cancels a client's stream with err, which its Send and
// Recv return: an error end with StatusCanceled tells the server (its
// handler's ctx is canceled), and the stream leaves the set and reports
// its end. A stream that already ended (the server's end, an earlier
// cancel) is left as it is. ctx bounds the write of the end: noCtx in a
// goroutine of its own (the AfterFunc on the stream's ctx), the ctx of
// OpenStream's caller when that caller cancels (see openCtx.finish).
func (s *Stream) clientCancel(ctx context.Context, err error) {
	if s.abort(ctx, err, true, StatusCanceled, streamCancelText) {
		s.set.remove(s)
		s.mu.Lock()
		s.removed = true
		if s.unlisted != nil {
			close(s.unlisted)
		}
		s.mu.Unlock()
		s.stopCtx()
		s.clientEnd(StatusCanceled, err)
	}
}

// awaitRemoved waits until a client's cancel that is under way in another
// goroutine (the AfterFunc on the stream's ctx, as when an interceptor
// canceled the ctx it derived) took the stream out of the set, or ctx
// ends: a cancel that lost to it returns at once, and the caller of
// OpenStream whose chain canceled the stream could otherwise see it still
// counted (Client.Streams, ErrTooManyStreams) after the chain returned.
// The other cancel writes the end first, which may wait for room; ctx
// bounds this wait, as it bounds the write of an end of our own.
func (s *Stream) awaitRemoved(ctx context.Context) {
	s.mu.Lock()
	if !s.canceling || s.removed {
		s.mu.Unlock()
		return
	}
	if s.unlisted == nil {
		s.unlisted = make(chan struct{})
	}
	ch := s.unlisted
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// unopened takes a stream whose open was not sent out of the set and
// reports its end with err, which it returns.
func (t *streamSet) unopened(s *Stream, err error) error {
	t.remove(s)
	s.clientEnd(0, err)
	return err
}

// onClientNotRun handles a KindStreamNotRun frame on a client: the
// error end that follows it, if it is of the same stream, refuses an open
// the server did not run (see onClientEnd). Only the read loop reads and
// writes the mark.
func (t *streamSet) onClientNotRun(p []byte) {
	id, err := wire.ParseStreamNotRun(p)
	if err != nil {
		return
	}
	t.notRunID, t.notRun = id, true
}

// onStreamEnd handles a kind 5 frame on a client: the server's direction
// ended, and with it the stream (the server drops what we send after it).
func (t *streamSet) onClientEnd(p []byte) {
	e, err := wire.ParseStreamEnd(p)
	if err != nil {
		return
	}
	t.clientEnded(e, 0)
}

// onClientEndTooLarge is onClientEnd for an end over the client's
// maximum frame size (tl), read past, of which the read loop has the
// first bytes, head: an error end whose text is longer than the frame
// limit (a clean end is 4 bytes). The stream ends with the end's status
// and the start of its text (StatusError.BodyLen says the whole text's
// length); one that says no error status ends with tl's error. It
// reports false when head does not say the stream's id.
func (t *streamSet) onClientEndTooLarge(tl *frame.TooLargeError, head []byte) bool {
	e, err := wire.ParseStreamEnd(head)
	if err != nil {
		return false
	}
	if e.Status == 0 {
		// A clean end with bytes after it: no status to end with.
		e.Status, e.Message = StatusTooLarge, []byte(answerTooLarge(tl, "stream end").Error())
	} else if !utf8.Valid(e.Message) {
		// The start of the text may end inside a character.
		e.Message = e.Message[:textCut(e.Message, len(e.Message)-1)]
	}
	t.clientEnded(e, max(int(tl.Len)-1-8, 0))
	return true
}

// clientEnded ends the client's stream that the server's end e names;
// textLen, when not 0, is the length of the error end's whole text, of
// which e.Message is the start (see onClientEndTooLarge).
func (t *streamSet) clientEnded(e wire.StreamEnd, textLen int) {
	notRun := t.notRun && t.notRunID == e.ID
	t.notRun = false
	s := t.lookup(e.ID)
	if s == nil {
		return
	}
	t.remove(s)
	s.stopCtx() // before Recv can see the end
	// A refused trailer replaces the end as what Recv returns; the
	// observer sees that, with status 0, as for a call whose response
	// metadata is refused (not a 200 with an error).
	if e.Status == 0 {
		if err := s.giveTrailer(io.EOF); err != io.EOF {
			s.ended(err, true, err)
			s.clientEnd(0, err)
			return
		}
		s.ended(io.EOF, true, io.EOF)
		s.clientEnd(StatusOK, nil)
	} else {
		// A 504 may be the stream's deadline, which ended it on the
		// server first (see answerError).
		se := answerError(s.ctx, e.Status, e.Message, notRun)
		if textLen > len(se.Message) {
			se.BodyLen = textLen
		}
		end := error(se)
		err := s.giveTrailer(end)
		s.ended(err, true, err)
		status := e.Status
		if err != end {
			status = 0
		}
		s.clientEnd(status, err)
	}
}
