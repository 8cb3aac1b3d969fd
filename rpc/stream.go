package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Streams (docs/wire.md §9). A stream is opened by a client
// (kind 3, a request envelope whose promise_id is the stream id), carries
// messages both ways (kind 4) and ends with one end frame per direction
// (kind 5). See README.md "Streams" for the wire, flow control and limits.
//
// Flow control (zapcodec extension, kind 9): every stream has, in each
// direction, a window of bytes (a message counts its length plus 4) that
// the sender may have outstanding, that is sent and not yet granted back
// by the receiver; the receiver grants bytes back as its application
// consumes messages (one grant per half window). A sender may send while
// less than the window is outstanding, so a receiver buffers at most its
// window plus one message. Each side learns that its peer does flow
// control from the peer's hello (a kind 9 frame for stream id 0 carrying
// the peer's window): the client sends it just before its first open on a
// connection, a zapcodec server answers it at once. Towards a peer that
// sent no hello (a canonical peer) a sender sends without limit, as the
// canonical runtime does, and a receiver whose buffer is full stops
// reading the connection until the application drains it (the canonical
// behaviour: the only choice that neither loses messages nor grows memory
// past the window). Between two zapcodec peers it does not happen while
// the round trip is under helloWait: before the server's hello arrives a
// client sends at most preHelloWindow per stream, which a zapcodec server
// always buffers (see mayOwe and preHelloWindow). A client that stops
// waiting for the hello says so first (helloLate); a server's stream whose
// client sent its hello and no such notice, and then went past the window,
// is ended with an error (serverConn.streamOverrun) instead.

// StreamHandler serves one streaming method. init is the initial message
// of the open frame (empty when the client sent none); it is the handler's
// own copy. ctx is done when the peer cancels the stream (an error end),
// the connection closes, Shutdown's grace ends, or the deadline of the
// client's ctx passes (carried in the open like a call's, see
// [Client.Call]; an open whose deadline passed before the handler could
// run is refused with an error end 504 marked not run, so that the
// client's [Stream.Recv] error matches context.DeadlineExceeded, and the
// handler does not run);
// [CapFrom] and [MetadataFrom] read the open's cap and
// metadata ([WithCap], [WithMetadata] on the client's ctx). The stream's Send and
// Recv may be used until the handler returns, and not after: a Send still
// under way then (on a goroutine the handler left running) returns
// [ErrStreamClosed] or ctx's error, its message not sent, unless it was
// already queued.
//
// Returning nil ends the server's direction of the stream cleanly;
// returning an error ends it with that error (a *StatusError keeps its
// code and message, with the words of any wrapper around it, as a unary
// handler's does, see [Handler]; any other error is status 500 with its text, or
// "internal error" under [WithHideErrors], and is logged unless it is the
// error the stream's end gave the handler: its ctx's once that ended, as
// by the client's cancel, or Recv's for a closed connection; such an
// error ends the stream 504, [StatusDeadlineExceeded], when the stream's
// deadline passed first, and counts as [StatusCanceled] when the client
// went away), which the
// peer's [Stream.Recv] returns as a *[StatusError] (a canonical peer reads
// a clean end). A panic ends the stream with status 500 and is logged; the
// connection and the process go on. Messages the peer sends after the
// handler returned are dropped.
type StreamHandler func(ctx context.Context, init []byte, s *Stream) error

// Defaults of the stream options.
const (
	// DefaultStreamWindow is the flow-control window of a stream, per
	// direction, in bytes (each message counts its length plus 4): what a
	// receiver buffers at most, plus one message. 64 KiB, like HTTP/2's
	// initial window.
	DefaultStreamWindow = 64 << 10
	// DefaultMaxStreams is the number of streams open at once on one
	// connection: a server ends an open beyond it with status 503, a
	// client's OpenStream fails with [ErrTooManyStreams]. With the default
	// window a connection's stream buffers hold at most 8 MiB plus one
	// message per stream.
	DefaultMaxStreams = 128
)

// Stream errors, matched with errors.Is.
var (
	// ErrStreamClosed: Send or CloseSend after this side ended its
	// direction (CloseSend, or a handler's stream after it returned);
	// also Recv on a handler's stream after the handler returned. Its
	// text says which side closed the stream, not which direction: match
	// the variable, not the text.
	ErrStreamClosed = errors.New("rpc: stream closed on this side")
	// ErrTooManyStreams: the client already has the maximum number of
	// streams open on the connection ([WithMaxStreams]). Its text says
	// what most often fills them: streams given up without being read
	// to their end or canceled, which stay open.
	ErrTooManyStreams = errors.New("rpc: too many open streams on the connection (WithMaxStreams): a stream stays open until read to its end or its ctx is canceled")
)

// Texts of the error ends a server sends on its own.
const (
	streamNoHandler  = "no such stream method"
	streamTooMany    = "too many open streams"
	streamGoingAway  = "going away"
	streamShutdown   = "server shutting down"
	streamPanicText  = "stream handler panic"
	streamExitText   = "stream handler exited (runtime.Goexit)"
	streamCancelText = "canceled"
	// streamDeflated: an open whose payload is marked compressed (400);
	// streams are never compressed.
	streamDeflated = "compressed stream open: streams are not compressed"
	// streamOverrunText: a client that keeps our windows went past one
	// (400).
	streamOverrunText = "stream flow-control window exceeded"
	// streamIDInUse: an open that reuses the id of a stream its client
	// canceled, whose handler still runs (503).
	streamIDInUse = "stream id still in use by a canceled stream"
	// streamDeadlineText: an open whose deadline passed before its
	// handler could run (504).
	streamDeadlineText = "deadline exceeded before the stream's handler ran"
)

