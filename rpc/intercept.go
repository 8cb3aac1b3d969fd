package rpc

import (
	"context"
)

// Interceptor runs around every handler of a server that has it (see
// [WithInterceptors]): it sees the call's ctx, its wire method ordinal
// (the mount offset included, see [At]; [MethodFrom](ctx) or
// [Server.MethodName](method) gives its full name, "/greet.Greeter/hello",
// as gRPC's info.FullMethod), the request payload and the
// server's answer buffer, and calls next to run the rest of the chain and
// finally the handler, or answers by itself without calling next. It may
// replace next's result or error; the error it returns is answered like a
// handler's (see [Handler]: a *[StatusError] keeps its code, ctx's
// context.DeadlineExceeded once the call's deadline passed answers 504,
// any other error 500). It may add response metadata with ctx
// ([SetResponseMetadata]), before or after it calls next. A panic in an
// interceptor is handled like a handler panic (500, logged, the
// connection goes on).
//
// Buffers: req and resp follow the handler rules (see [Handler]): valid
// only until the interceptor returns; an interceptor that keeps bytes of
// either copies them. Interceptors do not run for calls answered without
// a handler: an unknown method (404), a malformed envelope (400), a call
// refused after go-away (503), metadata refused (431, 400), a request
// over the maximum frame size (413), a target
// without [WithPipelining] (400), a call whose connection closed before a
// worker started it, one whose deadline passed before it could run
// (504), one whose pipelining target failed (400), nor for the health
// service ([HealthMethod]). They do run for the reflection service
// ([ReflectionMethod], on a server made with [WithReflection]), built
// around it once in NewServer, so one that authenticates calls guards
// it.
type Interceptor func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error)

// WithInterceptors installs interceptors around every handler registered
// on the server afterwards by [Server.Handle] (generated Register…Server
// functions go through it), in order: the first is outermost (it runs
// first and sees the final result). Several WithInterceptors options
// append. The chain is built once per Handle call, so a call pays only
// the interceptors' own cost: a trivial one (return next(ctx, req, resp))
// allocates nothing. A panic in an interceptor answers the call 500 and
// is logged, like a handler's: the connection and other calls go on.
func WithInterceptors(i ...Interceptor) ServerOption {
	i = append([]Interceptor(nil), i...)
	return serverOption(func(o *serverOptions) {
		for _, f := range i {
			if f != nil {
				o.interceptors = append(o.interceptors, f)
			}
		}
	})
}

// chainHandler wraps h (served at method) in the interceptors, first
// outermost. It is built once, at registration.
func chainHandler(ics []Interceptor, method uint32, h Handler) Handler {
	for k := len(ics) - 1; k >= 0; k-- {
		ic, next := ics[k], h
		h = func(ctx context.Context, req, resp []byte) ([]byte, error) {
			return ic(ctx, method, req, resp, next)
		}
	}
	return h
}

// Invoker sends one call: the innermost Invoker of a client's chain is the
// call on the wire (see [Client.Call] for the buffers and errors).
type Invoker func(ctx context.Context, method uint32, req, resp []byte) ([]byte, error)

// ClientInterceptor runs around every [Client.Call] of a [Client] that
// has it (see [WithClientInterceptors]; not around its promise calls,
// below): it may change ctx (to add metadata,
// say), inspect or replace req, call invoke to run the rest of the chain
// and the call itself, and replace the result or error. It sees the wire
// ordinal; the client's table of method names ([MethodNames]) gives its
// full name, "/greet.Greeter/hello" (what gRPC hands its interceptors as
// method): the generated clients made on the client add their
// interface's names to the table at their base. Make the table before
// the client, give it with [WithMethodNames] and close over it in the
// interceptor (name, ok := names.Name(method); 0 allocations, no lock).
// An ordinal no generated client named, or that two services added to
// one table claim, has no name (ok false). It sees the client's health
// checks too ([CheckHealth], and rpc/cluster's probes through the
// interceptors of its connections): their ordinal, [HealthMethod], is
// named [HealthMethodName] in every table ([Reflect]'s, [ReflectionMethod],
// [ReflectionMethodName]). It must return
// resp extended (as [Caller].Call does) or a slice of its own; req and
// resp are the caller's, so an interceptor keeps nothing of them after it
// returns.
//
// Interceptors given to the connections of an rpc/cluster client run once
// per attempt; its own (cluster.WithInterceptors) run once around a call
// and its retry. The observer ([WithObserver]) sees each attempt on the
// wire.
//
// Interceptors run around [Client.Call] only (and so around the Call of
// a generated client, and of rpc/cluster): not around a call sent without
// waiting, [Client.Send] (a generated client's Send<Method>) or
// [Promise.Send], nor around one pipelined on a promise with
// [Promise.Call]. Why: an Invoker returns the call's answer, and Send
// returns before there is one, so an interceptor around it could neither
// see the answer nor retry; it would be handed a result that does not
// exist. Promise.Call does wait for its answer, but its request has no
// payload of its own (the server runs it on the promise's answer and
// drops any an interceptor would put there), and running the chain for
// it alone would intercept the second call of a pipeline and never the
// first: every promise call is left out, so that the rule has no hole.
// Such a call's request carries the deadline, cap and metadata of the
// ctx given to it ([WithCap], [WithMetadata]) and nothing else: what an
// interceptor adds to every call (an auth token in the metadata, say)
// the caller of Send, Promise.Call or Promise.Send must add to that ctx
// itself. The observer ([WithObserver]) does see these calls, each once:
// metrics and logs that must cover every call belong there.
//
// A panic in a client interceptor is not recovered: it runs on the
// caller's goroutine, and the panic goes on to the caller of Call, as one
// in the caller's own code would (gRPC-go does the same). It leaves
// nothing held: a call that invoke sent has been answered or abandoned
// by the time invoke returns, so the client, its connection and other
// calls go on.
type ClientInterceptor func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error)

// WithClientInterceptors installs interceptors around every [Client.Call]
// of a [Client], in order: the first is outermost. Several options append.
// The chain is built once, when the client is created: a
// trivial interceptor (return invoke(ctx, method, req, resp)) allocates
// nothing per call. A panic in one goes on to the caller and leaves the
// client usable (see [ClientInterceptor]). They do not run around
// [Client.Send], [Promise.Call] or [Promise.Send], whose requests carry
// only what their ctx has ([ClientInterceptor] says why).
func WithClientInterceptors(i ...ClientInterceptor) ClientOption {
	i = append([]ClientInterceptor(nil), i...)
	return clientOption(func(o *clientOptions) {
		for _, f := range i {
			if f != nil {
				o.interceptors = append(o.interceptors, f)
			}
		}
	})
}

// ChainInvoker returns inner wrapped in the interceptors, the first
// outermost, or nil when there are none. It is how a Client runs
// [WithClientInterceptors]; a Caller built on Clients (rpc/cluster) uses
// it to run its own interceptors once around each whole call.
func ChainInvoker(ics []ClientInterceptor, inner Invoker) Invoker {
	if len(ics) == 0 {
		return nil
	}
	h := inner
	for k := len(ics) - 1; k >= 0; k-- {
		ic, next := ics[k], h
		h = func(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
			return ic(ctx, method, req, resp, next)
		}
	}
	return h
}
