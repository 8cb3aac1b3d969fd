package rpc

import (
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// StreamEvent describes a stream's start or its end, for a
// [StreamObserver]. It is passed by value and holds no buffer of the
// stream: an observer may keep it.
type StreamEvent struct {
	// Client is true for a client's view of the stream, false for a
	// server's.
	Client bool
	// End is false for the event at the stream's start (on a server just
	// before its handler runs, interceptors included, or, for an open it
	// refuses without a handler, as it refuses it; on a client when the
	// open is about to be queued), true for the one at its end. Every
	// start is followed by exactly one end; a refused open's follows at
	// once, on the same goroutine.
	End bool
	// Method is the wire method ordinal (the mount offset included): on a
	// server [Server.MethodName] names it, on a client its table of
	// method names ([Client.MethodNames], [WithMethodNames]). ID is the
	// stream id.
	Method, ID uint32
	// Status (end only) is how the stream ended. On a server: 200 when its
	// handler returned nil, the handler's status otherwise (500 for a plain
	// error or a panic), [StatusCanceled] when the client canceled the
	// stream (any error end from the client counts so, whatever its
	// status) or went away (the connection closed, or the client sent its
	// last frame) and the handler returned the error that gave it (its
	// ctx's, Recv's or Send's), as gRPC-go reports codes.Canceled, 504
	// ([StatusDeadlineExceeded]) when the stream's deadline passed first
	// and the handler returned the error that gave it, as gRPC-go reports
	// codes.DeadlineExceeded, 503 when
	// Shutdown's grace ended it; for an open refused without a handler, the
	// refusal's: 404 no such stream method, 503 read after the go-away, as
	// the connection closes (no end is sent), one stream too many
	// ([WithMaxStreams]) or reusing the id of a stream the client canceled
	// whose handler still runs (after the client's id counter wrapped), 431
	// metadata over [WithMaxMetadata], 413 its frame over the maximum frame
	// size, 504 its deadline (the client's,
	// carried in the open) passed before the handler could run, 400
	// malformed metadata or envelope, or stream id 0 or the id of a stream
	// still running that the client did not cancel (whatever else is wrong
	// with the open; no end is sent for it). On a client: 200 for the
	// server's clean end, the status of its error end, StatusCanceled when
	// the ctx of OpenStream ended first, 0 when no end came (Err says why:
	// the connection closed, the open could not be sent) or when the
	// client refused the stream's trailer ([WithMaxResponseMetadata]; Err
	// is the refusal, which Recv returned in place of the end, as a call
	// whose response metadata is refused is seen with Status 0).
	Status uint32
	// Err is, on a client's end event, the error the stream ended with
	// (nil for a clean end); nil on a server.
	Err error
	// Start is when the stream began (on a server when its open was read,
	// on a client when OpenStream was called and the stream got its id).
	Start time.Time
	// Duration (end only) is the time from Start to the end: on a server
	// until the handler returned and the end was queued (0 for a refused
	// open); on a client until the server's end was read, the stream was
	// canceled or its connection failed.
	Duration time.Duration
	// MsgsIn and MsgsOut (end only) count the stream's messages received
	// from the peer and sent to it. BytesIn and BytesOut count their
	// payload bytes, and the open's initial message (a client sends it, a
	// server receives it: a refused open's too, as far as its envelope
	// parsed). Frame and envelope headers are not counted; neither is the
	// text of an error end.
	MsgsIn, MsgsOut   int64
	BytesIn, BytesOut int64
	// Peer is the remote address of the stream's connection.
	Peer net.Addr
}

// StreamObserver is called at the start and at the end of every stream
// of a client or server that has it (see [WithStreamObserver]). It runs
// on the goroutine that starts or ends the stream (a handler's goroutine,
// a caller's, or a connection's read loop), so it must be quick and must
// not block. A panic in it is recovered and logged (on a server by its
// logger, [WithLogger]; on a client by slog.Default()): the stream, its
// connection and other streams go on as if the observer had returned. A
// server observer that calls runtime.Goexit (t.FailNow) as it sees the
// start of a stream whose handler is to run ends that stream with status
// 500 without running its handler; as it sees such a stream's end, it
// leaves the stream ended. A client observer that exits as it sees a
// stream's start ends the goroutine of OpenStream, which never gets the
// stream: the stream is dropped unopened (no end is reported). A server
// observer that exits for an open refused without a handler ends the
// read loop that reports it, and the connection is closed. A client
// observer that exits as it sees a stream's end ends the goroutine that
// reports it: when that is the client's read loop (the server's end
// came), the connection is closed (its calls and streams fail with
// [ErrClosed]) and the exit is logged to slog.Default(); when it is the
// goroutine of Close (or of a failure that closed the connection), the
// connection closes as it would have and every stream ends, but the
// ends not yet reported are not.
// Observing allocates nothing per message: the counts are kept on the
// stream.
type StreamObserver func(StreamEvent)

// WithStreamObserver installs f to see the start and the end of every
// stream: on a server, every stream whose handler ran, and every open it
// refused without running one (what [StreamStats].Refused counts): a start
// and at once an end with the refusal's status and Duration 0, reported
// before the refusal is written (see [StreamEvent].Status for the
// statuses; a 404 to a canonical peer, which is sent no end, is seen too,
// as are those to which no end is sent: stream id 0, the id of a stream
// still running, one read as the connection closes). An open whose
// envelope names no stream id is not seen (the connection is closed). On a
// client, f sees every stream [Client.OpenStream] began (one that failed
// before it got an id, such as [ErrTooManyStreams], is not seen). Calls
// are seen by [WithObserver]. A panic in f is recovered and logged, and
// changes nothing else (see [StreamObserver]). Default: none.
//
// Several WithStreamObserver options add up, as gRPC-go's stats handlers
// given with several grpc.WithStatsHandler do: every stream observer
// given to a client or server sees every event, in the order given
// (rpc/cluster counts stream ends toward a replica's ejection with one
// of its own, beside the caller's). A panic in one is recovered and
// logged on its own, and those after it still see the event; one that
// calls runtime.Goexit ends the goroutine that reports the event (see
// [StreamObserver]), and those after it do not see that event. A lone
// observer is called directly; several are made one function when the
// client or server is made, which calls each in turn and allocates
// nothing. A nil f is ignored: it adds no observer and removes none.
func WithStreamObserver(f StreamObserver) Option {
	return bothOption{
		s: func(o *serverOptions) {
			if f != nil {
				o.streamObservers = append(o.streamObservers, f)
			}
		},
		c: func(o *clientOptions) {
			if f != nil {
				o.streamObservers = append(o.streamObservers, f)
			}
		},
	}
}

// joinStreamObservers makes the stream observers given (fs, in order,
// none nil) one, as joinObservers does: nil, the one itself, or a
// function made once that hands each event to each in turn through
// observeStream (a panic in one, logged to log, keeps the event from
// none of the others).
func joinStreamObservers(fs []StreamObserver, log *slog.Logger) StreamObserver {
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(ev StreamEvent) {
		for _, f := range fs {
			observeStream(f, &ev, log)
		}
	}
}

// StreamStats are a server's stream counters (the Streams field of
// [Stats]).
type StreamStats struct {
	// Opened counts the streams whose handler started; Refused the opens
	// refused without a handler (no such method, too many streams, going
	// away, malformed, the deadline passed, stream id 0, the id of a
	// running stream, read as the connection closes), whether or not an error end answered them
	// (see [StreamEvent].Status).
	Opened, Refused uint64
	// Active is the number of stream handlers running now.
	Active int64
	// Ended counts the streams whose handler ended, by the status of
	// their end (see [StreamEvent].Status): OK (200), Canceled (by the
	// client, or the client went away: [StatusCanceled]), Internal (500), Unavailable (503,
	// Shutdown) and every other status (504 among them: the deadline
	// passed).
	OK, Canceled, Internal, Unavailable, OtherStatus uint64
	// MsgsIn and MsgsOut count stream messages received and sent;
	// BytesIn and BytesOut their payload bytes (initial messages
	// included, a refused open's too, as far as its envelope parsed: as
	// the observer's events count them). A stream adds its counts every
	// 64 messages each way and when it ends.
	MsgsIn, MsgsOut, BytesIn, BytesOut uint64
}

// streamCounters are a server's stream counters.
type streamCounters struct {
	opened, refused                    atomic.Uint64
	ended                              [5]atomic.Uint64 // OK, Canceled, Internal, Unavailable, other
	msgsIn, msgsOut, bytesIn, bytesOut atomic.Uint64
}

func (sc *streamCounters) snapshot() StreamStats {
	// The ends are read before the opens: a stream that opens and ends
	// between the two reads cannot make Active negative.
	st := StreamStats{
		OK:          sc.ended[0].Load(),
		Canceled:    sc.ended[1].Load(),
		Internal:    sc.ended[2].Load(),
		Unavailable: sc.ended[3].Load(),
		OtherStatus: sc.ended[4].Load(),
	}
	st.Opened, st.Refused = sc.opened.Load(), sc.refused.Load()
	st.MsgsIn, st.MsgsOut = sc.msgsIn.Load(), sc.msgsOut.Load()
	st.BytesIn, st.BytesOut = sc.bytesIn.Load(), sc.bytesOut.Load()
	st.Active = int64(st.Opened - (st.OK + st.Canceled + st.Internal + st.Unavailable + st.OtherStatus))
	return st
}

// endedIndex is the index of a stream's end status in streamCounters.ended.
func endedIndex(status uint32) int {
	switch status {
	case StatusOK:
		return 0
	case StatusCanceled:
		return 1
	case StatusInternal:
		return 2
	case StatusUnavailable:
		return 3
	}
	return 4
}

// streamAcct is a stream's accounting, under Stream.mu.
type streamAcct struct {
	start             int64 // monoNow at the start
	msgsIn, msgsOut   int64
	bytesIn, bytesOut int64
	// Published to the server's counters so far (server only).
	pubMsgsIn, pubMsgsOut, pubBytesIn, pubBytesOut int64
	// status is set by what ended the stream first: a status end sent by
	// abort (Shutdown, a client's cancel) or received (a client's cancel,
	// on a server).
	status   uint32
	reported bool // the end was reported (client: at most once)
	started  bool // client: the start was reported (by clientEnd when the end came first)
}

// publishEvery: a server stream adds its message counts to the server's
// every so many messages each way (and at its end).
const publishEvery = 64

// countIn counts a message received (under s.mu).
func (s *Stream) countIn(n int) {
	a := &s.acct
	a.msgsIn++
	a.bytesIn += int64(n)
	if a.msgsIn-a.pubMsgsIn >= publishEvery && s.set.sc != nil {
		s.publishIn(&s.set.sc.s.streamStats)
	}
}

// countOut counts a message sent (under s.mu); uncountOut takes it back.
func (s *Stream) countOut(n int) {
	a := &s.acct
	a.msgsOut++
	a.bytesOut += int64(n)
	if a.msgsOut-a.pubMsgsOut >= publishEvery && s.set.sc != nil {
		s.publishOut(&s.set.sc.s.streamStats)
	}
}

func (s *Stream) uncountOut(n int) {
	a := &s.acct
	a.msgsOut--
	a.bytesOut -= int64(n)
	if a.msgsOut < a.pubMsgsOut && s.set.sc != nil {
		// countOut published it with the others: take it back.
		sc := &s.set.sc.s.streamStats
		sc.msgsOut.Add(^uint64(0))
		sc.bytesOut.Add(-uint64(n))
		a.pubMsgsOut, a.pubBytesOut = a.msgsOut, a.bytesOut
	}
}

func (s *Stream) publishIn(sc *streamCounters) {
	a := &s.acct
	publishDelta(&sc.msgsIn, a.msgsIn, &a.pubMsgsIn)
	publishDelta(&sc.bytesIn, a.bytesIn, &a.pubBytesIn)
}

func (s *Stream) publishOut(sc *streamCounters) {
	a := &s.acct
	publishDelta(&sc.msgsOut, a.msgsOut, &a.pubMsgsOut)
	publishDelta(&sc.bytesOut, a.bytesOut, &a.pubBytesOut)
}

// publishDelta adds to counter what a stream counted (n) since it last
// published (*published), and records n as published.
func publishDelta(counter *atomic.Uint64, n int64, published *int64) {
	if d := n - *published; d > 0 {
		counter.Add(uint64(d))
	}
	*published = n
}

// endedWith records status as the stream's end status unless one is set.
func (s *Stream) endedWith(status uint32) {
	s.mu.Lock()
	if s.acct.status == 0 {
		s.acct.status = status
	}
	s.mu.Unlock()
}

// event returns the stream's event (end: with its counts and duration).
// Called with s.mu held.
func (s *Stream) event(client, end bool, now int64) StreamEvent {
	a := &s.acct
	ev := StreamEvent{
		Client: client,
		End:    end,
		Method: s.method,
		ID:     s.id,
		Start:  monoTime(a.start),
	}
	if end {
		ev.Duration = time.Duration(now - a.start)
		ev.MsgsIn, ev.MsgsOut = a.msgsIn, a.msgsOut
		ev.BytesIn, ev.BytesOut = a.bytesIn, a.bytesOut
	}
	return ev
}

// serverStreamStart counts a stream whose handler is about to run and
// reports its start.
func (c *serverConn) serverStreamStart(st *Stream, init []byte) {
	c.s.streamStats.opened.Add(1)
	obs := c.s.opts.streamObserver
	st.mu.Lock()
	st.acct.bytesIn += int64(len(init))
	var ev StreamEvent
	if obs != nil {
		ev = st.event(false, false, 0)
	}
	st.mu.Unlock()
	if obs != nil {
		ev.Peer = c.peer()
		observeStream(obs, &ev, c.s.opts.logger)
	}
}

// observeRefusedStream reports to obs the open r that the server refused
// with status without running a handler: a start and, at once, the end
// (Duration 0, no message either way, BytesIn the open's initial
// message as far as it was read), as for a stream whose handler ended at
// once. Its caller checks obs for nil first: without an observer a
// refusal costs a nil check.
func (c *serverConn) observeRefusedStream(obs StreamObserver, r *wire.Request, status uint32) {
	ev := StreamEvent{Method: r.Method, ID: r.PromiseID, Start: monoTime(monoNow()), Peer: c.peer()}
	returned := false
	defer c.closeIfObserverExited(&returned)
	observeStream(obs, &ev, c.s.opts.logger)
	ev.End, ev.Status, ev.BytesIn = true, status, int64(len(r.Payload))
	observeStream(obs, &ev, c.s.opts.logger)
	returned = true
}

// observeStream runs obs on *ev. A panic in obs is recovered and logged
// (log nil: slog.Default()): a stream observer runs on a handler's
// goroutine, a caller's or a read loop, sometimes under the stream's
// lock, none of which it may end or leave held.
func observeStream(obs StreamObserver, ev *StreamEvent, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			observerPanic(log, "rpc: stream observer panic", ev.Client, ev.Method, "stream", ev.ID, r)
		}
	}()
	obs(*ev)
}

