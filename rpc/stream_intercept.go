package rpc

import (
	"context"
	"errors"
	"sync"
)

// ErrNoStreamFromInterceptor is what OpenStream returns when a stream
// interceptor returned neither a stream nor an error (a bug in the
// interceptor), rather than a nil stream.
var ErrNoStreamFromInterceptor = errors.New("rpc: a stream interceptor returned no stream and no error")

// StreamInterceptor runs around every stream handler of a server that has
// it (see [WithStreamInterceptors]), as [Interceptor] does around unary
// handlers: it sees the handler's ctx, the wire method ordinal (the mount
// offset included; [MethodFrom](ctx) or [Server.MethodName] gives its
// full name), the open's initial message and the stream, and calls
// next to run the rest of the chain and finally the handler, or ends the
// stream by itself by returning without calling next (a *[StatusError]
// keeps its code, so an auth interceptor refuses a stream with
// Errorf(403, ...)). It may pass next a ctx of its own (derived from
// ctx), and may replace the handler's error. Its error ends the stream
// as a handler's does; a panic in it is handled like a handler panic
// (status 500, logged).
//
// To see the stream's messages, an interceptor installs a [StreamTap]
// with [Stream.Tap] before it calls next. init is the handler's own copy;
// the stream's metadata and cap are read from ctx ([MetadataFrom],
// [CapFrom]).
type StreamInterceptor func(ctx context.Context, method uint32, init []byte, s *Stream, next StreamHandler) error

// WithStreamInterceptors installs interceptors around every stream
// handler registered on the server afterwards by [Server.HandleStream]
// (generated Register…Server functions go through it), in order: the
// first is outermost. Several WithStreamInterceptors options append. The
// chain is built once per HandleStream call: a stream pays only the
// interceptors' own cost, and a message nothing unless a tap is
// installed. A panic in an interceptor (or in a tap it installed) ends
// its stream with status 500 and is logged, like a handler's: the
// connection and other streams go on.
func WithStreamInterceptors(i ...StreamInterceptor) ServerOption {
	i = append([]StreamInterceptor(nil), i...)
	return serverOption(func(o *serverOptions) {
		for _, f := range i {
			if f != nil {
				o.streamInterceptors = append(o.streamInterceptors, f)
			}
		}
	})
}

// chainStreamHandler wraps h (served at method) in the interceptors, first
// outermost. It is built once, at registration.
func chainStreamHandler(ics []StreamInterceptor, method uint32, h StreamHandler) StreamHandler {
	for k := len(ics) - 1; k >= 0; k-- {
		ic, next := ics[k], h
		h = func(ctx context.Context, init []byte, s *Stream) error {
			return ic(ctx, method, init, s, next)
		}
	}
	return h
}

// Streamer opens one stream: the innermost Streamer of a client's chain
// is the open on the wire (see [Client.OpenStream] for init and the
// errors).
type Streamer func(ctx context.Context, method uint32, init []byte) (*Stream, error)

// The errors of a stream opened under a chain of client stream
// interceptors that its caller never got (see [openCtx.finish]): its Send
// and Recv return them, if an interceptor kept it; the server sees an
// error end with StatusCanceled, as for a canceled ctx.
var (
	// errOpenPanicked: an interceptor panicked (or called
	// runtime.Goexit) before the chain returned.
	errOpenPanicked = errors.New("rpc: a stream interceptor panicked in OpenStream")
	// errOpenOrphaned: the chain returned another stream, or an error,
	// or nothing.
	errOpenOrphaned = errors.New("rpc: stream opened by a stream interceptor but not returned to the caller of OpenStream")
)

// openCtx is the ctx a chain of stream interceptors (ChainStreamer) is
// given: the caller's ctx, which records the streams the open on the
// wire opens under it (it finds it with Value, also through a ctx an
// interceptor derived from it), so that those the chain does not return
// to its caller are canceled when it returns or panics: the caller never
// got them, and nothing else would end them. One allocation per open,
// and only with interceptors.
//
// A stream opened under it after the chain returned (an interceptor's
// goroutine still opening, or a ctx derived from a returned stream's
// [Stream.Context]) is not recorded: it belongs to whoever opened it.
type openCtx struct {
	context.Context
	mu   sync.Mutex // an interceptor may open from several goroutines
	done bool       // the chain returned: record no more
	one  *Stream    // the first stream opened (the usual: one)
	more []*Stream  // the others
}

