package rpc

import (
	"context"
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
	// Method is the wire method ordinal (the mount offset included).
	Method uint32
	// Status is the answer's status (200 OK, 404...). On a client it is 0
	// when no answer came: Err then says why (ctx ended, connection
	// closed, go-away before the call was sent...).
	Status uint32
	// Err is, on a client, the error Call returned (nil on 200); nil on a
	// server (the handler's error became Status).
	Err error
	// Start is when the call began: on a server, when its handler was
	// about to run; on a client, when the call was handed to the
	// connection.
	Start time.Time
	// Duration is how long the call took: the handler (interceptors
	// included) on a server; from Start until the answer was delivered
	// (or the call failed) on a client.
	Duration time.Duration
	// BytesIn and BytesOut count payload bytes received and sent for the
	// call: on a server the request payload in and the answer body out,
	// on a client the request payload out and the answer body in. The
	// envelope and frame headers (wire.RequestOverhead, wire.ResponseOverhead and 5
	// bytes a frame) are not included.
	BytesIn, BytesOut int
	// Peer is the remote address of the call's connection.
	Peer net.Addr
}

// Observer is called once per call, after the call finished (on a server:
// after its handler returned, before its answer is written). It runs on
// the call's goroutine, so it must be quick and must not block. A panic
// in it is recovered and logged (on a server by its logger, [WithLogger];
// on a client by slog.Default()): the call is answered, or returns to its
// caller, as if the observer had returned, and other calls are not
// affected. CallEvent is passed by value: observing allocates nothing and
// costs two monotonic clock reads per call and side.
type Observer func(CallEvent)

// WithObserver installs f to see every call: on a server, every call that
// ran a handler (an unknown method, a malformed envelope or a call refused
// after go-away runs none and is counted only in [Server.Stats]); on a
// client or pool, every call on the wire. Streams are seen by
// [WithStreamObserver]. A panic in f is recovered and logged, and changes
// nothing else (see [Observer]). Default: none.
func WithObserver(f Observer) Option {
	return bothOption{
		s: func(o *serverOptions) { o.observer = f },
		c: func(o *clientOptions) { o.observer = f },
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
	status, body = c.invoke(j)
	end := monoNow()
	// A panic in the observer is recovered and logged: the call is
	// answered with the handler's result. (The defer is here rather than
	// in a helper around obs: a call level less, half the cost.)
	defer func() {
		if r := recover(); r != nil {
			observerPanic(c.s.opts.logger, "rpc: observer panic", false, j.method, "", 0, r)
		}
	}()
	obs(CallEvent{
		Method:   j.method,
		Status:   status,
		Start:    monoTime(start),
		Duration: time.Duration(end - start),
		BytesIn:  bytesIn,
		BytesOut: len(body),
		Peer:     c.peer(),
	})
	return status, body
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

// unary is a call on the wire, reported to the observer if there is one:
// the innermost Invoker of the client's chain.
func (c *Client) unary(ctx context.Context, method uint32, req, resp []byte) (out []byte, err error) {
	obs := c.opts.observer
	if obs == nil {
		return c.call(ctx, method, req, resp)
	}
	start := monoNow()
	out, err = c.call(ctx, method, req, resp)
	end := monoNow()
	ev := CallEvent{
		Client:   true,
		Method:   method,
		Err:      err,
		Start:    monoTime(start),
		Duration: time.Duration(end - start),
		BytesOut: len(req),
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
	// A panic in the observer is recovered and logged: the call returns
	// its result (see serverConn.call).
	defer func() {
		if r := recover(); r != nil {
			observerPanic(nil, "rpc: observer panic", true, method, "", 0, r)
		}
	}()
	obs(ev)
	return out, err
}
