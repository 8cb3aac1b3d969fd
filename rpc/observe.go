package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// CallEvent describes one finished call, for an [Observer]. It is passed
// by value and holds no buffer of the call: an observer may keep it.
type CallEvent struct {
	// Client is true for a client's view of a call (one attempt on the
	// wire: a retry by rpc/cluster is a second event), false for a
	// server's.
	Client bool
	// Method is the wire method ordinal (the mount offset included). On a
	// server, a request whose envelope did not parse gives the ordinal
	// it carried, or 0 when its fixed section was cut short; the
	// server's [Server.MethodName] gives its full name (an observer
	// closes over its server; [HealthMethodName] for the health check,
	// [ReflectionMethodName] for reflection),
	// "" for one no generated service names. On a client, its table of
	// method names does ([MethodNames]: give it with [WithMethodNames]
	// and close over it), as the generated clients made on it named
	// them.
	Method uint32
	// Status is the answer's status (200 OK, 404...). On a server it is
	// the status the answer goes out with: an answer above the largest
	// frame is sent as a 500 whose text says so (an error text that
	// large, as an empty 500), and its event says 500 whatever the
	// handler returned; a handler that returned its ctx's error once the
	// connection was gone (the client went away, Close) is seen as
	// [StatusCanceled], as gRPC-go reports codes.Canceled, and is not
	// logged as a handler error (no answer goes out), nor is one that
	// returned context.Canceled after its caller canceled the call
	// (answered 499, which the caller, gone, drops); one that returned
	// its ctx's context.DeadlineExceeded once the call's deadline passed
	// is answered and seen as [StatusDeadlineExceeded], as gRPC-go
	// reports codes.DeadlineExceeded, and is not logged either. On a
	// client it is 0 when no answer came: Err then says why (ctx ended,
	// connection closed, go-away before the call was sent...).
	Status uint32
	// Err is, on a client, the error Call returned (nil on 200), or for a
	// promise ([Client.Send]) the error its Wait returned, or
	// [ErrPromiseReleased] when it was released; nil on a server (the
	// handler's error became Status).
	Err error
	// Start is when the call began: on a server, when its handler was
	// about to run, or, for a call answered at once without a handler
	// (see [WithObserver]), when the server answered it: as it read the
	// request, or as the worker it waited for found its connection
	// closed; on a client, when the call was handed to the connection
	// (for a promise, at Send).
	Start time.Time
	// Duration is how long the call took: on a server, the handler
	// (interceptors included; for a call pipelined on another, its wait
	// for that one too), 0 for a call answered at once without a handler;
	// on a client, from Start until the answer was delivered (or the call
	// failed); for a promise, until its Wait returned or its Release.
	Duration time.Duration
	// BytesIn and BytesOut count payload bytes received and sent for the
	// call: on a server the request payload in (0 when its envelope did
	// not parse as far as the payload) and the answer body out as sent
	// (the text of a refusal or an error, the 500's text that replaces
	// an answer too large for a frame), on a client the request payload out
	// (0 for a call that failed before its request was queued: nothing
	// went out) and the answer body in (0 out for a call pipelined on a
	// promise: its input is the promise's answer, which stays on the
	// server; 0 in for a released promise, whose answer is not taken).
	// The envelope and frame headers (wire.RequestOverhead,
	// wire.ResponseOverhead and 5 bytes a frame) are not included.
	BytesIn, BytesOut int
	// Peer is the remote address of the call's connection.
	Peer net.Addr
}

// Observer is called once per call, after the call finished: on a server,
// once per call it answers, after its handler returned or, for a call it
// answers at once without a handler, as it decides the answer; in both
// cases before the answer is written. On a client, as the call returns to
// its caller: for a promise, as its Wait returns or at its Release,
// answered or not (see [WithObserver]). It runs on the goroutine that answers the call (on a
// server, the handler's, or the read loop's or a worker's for a call
// answered at once; on a client, the caller's), so it must be quick and
// must not block. A panic in it is recovered and logged (on a server by
// its logger, [WithLogger]; on a client by slog.Default()): the call is
// answered, or returns to its caller, as if the observer had returned,
// and other calls are not affected. A server observer that calls
// runtime.Goexit (t.FailNow) as it reports a call whose handler ran ends
// that goroutine, as the handler's own exit would: the call is answered
// 500 (whatever the handler returned) and is not reported again; one
// that exits for a call answered without a handler ends the read loop
// that reports it, and the connection is closed. CallEvent is passed
// by value: observing allocates nothing and costs two monotonic clock
// reads per call and side (one for a call a server answers at once).
type Observer func(CallEvent)