// Stream is one stream, on either side. One goroutine may Send (and
// CloseSend) while another Recvs; Send is not safe for concurrent use with
// itself, nor Recv with itself. A CloseSend made while a Send of another
// goroutine is under way waits for that Send to return, which may wait
// for the peer's window: to stop a Send that waits so, cancel the
// stream's ctx (on a client) or return from the handler.
type Stream struct {
	set        *streamSet
	id, method uint32
	// ctx bounds Send's waits: the handler's ctx on a server, the ctx
	// given to OpenStream on a client.
	ctx context.Context
	// done is ctx's Done on a client whose ctx can end (nil otherwise):
	// Recv looks at it first (see cancelSeen).
	done <-chan struct{}
	stop func() bool // client: stops the AfterFunc on ctx; on mu
	// stopped: the stream ended, the AfterFunc on a client's ctx is (to
	// be) stopped, the end of a handler's ctx wakes nothing; on mu.
	stopped bool
	// A client's cancel (clientCancel), on mu: canceling is set when one
	// decides the stream's end, removed once it took the stream out of
	// the set (it writes the end first, so that the id is not reused
	// before it); unlisted, made only by a cancel that lost and must wait
	// for that (see awaitRemoved), is closed then.
	canceling, removed bool
	unlisted           chan struct{}

	capv, mdv []byte // server: the open's cap and metadata (copies)

	// Server: the handler and its initial message, from the open to the
	// worker that runs it (runStream).
	h    StreamHandler
	init []byte

	// Server: the handler's ctx is the stream itself, seen as a
	// streamCtx (stream_ctx.go), so that an open allocates no ctx.
	dl      int64                         // its deadline (monoNow), 0 none
	ctxDone chan struct{}                 // on cmu: closed when it ends; made at the first Done
	doneP   atomic.Pointer[chan struct{}] // &ctxDone once made (Done's fast path)
	ctxEnd  atomic.Bool                   // ctxErr is set (read without cmu)
	cmu     sync.Mutex
	ctxErr  error       // on cmu: why it ended, nil while it has not
	dtimer  *time.Timer // on cmu: ends it at dl
	afs     []afterFunc // on cmu: callbacks of ctxs derived from it (AfterFunc)
	afID    uint32      // on cmu: the ids of afs
	byConn  bool        // on cmu: it ended with the connection's context, which has a cause (see streamCtx.Value)

	wmu sync.Mutex // orders this stream's frames: messages before the end
	// writing counts a handler's Send, CloseSend and Recv (its grant)
	// between their check of ctx and the end of their write (server
	// only): the ctx's end interrupts the connection's write then (see
	// interruptWrite). A count, not a flag: a Recv's grant may be written
	// while another goroutine's Send is.
	writing atomic.Int32

	mu   sync.Mutex
	cond sync.Cond // on mu: a message, an end, room, credit or an abort
	// Receive side.
	q       []byte // queued messages, each [u32 len][bytes]; read from qh
	qh      int
	qBytes  int64 // accounted bytes queued (len+4 each)
	unacked int64 // accounted bytes consumed and not yet granted back
	rerr    error // what Recv returns once the queue is empty and rdone
	rdone   bool  // no message will be queued any more
	sdone   bool  // send side: no message may be sent any more (beside rdone: one word)
	// endOwed: sdone was set by a CloseSend whose end was not queued (its
	// ctx ended while the queue was full): the end is still to be sent,
	// by endStream or abort.
	endOwed bool
	// The stream's last grant, on the outbox's mu (see streamSet.grant):
	// grantAt is 1 + its offset in the outbox's queue (0: none),
	// grantMark the outbox's takes (outbox.taken) when it was queued.
	// While the writer has taken no queue since, the grant waits there.
	grantAt   int32
	grantMark uint64
	// Send side.
	out  int64 // accounted bytes sent and not granted back by the peer
	serr error // what Send returns once sdone

	// Response metadata (the trailer), on mu. Server: tmd, the pairs its
	// handler set (SetResponseMetadata), sent with its end. Client: rmd,
	// the receiver of WithResponseMetadata on the open's ctx (nil: not
	// asked), and what the trailer frame brought for it: tmd, a copy, or
	// terr, its refusal, Recv's error at the end; rown and rgen, the
	// receiver's owner and the open's turn in it (see rmdOwner).
	tmd  []byte
	rmd  *Metadata
	terr error
	rown *rmdOwner
	rgen uint64

	acct streamAcct  // on mu: counts for the observer and Stats (stream_observe.go)
	taps []StreamTap // set before the stream is used (stream_intercept.go)
}

// streamSet is a connection's streams, on a Client or a serverConn.
type streamSet struct {
	out    *outbox
	cl     *Client     // set on a client
	sc     *serverConn // set on a server connection
	window int64       // our receive window per stream
	max    int

	// limit is how many bytes a stream's receive buffer takes before the
	// read loop waits for room: the window, and on a server at least
	// preHelloWindow, which a zapcodec client may send before it has our
	// hello (see Send).
	limit int64

	// The peer does flow control: it sent its hello, with its window.
	peerFC atomic.Bool
	// creditWaits counts the waits of Sends for room in the peer's
	// window (for tests; beside peerFC, in what would be padding).
	creditWaits atomic.Int32
	peerWindow  atomic.Int64
	// client: no hello came within helloWait of ours, or a frame of a
	// stream came before it, so the server is taken for a canonical one
	// and sends are no longer held to preHelloWindow.
	noHello atomic.Bool
	// server: the client sent the no-window notice (it took us for a
	// canonical server, our hello having come late): its messages may go
	// past our windows, which a full stream then takes as a canonical
	// client's (the read loop waits for room), not as a violation.
	peerNoWindow atomic.Bool
	// helloChecks counts the looks of awaitHello's timer, helloEnds the
	// looks after which it set no other (for tests).
	helloChecks, helloEnds atomic.Int32

	n        atomic.Int32  // len(m), for Streams and the balancers that read it per call
	chain    Streamer      // client: the stream interceptors around openStream; nil: none
	stalls   atomic.Uint64 // times the read loop waited for a full stream's room
	readGone atomic.Bool   // the peer sent its last frame: no grant will come
	stalling atomic.Int32  // the read loop waits for a stream's room (see put)

	// client, read loop only: the stream id of the KindStreamNotRun frame
	// just read (notRun set), which marks the error end that follows it
	// as a refusal of an open the server did not run (onClientEnd).
	notRunID uint32
	notRun   bool

	mu        sync.Mutex
	m         map[uint32]*Stream
	next      uint32 // client: the next stream id to try (odd)
	helloSent bool   // client: our hello is queued; server: answered
	err       error  // the connection is gone: no new stream
	graceAt   int64  // server: when Shutdown first found streams open after go-away (monoNow)
	graceDone bool   // server: Shutdown ended the streams
	// server: the connection's context has its AfterFunc that ends the
	// streams' ctxs (serverConn.ctxEndsStreams).
	ctxWatched bool
}