// openKey is the ctx Value key of an openCtx.
type openKey struct{}

// Value returns the openCtx itself for openKey, else the caller's ctx's
// value.
func (oc *openCtx) Value(key any) any {
	if key == (openKey{}) {
		return oc
	}
	return oc.Context.Value(key)
}

// openOf returns the openCtx ctx was derived from (nil: none) and the ctx
// a stream opened under ctx keeps: the caller's own when the
// interceptors passed the openCtx on unchanged.
func openOf(ctx context.Context) (*openCtx, context.Context) {
	if oc, ok := ctx.(*openCtx); ok {
		return oc, oc.Context
	}
	oc, _ := ctx.Value(openKey{}).(*openCtx)
	return oc, ctx
}

// record notes s, opened under oc, on oc and on the openCtxs of the
// chains around it (a cluster's chain around a connection's): each chain
// cancels it unless it returns it, so a stream an inner chain returned
// and an outer interceptor dropped is canceled by the outer chain.
func (oc *openCtx) record(s *Stream) {
	for ; oc != nil; oc, _ = oc.Context.Value(openKey{}).(*openCtx) {
		oc.mu.Lock()
		switch {
		case oc.done:
		case oc.one == nil:
			oc.one = s
		default:
			oc.more = append(oc.more, s)
		}
		oc.mu.Unlock()
	}
}

// finish ends oc's open and cancels every stream recorded on it but kept,
// the one the chain returned to its caller (nil: none, as after a panic
// or with an error), with why. The usual open, one stream recorded and
// returned, cancels nothing. A stream also recorded by a chain inside
// this one was already canceled by it unless that chain returned it: the
// second cancel finds it ended, as it finds one the server ended. The
// cancels' ends are written under the caller's ctx, as the open was: a
// server that does not read holds OpenStream up to that ctx's end, not
// for the write timeout.
func (oc *openCtx) finish(kept *Stream, why error) {
	oc.mu.Lock()
	one, more := oc.one, oc.more
	oc.one, oc.more, oc.done = nil, nil, true
	oc.mu.Unlock()
	// A stream whose cancel another goroutine began (the AfterFunc of a
	// ctx an interceptor derived and canceled) is waited for until it
	// left the set: the chain's caller, told of the failure or the panic,
	// must not find it still counted.
	if one != nil && one != kept {
		one.clientCancel(oc.Context, why)
		one.awaitRemoved(oc.Context)
	}
	for _, s := range more {
		if s != kept {
			s.clientCancel(oc.Context, why)
			s.awaitRemoved(oc.Context)
		}
	}
}

// StreamClientInterceptor runs around every [Client.OpenStream] of a
// client that has it (see [WithStreamClientInterceptors]): it may change
// ctx (to add metadata or a cap with [WithMetadata] and [WithCap]: the
// open carries them; the ctx also bounds the whole stream), refuse the
// open by returning an error without calling open, call open to run the
// rest of the chain and the open itself, and install a [StreamTap] on
// the stream it got before returning it. init is the caller's: only read,
// and only until the interceptor returns. method is the wire ordinal; a
// table given with [WithMethodNames] names it, as for a
// [ClientInterceptor].
//
// Interceptors given to the connections of an rpc/cluster client run once
// per attempt; its own (cluster.WithStreamInterceptors) run once around
// an open.
//
// Every stream opened under the ctx the interceptor was given (by open,
// or by any OpenStream under a ctx derived from it) before the chain
// returns belongs to the open: the one the chain returns with a nil error
// goes to the caller, and the others are canceled when the chain returns
// (an error end with [StatusCanceled] to the server; their Send and Recv
// fail), since the caller never got them and nothing else would end
// them. When the chain returns (or its panic goes on), they no longer
// count among the connection's streams ([Client.Streams],
// [WithMaxStreams]), also one whose cancel another goroutine began (the
// end of a ctx the interceptor derived and canceled): the chain waits
// for that, up to the end of the caller's ctx. So an interceptor may
// open, look at the stream and refuse it by returning an error, or open
// again and return the second stream, without leaking the first. A
// stream an interceptor means to keep for itself is opened under a ctx
// not derived from the one it was given; an interceptor that opens from
// other goroutines waits for those opens before it returns (one that
// ends after the chain returned is not the chain's, and is left to its
// goroutine).
//
// A panic in a client stream interceptor is not recovered: the panic goes
// on to the caller of OpenStream, as one in the caller's own code would
// (gRPC-go does the same). The streams opened under the chain's ctx
// before the panic are canceled first, since the caller never got them;
// the client, its connection and other streams go on.
type StreamClientInterceptor func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error)