// WithObserver installs f to see every call: on a server, every call it
// answers, whether or not a handler ran. A call it answers at once,
// without a handler, gets an event with Duration 0: an unknown method
// (404), a request read after the go-away (503, not run), an envelope that
// does not parse but names its promise (400), a target set without
// [WithPipelining] (400), metadata over [WithMaxMetadata] (431) or
// malformed (400), a request over the maximum frame size (413, not
// run), a call whose connection closed while it waited for a
// worker (503, which reaches no one). A call whose handler did not run to
// its end is seen too, with the time it took: one whose deadline passed
// before it could run (504, not run), one whose pipelining target failed
// (400), one whose handler called runtime.Goexit (500). A request the
// server cannot answer (its envelope names no promise: the connection is
// closed) is not seen; [Server.Stats] counts it. A server's f runs
// before the answer is written, so a caller that has its answer finds
// its call seen (ExampleWithObserver). On a client (and on each
// connection of an rpc/cluster client, given with its
// WithClientOptions), f
// sees every call on the wire once, and every call that failed before it
// could be sent: a call of [Client.Call] or [Promise.Call] when it
// returns; one sent with [Client.Send] or [Promise.Send] when its
// [Promise.Wait] returns (with Wait's result; Start is still the Send's),
// or at its [Promise.Release] (Status 0, Err [ErrPromiseReleased]), or
// when Send fails; a Wait or Release of a spent promise adds nothing.
// Streams are seen by [WithStreamObserver]. A panic in f is recovered and
// logged, and changes nothing else (see [Observer]). Default: none.
//
// Several WithObserver options add up, as gRPC-go's stats handlers given
// with several grpc.WithStatsHandler do: every observer given to a client
// or server sees every event, in the order given (rpc/cluster gives its
// connections observers of its own beside the caller's). A panic in one
// is recovered and logged on its own, and those after it still see the
// event; one that calls runtime.Goexit ends the goroutine that reports
// the event (see [Observer]), and those after it do not see that event.
// A lone observer is called directly; several are made one function
// when the client or server is made, which calls each in turn and
// allocates nothing. A nil f is ignored: it adds no observer and removes
// none.
func WithObserver(f Observer) Option {
	return bothOption{
		s: func(o *serverOptions) {
			if f != nil {
				o.observers = append(o.observers, f)
			}
		},
		c: func(o *clientOptions) {
			if f != nil {
				o.observers = append(o.observers, f)
			}
		},
	}
}

// joinObservers makes the observers given (fs, in order, none nil) one:
// nil for none, the observer itself for one (a direct call), else a
// function, made once, that hands each event to each in turn through
// observeCall, so that a panic in one (logged to log; nil:
// slog.Default()) keeps the event from none of the others.
func joinObservers(fs []Observer, log *slog.Logger) Observer {
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(ev CallEvent) {
		for _, f := range fs {
			observeCall(f, ev, log)
		}
	}
}

// call runs a call's handler (see invoke) and, with an observer, reports it.
func (c *serverConn) call(j *job) (status uint32, body []byte) {
	obs := c.s.opts.observer
	if obs == nil {
		return c.invoke(j)
	}
	start := monoNow()
	bytesIn := len(j.req)
	// A handler that calls runtime.Goexit never returns here: its event
	// is reported with these by handlerExited.
	j.obsStart, j.obsIn = start, bytesIn
	status, body = c.invoke(j)
	end := monoNow()
	sent, bytesOut := c.sentAs(j, status, len(body))
	// A panic in the observer is recovered and logged: the call is
	// answered with the handler's result. (The defer is here rather than
	// in observeCall, which the rarer answers use: a call level less,
	// half the cost.) An observer that calls runtime.Goexit ends this
	// goroutine as a handler's would: obsIn marks the handler returned,
	// so handlerExited does not report the call a second time.
	j.obsIn = observerRunning
	defer func() {
		if r := recover(); r != nil {
			observerPanic(c.s.opts.logger, "rpc: observer panic", false, j.method, "", 0, r)
		}
	}()
	obs(c.serverEvent(j.method, sent, start, end, bytesIn, bytesOut))
	return status, body
}

// sentAs is the status and body length that finish puts on the wire for
// a call that returned status and an n-byte body, for its event to say
// what the peer got: a call refused at its deadline carries
// deadlineRefusal, an error text above the largest frame goes out as an
// empty 500 (writeAnswer, inlineAnswer; a result above it is answered by
// answerTooLarge before this). Response metadata that does not fit with
// the text is left off (finish), so it changes neither.
func (c *serverConn) sentAs(j *job, status uint32, n int) (uint32, int) {
	switch {
	case j.refused:
		return status, len(deadlineRefusal)
	case !c.answerFits(n):
		return StatusInternal, 0
	}
	return status, n
}

// serverEvent is the event of a call a server answered: start and end are
// monoNow values, bytesIn the request's payload length, bytesOut the
// answer body's.
func (c *serverConn) serverEvent(method, status uint32, start, end int64, bytesIn, bytesOut int) CallEvent {
	return CallEvent{
		Method:   method,
		Status:   status,
		Start:    monoTime(start),
		Duration: time.Duration(end - start),
		BytesIn:  bytesIn,
		BytesOut: bytesOut,
		Peer:     c.peer(),
	}
}