// serverStreamEnd counts a stream whose handler ended with status (0: a
// clean end) and reports its end. The handler has returned, so nothing
// is sent any more; a message that arrives now is dropped.
func (c *serverConn) serverStreamEnd(st *Stream, status uint32) {
	now := monoNow()
	sc := &c.s.streamStats
	st.mu.Lock()
	if st.acct.status != 0 {
		status = st.acct.status // canceled by the client, or ended by Shutdown
	} else if status == 0 {
		status = StatusOK
	}
	st.acct.status = status
	st.publishIn(sc)
	st.publishOut(sc)
	obs := c.s.opts.streamObserver
	var ev StreamEvent
	if obs != nil {
		ev = st.event(false, true, now)
		ev.Status = status
	}
	st.mu.Unlock()
	sc.ended[endedIndex(status)].Add(1)
	if obs != nil {
		ev.Peer = c.peer()
		observeStream(obs, &ev, c.s.opts.logger)
	}
}

// clientStreamStart reports the start of a client's stream. The observer
// runs under the stream's lock, so that the end (clientEnd, which may
// come from the read loop at once) is reported after it. When the end
// came first (the connection failed as the stream was published), clientEnd
// reported the start before it, and this reports nothing.
//
// An observer that calls runtime.Goexit (t.FailNow) as it sees the start
// ends the caller's goroutine, which never gets the stream: the stream
// leaves its set unopened (its slot is freed, its lock released) and is
// reported no end.
func (c *Client) clientStreamStart(st *Stream) {
	if obs := c.opts.streamObserver; obs != nil {
		st.mu.Lock()
		if !st.acct.started {
			st.acct.started = true
			ev := st.event(true, false, 0)
			ev.Peer = c.peer
			returned := false
			defer func() {
				if !returned { // a panic is recovered by observeStream
					st.acct.reported = true
					st.mu.Unlock()
					st.set.unopened(st, errStreamObserverExited)
				}
			}()
			observeStream(obs, &ev, nil)
			returned = true
		}
		st.mu.Unlock()
	}
}