// WithStreamClientInterceptors installs interceptors around every stream
// a [Client] opens, in order: the first is outermost. Several options
// append. The chain is built once, when the client is created. A panic in
// one goes on to the caller and leaves the client usable (see
// [StreamClientInterceptor]).
func WithStreamClientInterceptors(i ...StreamClientInterceptor) ClientOption {
	i = append([]StreamClientInterceptor(nil), i...)
	return clientOption(func(o *clientOptions) {
		for _, f := range i {
			if f != nil {
				o.streamInterceptors = append(o.streamInterceptors, f)
			}
		}
	})
}

// ChainStreamer returns inner wrapped in the interceptors, the first
// outermost, or nil when there are none. It is how a Client runs
// [WithStreamClientInterceptors]; a StreamOpener built on Clients
// (rpc/cluster) uses it to run its own interceptors once around each
// open. The streams a [Client.OpenStream] called under the chain's ctx
// opened, other than the one the chain returns with a nil error, are
// canceled when the chain returns, or before an interceptor's panic goes
// on (see [StreamClientInterceptor]); the chain's ctx is the caller's,
// wrapped to record them. Chains nest (rpc/cluster's around those of its
// connections): a stream is canceled by the innermost chain that does not
// return it, once.
func ChainStreamer(ics []StreamClientInterceptor, inner Streamer) Streamer {
	if len(ics) == 0 {
		return nil
	}
	h := inner
	for k := len(ics) - 1; k >= 0; k-- {
		ic, next := ics[k], h
		h = func(ctx context.Context, method uint32, init []byte) (*Stream, error) {
			return ic(ctx, method, init, next)
		}
	}
	return func(ctx context.Context, method uint32, init []byte) (*Stream, error) {
		oc := &openCtx{Context: ctx}
		returned := false
		defer func() {
			if !returned { // a panic or runtime.Goexit: the caller gets nothing
				oc.finish(nil, errOpenPanicked)
			}
		}()
		st, err := h(oc, method, init)
		returned = true
		kept := st
		if err != nil {
			kept = nil // the caller does not use a stream that came with an error
		}
		oc.finish(kept, errOpenOrphaned)
		return st, err
	}
}

// StreamTap sees the messages of one stream (see [Stream.Tap]): Send
// sees each message given to [Stream.Send] before it is sent, Recv each
// message [Stream.Recv] is about to return. Either may be nil. msg is the
// stream's or the caller's buffer: read it during the call only, never
// change or keep it.
//
// An error from Send makes Send return it without sending the message;
// an error from Recv makes Recv return it instead of the message (the
// message is consumed). The stream itself goes on either way: a tap that
// means to end it returns the error through its interceptor (server) or
// cancels the stream's ctx (client).
//
// Send's function runs on the goroutine that sends, Recv's on the one
// that receives, which may be two goroutines at once: a tap that counts
// both ways uses atomics or a lock.
//
// A panic in a tap's function goes on as one in the code that called
// Send or Recv: in a server handler it ends the stream like the
// handler's own panic (status 500, logged); on a client it reaches the
// caller. No lock of the stream is held then (Send had sent nothing of
// msg; Recv had taken the message off the queue), so the stream stays
// usable.
type StreamTap struct {
	Send func(msg []byte) error
	Recv func(msg []byte) error
}

// Tap installs t on the stream; taps installed earlier see a message
// first. It is meant for interceptors, and must be called before the
// stream is used: on a server before the interceptor calls next, on a
// client before the interceptor returns the stream. It is not safe for
// concurrent use with Send or Recv. A stream with taps pays their calls
// per message and nothing else; one without pays nothing.
func (s *Stream) Tap(t StreamTap) {
	if t.Send != nil || t.Recv != nil {
		s.taps = append(s.taps, t)
	}
}

// tapSend runs the taps' Send on msg.
func (s *Stream) tapSend(msg []byte) error {
	for _, t := range s.taps {
		if t.Send != nil {
			if err := t.Send(msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// tapRecv runs the taps' Recv on msg.
func (s *Stream) tapRecv(msg []byte) error {
	for _, t := range s.taps {
		if t.Recv != nil {
			if err := t.Recv(msg); err != nil {
				return err
			}
		}
	}
	return nil
}
