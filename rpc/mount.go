package rpc

import (
	"context"
	"fmt"
	"sort"
)

// MountOption places a generated interface's methods on a server (in
// Register…Server) and tells a generated client where to find them (in
// New…Client). See [At]. It has the shape of the other options of this
// package (an interface implemented by the values the With… and At
// functions return).
type MountOption interface{ applyMount(*mountConfig) }

// atOption is the MountOption of At: the base itself, so that neither
// At (a base below 256) nor MountBase allocates.
type atOption uint32

func (b atOption) applyMount(c *mountConfig) { c.base = uint32(b) }

type mountConfig struct {
	base   uint32
	schema string // WithSchema (reflection.go)
}

// At mounts an interface at offset base: its method with schema ordinal k
// is served, and called, at wire ordinal base+k. The default, base 0, is
// where a canonical client calls (ordinals 1..n), so one interface per
// server needs no option; the others of a server get each their own base,
// and their clients the same one:
//
//	eth.RegisterEthServer(s, ethImpl)                  // ordinals 1..n
//	admin.RegisterAdminServer(s, adminImpl, rpc.At(1000)) // 1001..1000+m
//	ac := admin.NewAdminClient(pool, rpc.At(1000))
func At(base uint32) MountOption { return atOption(base) }

// MountBase returns the base offset opts give (the last At wins; 0 without
// one). Generated clients call it once, in New…Client. It allocates
// nothing.
func MountBase(opts ...MountOption) uint32 {
	var base uint32
	for _, o := range opts {
		switch o := o.(type) {
		case nil:
		case atOption:
			base = uint32(o)
		default:
			c := mountConfig{base: base}
			o.applyMount(&c)
			base = c.base
		}
	}
	return base
}

// mountConfigOf returns what opts say of a mount: its base ([At]) and
// its schema ([WithSchema]); the last of each wins.
func mountConfigOf(opts []MountOption) mountConfig {
	var c mountConfig
	for _, o := range opts {
		if o != nil {
			o.applyMount(&c)
		}
	}
	return c
}

// mount is one interface mounted on a server.
type mount struct {
	service string
	schema  string // its .zap source (WithSchema), "" without one
	first   uint32 // wire ordinal of its method 1
	last    uint32 // of its method n
	// names holds the full names of its methods ("/service/method"),
	// names[k-1] that of method k; nil when it was mounted without names
	// (Mount), "" for a method its name function did not name.
	names []string
}

// Mount reserves wire ordinals base+1..base+methods for the interface
// named service (base from opts, see [At]) and returns base; generated
// Register…Server functions call it (by way of [Server.MountNamed])
// before registering their handlers at base + their ordinals with
// [Server.Handle]. The service's health status ([Server.Health]) starts
// as HealthServing. Its methods have no names: [Server.MethodName] gives
// "" for them. [WithSchema] among opts gives the service's .zap source
// for the server's reflection answer ([WithReflection]).
//
// Mount panics, like http.ServeMux on a duplicate pattern, when the range
// overlaps a service mounted before, when service is mounted already or
// empty, or when the range goes past [MaxMethod]: registration is program
// setup, and two interfaces answering at the same ordinals is a bug to
// fix before serving. [Server.Handle] itself does not check mounts.
func (s *Server) Mount(service string, methods int, opts ...MountOption) uint32 {
	return s.MountNamed(service, methods, nil, opts...)
}

