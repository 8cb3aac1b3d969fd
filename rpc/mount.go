package rpc

import (
	"fmt"
	"sort"
)

// MountOption places a generated interface's methods on a server (in
// Register…Server) and tells a generated client where to find them (in
// New…Client). See [At]. It has the shape of the other options of this
// package (an interface implemented by the values the With… and At
// functions return).
type MountOption interface{ applyMount(*mountConfig) }

// mountOption is a MountOption that sets the config with a function.
type mountOption func(*mountConfig)

func (f mountOption) applyMount(c *mountConfig) { f(c) }

type mountConfig struct{ base uint32 }

// At mounts an interface at offset base: its method with schema ordinal k
// is served, and called, at wire ordinal base+k. The default, base 0, is
// where a canonical client calls (ordinals 1..n), so one interface per
// server needs no option; the others of a server get each their own base,
// and their clients the same one:
//
//	eth.RegisterEthServer(s, ethImpl)                  // ordinals 1..n
//	admin.RegisterAdminServer(s, adminImpl, rpc.At(1000)) // 1001..1000+m
//	ac := admin.NewAdminClient(pool, rpc.At(1000))
func At(base uint32) MountOption {
	return mountOption(func(c *mountConfig) { c.base = base })
}

// MountBase returns the base offset opts give (the last At wins; 0 without
// one). Generated clients call it once, in New…Client.
func MountBase(opts ...MountOption) uint32 {
	var c mountConfig
	for _, o := range opts {
		if o != nil {
			o.applyMount(&c)
		}
	}
	return c.base
}

// mount is one interface mounted on a server.
type mount struct {
	service string
	first   uint32 // wire ordinal of its method 1
	last    uint32 // of its method n
}

// Mount reserves wire ordinals base+1..base+methods for the interface
// named service (base from opts, see [At]) and returns base; generated
// Register…Server functions call it before registering their handlers at
// base + their ordinals with [Server.Handle]. The service's health status
// ([Server.Health]) starts as HealthServing.
//
// Mount panics, like http.ServeMux on a duplicate pattern, when the range
// overlaps a service mounted before, when service is mounted already or
// empty, or when the range goes past [MaxMethod]: registration is program
// setup, and two interfaces answering at the same ordinals is a bug to
// fix before serving. [Server.Handle] itself does not check mounts.
func (s *Server) Mount(service string, methods int, opts ...MountOption) uint32 {
	base := MountBase(opts...)
	if service == "" {
		panic("rpc: Mount: empty service name")
	}
	if methods < 0 || uint64(base)+uint64(methods) > MaxMethod {
		panic(fmt.Sprintf("rpc: Mount: service %q at base %d with %d methods goes past MaxMethod (%d)", service, base, methods, MaxMethod))
	}
	m := mount{service: service, first: base + 1, last: base + uint32(methods)}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	for _, o := range s.mounts {
		if o.service == service {
			panic(fmt.Sprintf("rpc: Mount: service %q is mounted already (ordinals %d..%d)", service, o.first, o.last))
		}
	}
	for _, o := range s.mounts {
		if methods > 0 && o.last >= o.first && m.first <= o.last && o.first <= m.last {
			panic(fmt.Sprintf("rpc: Mount: service %q at ordinals %d..%d overlaps service %q at ordinals %d..%d; mount one of them elsewhere with rpc.At(base) (and give its clients the same rpc.At)",
				service, m.first, m.last, o.service, o.first, o.last))
		}
	}
	s.mounts = append(s.mounts, m)
	s.Health().add(service)
	return base
}

// Services returns the names of the services mounted on s, sorted.
func (s *Server) Services() []string {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	names := make([]string, 0, len(s.mounts))
	for _, m := range s.mounts {
		names = append(names, m.service)
	}
	sort.Strings(names)
	return names
}