// errStreamObserverExited ends a client's stream whose observer called
// runtime.Goexit as it saw the start (see clientStreamStart).
var errStreamObserverExited = errors.New("rpc: the stream observer called runtime.Goexit at the stream's start")

// clientEnd reports the end of a client's stream, once: status as the
// server's end said (200 clean), or 0 with err when none came.
func (s *Stream) clientEnd(status uint32, err error) {
	t := s.set
	if t.cl == nil {
		return
	}
	now := monoNow()
	s.mu.Lock()
	if s.acct.reported {
		s.mu.Unlock()
		return
	}
	s.acct.reported = true
	if s.acct.status != 0 {
		status = s.acct.status // our cancel
	}
	s.acct.status = status
	obs := t.cl.opts.streamObserver
	var start, ev StreamEvent
	startToo := false // the start was not reported yet: report it first
	if obs != nil {
		if !s.acct.started {
			s.acct.started, startToo = true, true
			start = s.event(true, false, 0)
		}
		ev = s.event(true, true, now)
		ev.Status, ev.Err = status, err
	}
	s.mu.Unlock()
	if obs != nil {
		if startToo {
			start.Peer = t.cl.peer
			observeStream(obs, &start, nil)
		}
		ev.Peer = t.cl.peer
		observeStream(obs, &ev, nil)
	}
}