// MountNamed is [Server.Mount] for an interface whose methods have names:
// name(k) is the name of its method k, 1..methods ("" for one without a
// name; a nil name names none), asked once each, here. Generated
// Register…Server functions call it with their <I>MethodName. The full
// name of method k, which [Server.MethodName] and [MethodFrom] give for
// wire ordinal base+k, is "/" + service + "/" + name(k), built here once.
// It panics as Mount does.
func (s *Server) MountNamed(service string, methods int, name func(ordinal uint32) string, opts ...MountOption) uint32 {
	cfg := mountConfigOf(opts)
	base := cfg.base
	if service == "" {
		panic("rpc: Mount: empty service name")
	}
	if methods < 0 || uint64(base)+uint64(methods) > MaxMethod {
		panic(fmt.Sprintf("rpc: Mount: service %q at base %d with %d methods goes past MaxMethod (%d)", service, base, methods, MaxMethod))
	}
	m := mount{service: service, schema: cfg.schema, first: base + 1, last: base + uint32(methods)}
	if name != nil && methods > 0 {
		m.names = make([]string, methods)
		for k := range m.names {
			if n := name(uint32(k + 1)); n != "" {
				m.names[k] = "/" + service + "/" + n
			}
		}
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	old := s.mountList()
	for _, o := range old {
		if o.service == service {
			panic(fmt.Sprintf("rpc: Mount: service %q is mounted already (ordinals %d..%d)", service, o.first, o.last))
		}
	}
	for _, o := range old {
		if methods > 0 && o.last >= o.first && m.first <= o.last && o.first <= m.last {
			panic(fmt.Sprintf("rpc: Mount: service %q at ordinals %d..%d overlaps service %q at ordinals %d..%d; mount one of them elsewhere with rpc.At(base) (and give its clients the same rpc.At)",
				service, m.first, m.last, o.service, o.first, o.last))
		}
	}
	// New arrays: readers hold the old ones.
	t := &mountSet{all: append(old[:len(old):len(old)], m)}
	if p := s.mounts.Load(); p != nil {
		t.named = p.named
	}
	if m.names != nil {
		// Named mounts have methods and do not overlap: sorted by first,
		// the only one that can hold an ordinal is the last that starts
		// at or below it.
		i := sort.Search(len(t.named), func(i int) bool { return t.named[i].first > m.first })
		t.named = append(t.named[:i:i], append([]mount{m}, t.named[i:]...)...)
	}
	s.mounts.Store(t)
	s.Health().add(service)
	return base
}

// mountSet is what is mounted on a server, copied on write (under hmu)
// and read without a lock.
type mountSet struct {
	all   []mount // every mount, in the order mounted
	named []mount // the mounts with names (so with methods), sorted by first
}

// mountList returns the services mounted on s (read-only).
func (s *Server) mountList() []mount {
	if p := s.mounts.Load(); p != nil {
		return p.all
	}
	return nil
}

// MethodName returns the full name of the method served at wire ordinal
// method (the mount base included, as an [Interceptor], a
// [StreamInterceptor] and a [CallEvent] give it): "/greet.Greeter/hello"
// for method hello of the service greet.Greeter, unary or streaming, as
// gRPC-go's info.FullMethod spells it, so that code that reads or splits
// a gRPC method name reads it too. The names come from the generated
// Register…Server functions ([Server.MountNamed]). It returns "" for an
// ordinal no named mount covers: one registered with [Server.Handle] or
// [Server.HandleStream] alone, one of a service mounted with
// [Server.Mount] (such as by code generated before MountNamed existed:
// regenerate it to get names), or one nothing serves. [HealthMethod]
// is [HealthMethodName], [ReflectionMethod] [ReflectionMethodName]. It says what the ordinal was mounted as, whether
// or not a handler serves it now.
//
// It allocates nothing, takes no lock, and finds the mount by binary
// search, in time logarithmic in the number of services mounted with
// names; the call path pays nothing for it when nobody asks. A server's
// observer ([WithObserver]) calls it on the server it observes (a
// variable it closes over, set once NewServer returns).
func (s *Server) MethodName(method uint32) string {
	switch method {
	case HealthMethod:
		return HealthMethodName
	case ReflectionMethod:
		return ReflectionMethodName
	}
	p := s.mounts.Load()
	if p == nil {
		return ""
	}
	// The last named mount whose first ordinal is at most method.
	ms := p.named
	lo, hi := 0, len(ms)
	for lo < hi {
		if mid := int(uint(lo+hi) >> 1); ms[mid].first <= method {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return ""
	}
	m := &ms[lo-1]
	if k := method - m.first; uint64(k) < uint64(len(m.names)) {
		return m.names[k]
	}
	return ""
}

// MethodFrom returns the full name ([Server.MethodName]) of the method
// whose call or stream a handler's ctx, or any context derived from it,
// belongs to: what an interceptor or handler that has no *Server at hand
// logs, as a gRPC one logs grpc.Method(ctx). It is "" for a method
// without a name and for any other ctx (a client's, say). Like
// [CallInfo], call it only while the handler runs. It allocates nothing;
// nothing is stored on the call for it.
func MethodFrom(ctx context.Context) string {
	if j := callJob(ctx); j != nil {
		if s := j.conn().s; s != nil {
			return s.MethodName(j.method)
		}
		return ""
	}
	if st := streamFrom(ctx); st != nil && st.set != nil && st.set.sc != nil {
		return st.set.sc.s.MethodName(st.method)
	}
	return ""
}

// Services returns the names of the services mounted on s, sorted.
func (s *Server) Services() []string {
	ms := s.mountList()
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.service)
	}
	sort.Strings(names)
	return names
}
