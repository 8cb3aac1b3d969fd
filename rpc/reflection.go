package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ReflectionMethod is the wire method ordinal of the reflection service,
// which a [Server] made with [WithReflection] answers: with a
// [ReflectionResponse] that lists every service mounted on the server
// ([Server.Mount], [Server.MountNamed], generated Register…Server
// functions) in the order mounted, each with its name, its mount offset
// ([At]), its number of methods and the source of its .zap schema
// ([WithSchema]; generated Register…Server functions give theirs), so
// that a tool (zapcodec call, as grpcurl against a gRPC server that
// registered reflection) can encode calls to it without the schema file.
// The request is empty (a payload is ignored). Like [HealthMethod] it is
// reserved, far above [MaxMethod] (and not HealthMethod): no mounted
// ordinal reaches it. A server without WithReflection answers it 404
// [NoSuchMethod], as any ordinal it does not serve. It is an ordinary
// call on the canonical wire: no new frame kind. The schema is
// rpc/reflection.zap.
const ReflectionMethod uint32 = 0xFFFF_0002

// ReflectionMethodName is the full name [Server.MethodName], [MethodFrom]
// and [MethodNames.Name] give [ReflectionMethod]: method list of the
// service rpc.Reflection (gRPC's is
// "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo").
const ReflectionMethodName = "/rpc.Reflection/list"

// WithReflection makes the server answer [ReflectionMethod] with the
// services it serves and their schemas (see [ReflectionMethod]), so that
// `zapcodec call -list ADDR` and `zapcodec call -method S.m ADDR` work
// with no schema file. It is off by default, as gRPC's reflection is: it
// shows the whole API surface of the server (the schema source of every
// service given one, comments dropped by generated code) to any peer that
// may call it. Unlike the health check, the server's interceptors
// ([WithInterceptors]) run around it, so one that authenticates calls
// guards it too; observers see it as [ReflectionMethodName].
//
// The answer is built once for each set of mounted services (on the first
// call after a Mount) and kept; each call copies it into its answer, so
// many callers cost the copy, not a rebuild. An answer past the server's
// largest frame (16 MiB by default) is answered 500 as any handler's
// result too large for a frame is.
func WithReflection() ServerOption {
	return serverOption(func(o *serverOptions) { o.reflection = true })
}

// WithSchema gives the source of the .zap schema of the service a
// [Server.Mount] or [Server.MountNamed] mounts, for the server's
// reflection answer ([WithReflection]). The source must parse alone
// (every type the service uses declared in it) and declare the service's
// interface, named as the service is mounted ("greet.Greeter": package
// greet, interface Greeter); the server does not parse it, a tool reading
// it does. Generated Register…Server functions give it for their service
// (a re-print of the parts of the schema the service uses, see zapcodec
// gen), before the options their caller passes, so a WithSchema among
// those replaces it. A service mounted by hand gives its own:
//
//	s.MountNamed("shop.Shop", 2, shopMethodName, rpc.At(100), rpc.WithSchema(shopSchema))
//
// The last WithSchema of a mount wins; "" gives none. It is ignored
// where only a base is read ([MountBase]: generated clients).
func WithSchema(src string) MountOption { return schemaOption(src) }

// schemaOption is the MountOption of WithSchema.
type schemaOption string

func (o schemaOption) applyMount(c *mountConfig) { c.schema = string(o) }

// reflectionAnswer is the encoded ReflectionResponse of one set of
// mounts.
type reflectionAnswer struct {
	set  *mountSet // the mounts it lists (nil: none)
	body []byte    // the ReflectionResponse message
}

// serverReflection is a server's reflection state: its handler (nil
// without WithReflection) and the answer built last.
type serverReflection struct {
	h      Handler // serveReflection in the server's interceptors
	mu     sync.Mutex
	answer atomic.Pointer[reflectionAnswer]
}

// reflectionBody returns the ReflectionResponse of the services mounted
// now: the one kept when the mounts did not change since it was built,
// else a new one, built under a lock so that callers racing on a change
// build it once.
func (s *Server) reflectionBody() []byte {
	set := s.mounts.Load()
	if a := s.reflection.answer.Load(); a != nil && a.set == set {
		return a.body
	}
	s.reflection.mu.Lock()
	defer s.reflection.mu.Unlock()
	set = s.mounts.Load()
	if a := s.reflection.answer.Load(); a != nil && a.set == set {
		return a.body
	}
	var r ReflectionResponse
	if set != nil {
		r.Services = make([]ReflectedService, len(set.all))
		for i, m := range set.all {
			r.Services[i] = ReflectedService{
				Name:    m.service,
				Base:    m.first - 1,
				Methods: m.last + 1 - m.first,
				Schema:  m.schema,
			}
		}
	}
	a := &reflectionAnswer{set: set, body: r.AppendZAP(nil)}
	s.reflection.answer.Store(a)
	return a.body
}

// serveReflection answers ReflectionMethod on s.
func (s *Server) serveReflection(_ context.Context, _, resp []byte) ([]byte, error) {
	return append(resp, s.reflectionBody()...), nil
}

// Reflect asks the server behind c for the services it serves, on
// [ReflectionMethod], and returns them in the order mounted: name, mount
// offset, number of methods and schema source ("" for a service mounted
// with no [WithSchema]). The schema is the server's text, unchecked:
// parse it (package codec/schema) before trusting it. A server made
// without [WithReflection] (or of another implementation) answers 404
// [NoSuchMethod]: the error then says the server does not serve
// reflection, and [IsNoSuchMethod] reports it. An answer that is not a
// ReflectionResponse is an error wrapping the decoder's. The answer is
// at most a frame (the client's largest, 16 MiB by default), and
// decoding it allocates in proportion to its bytes.
func Reflect(ctx context.Context, c Caller) ([]ReflectedService, error) {
	out, err := c.Call(ctx, ReflectionMethod, nil, nil)
	if err != nil {
		if IsNoSuchMethod(err) {
			return nil, fmt.Errorf("rpc: reflection: the server does not serve reflection (rpc.WithReflection): %w", err)
		}
		return nil, err
	}
	var r ReflectionResponse
	if err := r.DecodeZAP(out); err != nil {
		return nil, fmt.Errorf("rpc: reflection: bad answer (%d bytes): %w", len(out), err)
	}
	for i := range r.Services {
		sv := &r.Services[i]
		if sv.Methods > MaxMethod || uint64(sv.Base)+uint64(sv.Methods) > MaxMethod {
			return nil, errors.New("rpc: reflection: bad answer: a service past MaxMethod")
		}
	}
	return r.Services, nil
}