// observeUnrun reports to obs a call answered without running its
// handler, with status and a bytesOut-byte body: read after the go-away,
// an unknown method, a bad envelope or metadata, a connection closed
// before a worker could start it. Its Start is now and its Duration 0.
// Its callers check obs for nil first: without an observer those paths
// cost a nil check.
func (c *serverConn) observeUnrun(obs Observer, method, status uint32, bytesIn, bytesOut int) {
	now := monoNow()
	returned := false
	defer c.closeIfObserverExited(&returned)
	observeCall(obs, c.serverEvent(method, status, now, now, bytesIn, bytesOut), c.s.opts.logger)
	returned = true
}

// errObserverExited is why a connection closes whose observer called
// runtime.Goexit on its read loop (see closeIfObserverExited).
var errObserverExited = errors.New("rpc: an observer called runtime.Goexit on the connection's read loop")

// closeIfObserverExited, deferred around an observer that reports a call
// or an open answered without a handler, closes the connection unless
// the observer returned (*returned; a panic is recovered inside): it
// called runtime.Goexit, which ends the goroutine, the connection's read
// loop (or a worker that found the connection closed already), and the
// answer with it. Closed, the connection does not hang: its peer's calls
// fail, and it leaves the server.
func (c *serverConn) closeIfObserverExited(returned *bool) {
	if !*returned {
		c.close(errObserverExited)
	}
}

// observerPanic logs a panic recovered from an observer (idKey and id
// name the stream; idKey "": none).
func observerPanic(log *slog.Logger, msg string, client bool, method uint32, idKey string, id uint32, r any) {
	if log == nil {
		log = slog.Default()
	}
	side := "server"
	if client {
		side = "client"
	}
	if idKey == "" {
		log.Error(msg, "side", side, "method", method, "panic", fmt.Sprint(r))
		return
	}
	log.Error(msg, "side", side, "method", method, idKey, id, "panic", fmt.Sprint(r))
}

// peer is the remote address of the connection.
func (c *serverConn) peer() net.Addr { return c.nc.RemoteAddr() }

// remote is the remote address of the connection as the logs give it:
// "" when the net.Conn has none (a wrapper may return a nil RemoteAddr,
// which a log line must not turn into a panic of the read loop).
func (c *serverConn) remote() string {
	if a := c.nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// unary is a call on the wire, reported to the observer if there is one:
// the innermost Invoker of the client's chain.
func (c *Client) unary(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if obs := c.opts.observer; obs != nil {
		return c.observedCall(obs, ctx, method, 0, req, resp)
	}
	return c.call(ctx, method, req, resp)
}

// observedCall is one call on the wire (Client.Call's, or Promise.Call's
// on target: 0 none) reported to obs, with the payload counted as sent
// only when send queued it. Its results are named: a panic in obs,
// recovered, returns them.
func (c *Client) observedCall(obs Observer, ctx context.Context, method, target uint32, req, resp []byte) (out []byte, err error) {
	start := monoNow()
	done := ctx.Done()
	sent := 0
	s, err := c.send(ctx, done, done, method, target, req, resp, false)
	switch {
	case err != nil:
		out = resp
	case s.zipped:
		sent = len(req)
		out, err = c.waitZipped(ctx, done, s, method, target, req, resp)
	default:
		sent = len(req)
		out, err = c.wait(ctx, done, s, resp)
	}
	ev := c.clientEvent(method, start, sent, resp, out, err)
	// A panic in the observer is recovered and logged: the call returns
	// its result. (The defer is here rather than in observeCall, which
	// the promises use: a call level less, as in serverConn.call.)
	defer func() {
		if r := recover(); r != nil {
			observerPanic(nil, "rpc: observer panic", true, method, "", 0, r)
		}
	}()
	obs(ev)
	return out, err
}

// clientEvent is the event of a client's call to method, begun at start
// (a monoNow value) with a bytesOut-byte payload and the caller's resp,
// that ends now returning out and err: Status is 200 on success, a
// *StatusError's code, else 0 (no answer: Err says why).
func (c *Client) clientEvent(method uint32, start int64, bytesOut int, resp, out []byte, err error) CallEvent {
	end := monoNow()
	ev := CallEvent{
		Client:   true,
		Method:   method,
		Err:      err,
		Start:    monoTime(start),
		Duration: time.Duration(end - start),
		BytesOut: bytesOut,
		Peer:     c.peer,
	}
	if len(out) >= len(resp) {
		ev.BytesIn = len(out) - len(resp)
	}
	switch e := err.(type) {
	case nil:
		ev.Status = StatusOK
	case *StatusError:
		ev.Status = e.Code
	}
	return ev
}

// observeCall hands ev to obs for a call that did not go through
// serverConn.call or Client.observedCall, which have the defer inline: a
// server's call answered without its handler's return (observeUnrun,
// handlerExited), a client's promise. A panic in obs is recovered and
// logged (log nil: slog.Default()), and the call is answered, or returns
// to its caller, all the same.
func observeCall(obs Observer, ev CallEvent, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			observerPanic(log, "rpc: observer panic", ev.Client, ev.Method, "", 0, r)
		}
	}()
	obs(ev)
}