func (t *streamSet) setup(out *outbox, window, max int) {
	t.out, t.window, t.max, t.next = out, int64(window), max, 1
	if t.window <= 0 {
		t.window = DefaultStreamWindow
	}
	t.limit = t.window
	if t.max <= 0 {
		t.max = DefaultMaxStreams
	}
}

func newStream(t *streamSet, id, method uint32) *Stream {
	s := &Stream{set: t, id: id, method: method}
	s.cond.L = &s.mu
	return s
}

// ID returns the stream id (the open frame's promise_id).
func (s *Stream) ID() uint32 { return s.id }

// Method returns the method ordinal the stream was opened for.
func (s *Stream) Method() uint32 { return s.method }

// Context returns the ctx that bounds the stream: the handler's ctx on a
// server, OpenStream's ctx on a client.
func (s *Stream) Context() context.Context { return s.ctx }

// Send sends msg (a ZAP message, may be empty) on the stream. msg is only
// read, and only during Send. Send blocks while the peer's flow-control
// window is used up (a zapcodec peer; towards a canonical peer it never
// waits for the window) or the connection's write queue is full, and
// returns ctx's error when the stream's ctx has ended or ends first: then
// nothing of msg was sent (nor counted by the observer and Stats). On a
// client, Send returns by ctx's end whatever the server does: when ctx
// ends while Send writes the connection's queue (its message in it),
// another goroutine writes the rest and Send returns nil, its message
// sent. So does a handler's Send, whose ctx's end interrupts the write
// (over TLS, or a wrapper not known to let a cut write go on, it is
// bounded by the write timeout alone). A message goes
// on the wire whole or not at all: a write that breaks midway (the peer
// took no byte for the write timeout, or took the write slower than its
// bound in all: [WithWriteTimeout]) closes the connection, and every
// stream and call on it fails. It returns
// [ErrStreamClosed] after CloseSend (or, in a handler, on a stream whose
// handler returned), io.EOF after the peer ended the stream cleanly (on a
// client: the server's handler returned; Recv tells the rest), the
// peer's *StatusError after an error end, an error matching [ErrClosed]
// (and wrapping what broke it) when the connection is gone, and frame.ErrFrameTooLarge (the stream is
// unaffected) for a message over the maximum frame size. Once warm, Send
// allocates nothing.
func (s *Stream) Send(msg []byte) error {
	if s.taps != nil {
		if err := s.tapSend(msg); err != nil {
			return err
		}
	}
	cost := int64(len(msg)) + wire.StreamMsgOverhead
	t := s.set
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	for {
		if s.sdone {
			err := s.serr
			s.mu.Unlock()
			return err
		}
		if err := s.ctx.Err(); err != nil {
			// Checked before the window too: a message sent after the
			// ctx ended would go out although its caller gave up (a
			// handler's ctx that ends wakes the wait below through the
			// AfterFunc streamOpen put on it).
			s.mu.Unlock()
			return err
		}
		if t.mayOwe(s.out) {
			if t.sc != nil {
				s.writing.Add(1) // after the check of ctx above
			}
			break
		}
		if t.readGone.Load() {
			// No grant can come any more.
			s.mu.Unlock()
			return errPeerClosed
		}
		t.creditWaits.Add(1)
		s.cond.Wait()
	}
	s.out += cost
	s.countOut(len(msg))
	s.mu.Unlock()
	err := t.writeFrame(s.ctx, wire.KindStreamMsg, s.id, msg, true)
	if t.sc != nil {
		s.writing.Add(-1)
	}
	if err != nil && (errors.Is(err, frame.ErrFrameTooLarge) || err == s.ctx.Err()) {
		s.mu.Lock()
		s.out -= cost // not sent
		s.uncountOut(len(msg))
		s.mu.Unlock()
	}
	return err
}

// CloseSend ends this side's direction of the stream cleanly (a kind 5
// frame with the id alone, as the canonical runtime writes it); every
// message sent before it reaches the peer first. A second CloseSend, or
// one after the peer ended the stream, does nothing and returns nil (on
// a client whose ctx ended first, ctx's error). In a handler it is
// optional: returning ends the stream.
//
// Like Send, it is bounded by the stream's ctx: when ctx has ended, or
// ends while it waits for room in the connection's write queue, the end
// is not queued and it returns ctx's error (on a client the stream then
// ends canceled, so the server never reads a clean end of a direction
// its sender gave up on; in a handler the end is sent when the handler
// returns, with its result, the trailer just before it); when ctx ends
// while it writes the queue, another goroutine writes the rest and it
// returns nil, its end sent (a handler's over TLS is bounded by the
// write timeout alone). Either way no Send follows it. A handler's
// CloseSend sends the trailer it set ([SetResponseMetadata]) just before
// its end; one above the server's metadata limit makes the end a 500 and
// CloseSend returns the error.
func (s *Stream) CloseSend() error {
	s.cancelSeen()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.sdone {
		err := s.serr
		s.mu.Unlock()
		if s.done != nil && err != nil && err == s.ctx.Err() {
			// The client's cancel (its ctx's end) ended the direction,
			// not a CloseSend or the server: ctx's error, whether the
			// AfterFunc on ctx or cancelSeen ran the cancel.
			return err
		}
		return nil
	}
	s.sdone, s.serr = true, ErrStreamClosed
	s.cond.Broadcast()
	if err := s.ctx.Err(); err != nil {
		// Checked as Send checks it: a clean end after the ctx ended
		// would tell the peer that this direction is complete although
		// its sender gave up (an upload cut short by its deadline, read
		// as whole), when the cancel's goroutine has not yet run. The
		// end owed is the cancel's error end on a client, the handler's
		// result on a server (endStream).
		s.endOwed = true
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	t := s.set
	if t.sc != nil {
		s.writing.Add(1) // after the check of ctx above
	}
	var err error
	if t.sc != nil {
		err = s.closeSendTrailer()
	}
	if err == nil {
		err = t.writeFrame(s.ctx, wire.KindStreamEnd, s.id, nil, false)
	}
	if t.sc != nil {
		s.writing.Add(-1)
	}
	if err != nil && err == s.ctx.Err() {
		// Not queued (see writeFrame): the peer must still get an end.
		s.mu.Lock()
		s.endOwed = true
		s.mu.Unlock()
	}
	return err
}

// Recv appends the next message to buf and returns the extended slice. At
// a clean end of the peer's direction it returns io.EOF, after an error
// end the peer's *[StatusError] (see [StreamHandler]); messages that
// arrived before an end, or before the connection closed, are all
// returned first. It blocks until a message or the end arrives; a
// client's Recv returns ctx's error once OpenStream's ctx has ended, at
// once, the messages still queued dropped (the stream is canceled then
// if it was not yet), unless the server's end or the connection's close
// came before the ctx's end: those keep their messages and end. A
// handler's returns its ctx's error once that ends (the call's deadline,
// the server's base context) and no message is queued; in a goroutine a
// handler left running, once the handler has returned, it drops the
// messages still queued and returns [ErrStreamClosed] (or the peer's end,
// when that came first). A Recv whose grant to the peer (see
// [WithStreamWindow]) makes it write the connection's queue returns by
// its ctx's end, as Send does (over TLS a handler's is bounded by the
// write timeout alone): another goroutine writes the rest and Recv
// returns the message it took. Once warm, Recv allocates nothing (buf
// with room for the message). On a client whose stream asked for its
// trailer ([WithResponseMetadata]), the end's Recv returns an error
// matching [ErrResponseMetadata] in place of io.EOF or the error end
// when the trailer was refused (over the client's limit, not whole
// pairs).
//
// The message is copied into buf: the bytes returned are the caller's,
// never the stream's, and stay valid until the caller reuses buf (a Recv
// into buf[:0] overwrites the message the previous one returned there).
func (s *Stream) Recv(buf []byte) ([]byte, error) {
	s.cancelSeen()
	s.mu.Lock()
	for s.qh == len(s.q) {
		if s.rdone {
			err := s.rerr
			s.q = putQueue(s.q)
			s.mu.Unlock()
			return buf, err
		}
		if s.set.cl == nil {
			// A handler's ctx ended (its deadline, the server's base
			// context; a cancel by the client ends the stream itself):
			// its AfterFunc wakes this wait. Not when the connection
			// closed (close marks it before it cancels the ctx): the
			// stream's end, ErrClosed, follows at once.
			if err := s.ctx.Err(); err != nil && !s.set.sc.closed.Load() {
				s.mu.Unlock()
				return buf, err
			}
		}
		s.cond.Wait()
	}
	n := int(binary.LittleEndian.Uint32(s.q[s.qh:]))
	at := s.qh + wire.StreamMsgOverhead
	n0 := len(buf)
	buf = append(buf, s.q[at:at+n]...)
	s.qh = at + n
	if s.qh == len(s.q) {
		s.q, s.qh = s.q[:0], 0
		if int64(cap(s.q)) > 2*s.set.limit {
			// A large message grew it: an idle stream holds no more than
			// its window's worth.
			s.q = putQueue(s.q)
		}
	}
	cost := int64(n) + wire.StreamMsgOverhead
	t := s.set
	full := s.qBytes >= t.limit
	s.qBytes -= cost
	var grant int64
	if !s.rdone && t.peerFC.Load() {
		s.unacked += cost
		if s.unacked >= t.window/2 {
			grant, s.unacked = s.unacked, 0
		}
	}
	if full {
		s.cond.Broadcast() // the read loop may wait for room
	}
	s.mu.Unlock()
	if grant > 0 {
		// A handler's write of the grant is interrupted at its ctx's end
		// (interruptWrite), as its Send's is; a client's is bounded by
		// its ctx (see flush).
		if t.sc != nil {
			s.writing.Add(1)
		}
		t.grant(s.ctx, s, grant)
		if t.sc != nil {
			s.writing.Add(-1)
		}
	}
	if s.taps != nil {
		if err := s.tapRecv(buf[n0:]); err != nil {
			return buf[:n0], err
		}
	}
	return buf, nil
}

// cancelSeen is a client's Recv or CloseSend looking at the stream's ctx
// first: when it has ended, the stream is canceled now, as the AfterFunc
// on ctx would (it may not have run yet: it runs on a goroutine of its
// own), so that Recv returns ctx's error at once, not the messages still
// queued in the meantime, and CloseSend ctx's error. It does nothing to a
// stream whose ctx cannot end or has not, that had ended (the server's
// end, the connection's close: Recv returns its messages and end, as
// after a cancel that comes later) or was canceled already. The end's
// write is bounded by ctx, which has ended: if it cannot go at once,
// another goroutine writes it.
func (s *Stream) cancelSeen() {
	if s.done == nil {
		return
	}
	select {
	case <-s.done:
		s.clientCancel(s.ctx, s.ctx.Err())
	default:
	}
}

// put queues a message that arrived (read loop). When the stream's buffer
// is full (a peer that ignores our window) it returns true without
// queueing unless wait is set, in which case it waits for room first. A
// message for a stream whose receive side has ended is dropped.
func (s *Stream) put(msg []byte, wait bool) (full bool) {
	s.mu.Lock()
	for !s.rdone && s.qBytes >= s.set.limit {
		if !wait {
			s.mu.Unlock()
			return true
		}
		// While the read loop waits, no grant is read: senders on this
		// connection stop waiting for credit (stallBegin), or a handler
		// that must send before it reads again would never read.
		s.mu.Unlock()
		s.set.stallBegin()
		s.mu.Lock()
		for !s.rdone && s.qBytes >= s.set.limit {
			s.cond.Wait()
		}
		s.set.stalling.Add(-1)
	}
	if !s.rdone {
		if s.q == nil {
			s.q = getQueue()
		}
		if s.qh > 0 && cap(s.q)-len(s.q) < len(msg)+wire.StreamMsgOverhead {
			s.q = s.q[:copy(s.q, s.q[s.qh:])]
			s.qh = 0
		}
		s.q = binary.LittleEndian.AppendUint32(s.q, uint32(len(msg)))
		s.q = append(s.q, msg...)
		s.qBytes += int64(len(msg)) + wire.StreamMsgOverhead
		s.countIn(len(msg))
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	return false
}

// queues holds the receive queues of ended streams: a stream takes one
// for its first message and gives it back when its receive side is done
// and drained, so a connection that opens stream after stream does not
// grow a queue from nothing each time. A handler's trailer is built in
// one too (setTrailer), given back once written.
var queues = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptQueue: a queue grown above this (a large window) is not kept.
const maxKeptQueue = 4 << 20

func getQueue() []byte {
	p := queues.Get().(*[]byte)
	q := *p
	*p = nil
	queues.Put(p) // the box goes back empty: boxes are not allocated per stream
	return q[:0]
}

func putQueue(q []byte) []byte {
	if q != nil && cap(q) <= maxKeptQueue {
		p := queues.Get().(*[]byte)
		if *p == nil {
			*p = q[:0]
		}
		queues.Put(p)
	}
	return nil
}

// Before a zapcodec client has the server's hello it cannot tell a
// zapcodec server, which reads at most its window per stream before it
// stops reading the connection, from a canonical one, which never says.
// So it sends at most preHelloWindow per stream (which every zapcodec
// server takes: limit) until it knows. A zapcodec server answers our
// hello as it reads it, before any frame of the streams we open after it:
// a frame of a stream that comes first tells the server is canonical
// (canonicalEvidence). A canonical server that sends nothing on a stream
// before it has read all of it says nothing, and cannot be asked: it
// ignores every addition WIRE.md §8 allows, and a request, which it
// would answer, is not one. The client takes it for a canonical one once
// no hello came helloWait after a look that found ours gone from the
// write queue (awaitHello): the hello comes a round trip after ours
// leaves, so it is awaited while the round trip is under helloWait,
// however long ours waited in the queue. One that comes
// later is taken as it comes (onWindow): its window holds from then on,
// and until then the client sent without one, which the server takes as
// a canonical client's sends (its read loop waits for room).
const preHelloWindow = 16 << 10

var (
	// helloWait: a variable for tests.
	helloWait = time.Second
	// maxHelloWaits bounds how many helloWaits awaitHello waits for our
	// hello to leave the queue (a connection whose writes stall that
	// long fails its write timeout).
	maxHelloWaits = 60
	// helloAfter runs f after d, as time.AfterFunc: a variable for tests,
	// which run awaitHello's looks themselves.
	helloAfter = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
)

// firstHelloLook: awaitHello first looks whether our hello left the
// queue helloWait/firstHelloLook after queueing it, so a hello that left
// at once (a connection that keeps up) is decided that plus helloWait
// after it was queued. The looks while it is still queued are twice as
// far apart each time, up to helloWait, so a hello that waited q in the
// queue is found gone at most q plus the first step later (and at most
// helloWait later).
const firstHelloLook = 64

// mayOwe reports whether a sender with out bytes outstanding on a stream
// may send now.
func (t *streamSet) mayOwe(out int64) bool {
	switch {
	case t.stalling.Load() > 0:
		return true // the read loop waits for room: no grant can be read
	case t.peerFC.Load():
		return out < t.peerWindow.Load()
	case t.cl == nil || t.noHello.Load():
		return true // a canonical peer: no window
	default:
		return out < preHelloWindow
	}
}

// awaitHello is started by a client when it queues its hello; mark is
// the outbox's takes (outbox.taken) then: ours leaves with the next take.
// It looks whether ours left, first helloWait/firstHelloLook later, then
// twice as long after each look that finds it still queued (at most
// helloWait apart); helloWait after the look that finds it gone, with no
// hello come, the server is a canonical one. The round trip gets the whole
// of helloWait from when ours left (give or take the last step): it used
// to be counted from when ours was queued, so a hello that waited 0.9 s
// behind a blocked write (the first look found it gone) left the round
// trip 0.1 s. After maxHelloWaits helloWaits of looks that find ours still
// queued, the server is taken for canonical whatever the queue holds. It
// ends at the first look after the connection closed: its timer would
// otherwise keep the closed client in memory until then. The variables
// tests set (helloWait, maxHelloWaits, helloAfter) are read here, once:
// the looks run in timers' goroutines, which a test that sets them later
// does not wait for.
func (t *streamSet) awaitHello(mark uint64) {
	wait, after := helloWait, helloAfter
	step := max(wait/firstHelloLook, 1)
	limit := time.Duration(maxHelloWaits) * wait
	var waited time.Duration
	left := false
	var look func()
	look = func() {
		t.helloChecks.Add(1)
		if t.peerFC.Load() || t.noHello.Load() || t.closed() {
			t.helloEnds.Add(1)
			return
		}
		if !left {
			waited += step
			if t.out.takenSince(mark) {
				// Ours left since the last look: the round trip's wait
				// starts here.
				left = true
				after(wait, look)
				return
			}
			if waited < limit {
				step = min(2*step, wait)
				after(step, look)
				return
			}
		}
		t.helloLate()
		t.helloEnds.Add(1)
	}
	after(step, look)
}

// helloLate takes the server for a canonical one, no hello having come in
// time (awaitHello), and tells it so first: the no-window notice goes in
// the queue before any message that may go past the server's windows. A
// zapcodec server whose hello was merely late then takes such messages as
// a canonical client's (its read loop waits for room) rather than as a
// peer that breaks the windows it agreed to, whose stream it ends (see
// serverConn.streamOverrun). A canonical server ignores the notice.
func (t *streamSet) helloLate() {
	w := t.out.lock()
	err := w.WriteFrame(wire.KindStreamWindow, wire.AppendStreamNoWindow(nil))
	lead := t.out.unlock()
	t.canonicalPeer()
	if err = t.out.flushIf(lead, err); err != nil {
		t.broken(err)
	}
}

// canonicalEvidence notes a frame of a stream from a server whose hello
// has not come: a zapcodec server's comes first, so the server is a
// canonical one. Called by a client's read loop.
func (t *streamSet) canonicalEvidence() {
	if !t.peerFC.Load() && !t.noHello.Load() {
		t.canonicalPeer()
	}
}

// canonicalPeer takes the server for a canonical one: sends held to
// preHelloWindow go on, without a window.
func (t *streamSet) canonicalPeer() {
	t.noHello.Store(true)
	t.wakeSenders()
}

// stallBegin marks the read loop as waiting for room and wakes every
// stream's senders waiting for credit (see put).
func (t *streamSet) stallBegin() {
	t.stalls.Add(1)
	t.stalling.Add(1)
	t.wakeSenders()
}

// wakeSenders wakes every stream's senders waiting for credit.
func (t *streamSet) wakeSenders() {
	t.mu.Lock()
	for _, s := range t.m {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
	t.mu.Unlock()
}

// ended records the peer's end of its direction: Recv returns err once
// the queue is empty. closeSend also ends our direction (a client whose
// server ended: Send then returns sendErr).
func (s *Stream) ended(err error, closeSend bool, sendErr error) {
	s.mu.Lock()
	if !s.rdone {
		s.rdone, s.rerr = true, err
	}
	if closeSend {
		if !s.sdone {
			s.sdone, s.serr = true, sendErr
		}
		s.endOwed = false // the peer is done with the stream: no end of ours follows
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

// abort ends both directions locally with err (Send and Recv return it;
// with drop, Recv returns it at once instead of after the queued
// messages, unless the stream had ended: one the server ended keeps its
// end and messages for Recv when a cancel comes after it), cancels the
// handler's ctx and, when status is not 0, sends an error end with
// status and text: on a server when its direction was open (or its
// CloseSend's end was not queued: endOwed), on a client when either was (a server's handler whose client half-closed still
// learns of the cancel). It reports whether it ended anything. ctx
// bounds the end's write (see writeEnd): noCtx where the caller may wait
// for it.
func (s *Stream) abort(ctx context.Context, err error, drop bool, status uint32, text string) bool {
	s.mu.Lock()
	changed := !s.rdone || !s.sdone
	// Whether the peer may still be at work on the stream: a client's
	// cancel reaches the server while either direction is open (after
	// CloseSend the server's handler may still be sending, or reading
	// what came before the end); a server ends only its own direction.
	open := !s.sdone || s.endOwed
	if s.set.cl != nil {
		open = changed
	}
	if !s.rdone {
		s.rdone, s.rerr = true, err
	}
	if drop && changed {
		s.q, s.qh, s.qBytes = putQueue(s.q), 0, 0
		s.rerr = err
	}
	send := status != 0 && open
	if send {
		// On a client only clientCancel sends an end here: it is the
		// cancel that decided the end (see awaitRemoved).
		s.canceling = s.set.cl != nil
		s.endOwed = false // this end is the one owed
		if s.acct.status == 0 {
			s.acct.status = status
		}
	}
	if !s.sdone {
		s.sdone, s.serr = true, err
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	if s.set.sc != nil {
		s.endCtx(context.Canceled)
	}
	if send {
		// The end follows the frame of a Send (or CloseSend) under way,
		// which holds wmu: wait for it to be queued. None follows it
		// (sdone is set), so the end is written without wmu: a Send or
		// CloseSend that comes meanwhile takes wmu, sees sdone and
		// returns at once, not once the end's wait for room and its
		// write (for the write timeout, to a peer that does not read)
		// are over.
		s.wmu.Lock()
		//lint:ignore SA2001 the lock is taken only to wait for the Send that holds it
		s.wmu.Unlock()
		s.set.writeEnd(ctx, s.id, status, text)
	}
	return changed
}

// stopCtx stops the stream's AfterFunc on its ctx (a client's), or the
// wake of its waits at its ctx's end (a handler's, see ctxEnded): the
// stream is over. Safe against OpenStream setting it (see setStop).
func (s *Stream) stopCtx() {
	s.mu.Lock()
	f := s.stop
	s.stop, s.stopped = nil, true
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// setStop records the AfterFunc OpenStream put on the stream's ctx, or
// stops it when the stream already ended (the read loop may see the
// server's end before OpenStream returns).
func (s *Stream) setStop(f func() bool) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		f()
		return
	}
	s.stop = f
	s.mu.Unlock()
}

// credit takes a grant of n bytes from the peer.
func (s *Stream) credit(n uint32) {
	s.mu.Lock()
	s.out = max(s.out-int64(n), -1<<40) // a hostile peer's grants cannot wrap it
	s.cond.Broadcast()
	s.mu.Unlock()
}

// writeFrame writes a stream frame [id][msg] of kind. With isMsg, a ctx
// error (ctx ended while the queue was full: nothing sent) and a frame
// too large are the caller's; any other error broke the connection. A
// frame that was queued goes out. On a client, the caller's write of the
// queue is bounded by ctx too, as a Call's is: when ctx ends during it,
// another goroutine writes the rest (see flushCtx) and writeFrame returns
// nil (the frame is sent). A handler's writes set no deadline for ctx (a
// ctx would arm one per write; the server's scans bound them, see
// writeWatched): they end by the write timeout, or by ctx's end, whose
// past deadline (Stream.interruptWrite) hands the rest of the write to
// another goroutine.
func (t *streamSet) writeFrame(ctx context.Context, kind byte, id uint32, msg []byte, isMsg bool) error {
	if n := 1 + 4 + len(msg); n > t.out.max {
		// Refused before it is copied into the queue (end would refuse
		// it after, leaving the queue's buffer grown to its size).
		return fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, t.out.max)
	}
	buf, err := t.out.beginCtx(ctx, kind)
	if err != nil {
		return err
	}
	buf = binary.LittleEndian.AppendUint32(buf, id)
	buf = append(buf, msg...)
	lead, err := t.out.end(buf)
	if err = t.flush(ctx, lead, err); err != nil {
		if isMsg && errors.Is(err, frame.ErrFrameTooLarge) {
			return err
		}
		return t.broken(err)
	}
	return nil
}

// writeEnd writes an end frame: clean when status is 0, else an error end.
// With a ctx that can end (a client's cancel run by the caller of
// OpenStream, see openCtx.finish), the error end is a control frame, not
// held back by the queue bound (one per stream), and its write is bounded
// by ctx as a Send's is: when ctx ends during it, another goroutine
// writes the rest.
func (t *streamSet) writeEnd(ctx context.Context, id, status uint32, text string) {
	if status == 0 {
		t.writeFrame(noCtx, wire.KindStreamEnd, id, nil, false)
		return
	}
	if n := len(text); n > MaxErrorMessage {
		text = text[:messageCut(text)]
	}
	if ctx.Done() != nil {
		err := t.out.lock().WriteFrame(wire.KindStreamEnd, wire.AppendStreamEndError(nil, id, status, text))
		if err = t.flush(ctx, t.out.unlock(), err); err != nil {
			t.broken(err)
		}
		return
	}
	buf := t.out.begin(wire.KindStreamEnd)
	buf = wire.AppendStreamEndError(buf, id, status, text)
	err := t.out.endFlush(buf)
	if err != nil {
		t.broken(err)
	}
}

// grant sends the peer a window update of n bytes for stream s. A
// control frame: not held back by the queue bound (grants follow bytes
// received). While s's last grant still waits in the queue (the writer
// has not taken it: a peer that does not read), n is added to that one
// instead, so a peer that sends and never reads makes us queue one grant
// per stream, not one per half window it sent. On a client, the write of
// the queue that the grant may make the caller do is bounded by the
// stream's ctx, as Send's is: when ctx ends during it, another goroutine
// writes the rest. More than one frame carries (maxGrant: a message over
// 2 GiB) goes in several.
func (t *streamSet) grant(ctx context.Context, s *Stream, n int64) {
	o := t.out
	w := o.lock()
	var err error
	for n > 0 && !s.addToGrant(o, n) {
		g := min(n, maxGrant)
		at := o.queued() // where the frame goes: no frame is begun while we hold mu
		var b [8]byte
		if err = w.WriteFrame(wire.KindStreamWindow, wire.AppendStreamWindow(b[:0], s.id, uint32(g))); err != nil {
			break
		}
		s.grantAt, s.grantMark = 0, o.taken
		if at < maxGrantAt {
			s.grantAt = int32(at) + 1
		}
		n -= g
	}
	if err = t.flush(ctx, o.unlock(), err); err != nil {
		t.broken(err)
	}
}

// maxGrant bounds the bytes one grant frame carries.
const maxGrant = 1 << 31

// maxGrantAt bounds the queue offset of a grant that later grants may be
// added to (Stream.grantAt, an int32): one further on (behind a frame of
// over 2 GiB) is not added to.
const maxGrantAt = 1<<31 - 1

// addToGrant adds n bytes to s's last grant when that still waits in o's
// queue, and reports whether it did: it does while the writer has taken
// no queue since (frames leave the queue only so, or when the stream
// breaks) and the sum fits in a grant. Called with o's mu held.
func (s *Stream) addToGrant(o *outbox, n int64) bool {
	if s.grantAt == 0 || s.grantMark != o.taken || o.err != nil {
		return false
	}
	// The frame: [u32 length][kind][u32 id][u32 bytes].
	p := o.cur.B[int(s.grantAt)-1+frameHeader+4:]
	sum := int64(binary.LittleEndian.Uint32(p)) + n
	if sum > maxGrant {
		return false
	}
	binary.LittleEndian.PutUint32(p, uint32(sum))
	return true
}

// flush is the write of a stream's frame that made its caller the
// flusher (lead), with err the frame's: on a client bounded by the
// stream's ctx (when it ends, another goroutine writes the rest and the
// frame counts as sent: nil); on a server too, where ctx's end
// interrupts the write (Stream.interruptWrite) rather than a deadline
// of ctx's, but over a connection whose cut writes cannot go on (TLS) by
// the write timeout alone.
func (t *streamSet) flush(ctx context.Context, lead bool, err error) error {
	if t.cl == nil && !t.out.resumable {
		// A server's write that a deadline would tear (TLS): bounded by
		// the write timeout alone.
		ctx = noCtx
	}
	if err = t.out.flushIfCtx(ctx, lead, err); err != nil && err == ctx.Err() {
		return nil // handed over: the frame goes out
	}
	return err
}

// broken handles a write error: the connection is closed. It returns the
// error a stream operation reports.
func (t *streamSet) broken(err error) error {
	if t.cl != nil {
		t.cl.fail(err)
	} else {
		t.sc.close(fmt.Errorf("write: %w", err))
	}
	return closedBy(err)
}

// lookup returns the open stream with the given id, or nil.
func (t *streamSet) lookup(id uint32) *Stream {
	t.mu.Lock()
	s := t.m[id]
	t.mu.Unlock()
	return s
}

// remove takes s out of the set (its id is free again).
func (t *streamSet) remove(s *Stream) {
	t.mu.Lock()
	if t.m[s.id] == s {
		delete(t.m, s.id)
		t.count()
	}
	t.mu.Unlock()
}

// count publishes len(t.m); called with t.mu held after a change.
func (t *streamSet) count() { t.n.Store(int32(len(t.m))) }

// open returns the number of open streams.
func (t *streamSet) open() int { return int(t.n.Load()) }

// closed reports whether the connection closed (closeAll ran).
func (t *streamSet) closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err != nil
}

// closeAll fails every stream: the connection is gone (err matches
// ErrClosed). Messages already queued stay readable before err. Every
// stream ends before any end is reported: an observer that calls
// runtime.Goexit as it is told of one (the goroutine that closes the
// client ends) leaves the others' ends unreported, not their streams
// open.
func (t *streamSet) closeAll(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	ss := t.listLocked()
	if t.cl != nil {
		clear(t.m) // a server's handlers remove their own
		t.count()
	}
	t.mu.Unlock()
	for _, s := range ss {
		s.abort(noCtx, err, false, 0, "")
		s.stopCtx()
	}
	for _, s := range ss {
		s.clientEnd(0, err)
	}
}

// listLocked returns the streams of the set, a copy to act on once
// t.mu is let go. Called with t.mu held.
func (t *streamSet) listLocked() []*Stream {
	ss := make([]*Stream, 0, len(t.m))
	for _, s := range t.m {
		ss = append(ss, s)
	}
	return ss
}

// readEnded ends the receive side of every stream: the peer sent its last
// frame (it half-closed the connection).
func (t *streamSet) readEnded(err error) {
	t.readGone.Store(true)
	t.mu.Lock()
	ss := t.listLocked()
	t.mu.Unlock()
	for _, s := range ss {
		s.ended(err, false, nil)
	}
}

// onMsg handles a kind 4 frame. It reports false when the stream's buffer
// is full (see Stream.put) and the caller must call onMsgWait.
func (t *streamSet) onMsg(p []byte, wait bool) bool {
	id, msg, err := wire.ParseStreamMsg(p)
	if err != nil {
		return true // too short to name a stream: dropped like an unknown id
	}
	if s := t.lookup(id); s != nil {
		return !s.put(msg, wait)
	}
	return true // unknown stream: dropped (docs/wire.md §9)
}

// onWindow handles a kind 9 frame. It reports whether it was the peer's
// first hello.
func (t *streamSet) onWindow(p []byte) (firstHello bool) {
	id, n, ok := wire.ParseStreamWindow(p)
	if !ok {
		if t.sc != nil && wire.IsStreamNoWindow(p) {
			t.peerNoWindow.Store(true)
		}
		return false // else not ours to read: ignored like an unknown kind
	}
	if id == 0 {
		w := int64(min(max(n, 1), 1<<30))
		grew := t.peerWindow.Swap(w) < w
		first := !t.peerFC.Swap(true)
		if grew {
			// Sends held to preHelloWindow (a client's, before the first
			// hello) or to the smaller window of an earlier hello may go
			// on: no grant comes for the bytes a hello adds.
			t.wakeSenders()
		}
		return first
	}
	if t.cl != nil {
		t.canonicalEvidence()
	}
	if s := t.lookup(id); s != nil {
		s.credit(n)
	}
	return false
}

// hello appends our hello (window frame for stream 0) under the outbox
// lock w.
func (t *streamSet) hello(w *outboxFrames) error {
	var b [8]byte
	return w.WriteFrame(wire.KindStreamWindow, wire.AppendStreamWindow(b[:0], 0, uint32(t.window)))
}

// endError is the error of a peer's end with a status; notRun: the
// server marked it a refusal of an open it did not run
// (KindStreamNotRun), which gives it the meaning of a unary refusal of
// the same status with the not-run flag: the 503 of a server going away
// matches ErrGoAway, the 504 of an open whose deadline passed before it
// ran matches context.DeadlineExceeded (see StatusError.Is). A client's
// Recv gets answerError's, which also marks a 504 that came after the
// stream's deadline.
func endError(e wire.StreamEnd, notRun bool) error {
	return newStatusError(e.Status, e.Message, notRun)
}

// allocID returns a free client stream id: odd (a zapcodec accepting side
// that opened streams would use even ids), skipping ids still open after
// the counter wraps. Called with t.mu held.
func (t *streamSet) allocID() uint32 {
	for {
		id := t.next
		t.next += 2
		if _, used := t.m[id]; !used {
			return id
		}
	}
}
