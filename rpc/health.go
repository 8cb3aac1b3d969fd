package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// HealthMethod is the wire method ordinal of the health service every
// [Server] answers. It is reserved: far above [MaxMethod], so no user
// ordinal (schema ordinals count from 1, mount offsets stay below
// MaxMethod) can reach it. The request payload is a [HealthCheckRequest]
// (an empty payload asks for the server as a whole), the answer a
// [HealthCheckResponse] whose Status is a [HealthStatus], the status
// stored for the service (HealthUnknown too, when it was set so); only a
// service name the server never knew is answered 404 (its text quotes at
// most 128 bytes of the name, and its length; it names no other service,
// so that a peer cannot learn from it what the server runs, unless the
// server was made with [WithHealthListing]). The schema is
// rpc/health.zap.
// Interceptors do not run for it (an authenticating interceptor must not
// hide a server's health from its load balancer); the observer sees it.
const HealthMethod uint32 = 0xFFFF_0001

// HealthMethodName is the full name [Server.MethodName] and [MethodFrom]
// give [HealthMethod]: method check of the service rpc.Health, spelled as
// the names of generated services are ("/" + package + "." + interface +
// "/" + method, as schema methods are written), where gRPC's health
// service is "/grpc.health.v1.Health/Check". An interceptor never sees
// it (interceptors do not run for health checks); an observer, and a
// log or metric keyed by method name, do.
const HealthMethodName = "/rpc.Health/check"

// HealthStatus is the health of a server or of one of its services.
type HealthStatus uint32

// Health statuses, as carried by HealthCheckResponse.Status.
const (
	// HealthUnknown: the service's status was set so ([Health.Set]), the
	// service is not known to the server (its answer was 404), or the
	// check failed. A load balancer must not take it for serving.
	HealthUnknown HealthStatus = 0
	// HealthServing: calls are welcome.
	HealthServing HealthStatus = 1
	// HealthNotServing: the service is up but should get no calls (set
	// with [Health.Set], before a planned stop say).
	HealthNotServing HealthStatus = 2
	// HealthDraining: the server is shutting down ([Server.Shutdown] or
	// Close began): calls running are finished, new ones are refused.
	HealthDraining HealthStatus = 3
)

// String returns "serving", "not serving", "draining" or "unknown".
func (h HealthStatus) String() string {
	switch h {
	case HealthServing:
		return "serving"
	case HealthNotServing:
		return "not serving"
	case HealthDraining:
		return "draining"
	case HealthUnknown:
		return "unknown"
	}
	return fmt.Sprintf("HealthStatus(%d)", uint32(h))
}

// Health holds the health statuses a server reports on [HealthMethod]:
// one for the server as a whole (service "") and one per service mounted
// with [Server.Mount] (generated Register…Server functions mount theirs
// under the schema's package and interface name, "pkg.Interface"). Get it
// with [Server.Health]; its methods are safe for concurrent use.
type Health struct {
	s  *Server
	mu sync.Mutex
	m  map[string]HealthStatus // absent "": serving
}

// Health returns the server's health statuses.
func (s *Server) Health() *Health { return &s.health }

// Set sets the status of service ("" for the whole server); checks of it
// are answered with st, HealthUnknown included (a service once set or
// mounted stays known: only a name never known is answered 404). A
// service not mounted may be set too (a health name for a group of
// methods, say). Once the server is shutting down every known service
// reports HealthDraining whatever was set.
func (h *Health) Set(service string, st HealthStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]HealthStatus)
	}
	h.m[service] = st
}

// SetAll sets the status of the server as a whole and of every service
// it knows now (mounted, or set with [Health.Set]) to st, as gRPC-go's
// health.Server Shutdown (not serving) and Resume (serving) do: a
// program about to stop calls SetAll(HealthNotServing), waits for its
// load balancer's probes to see it, then calls [Server.Shutdown] (which
// closes the listeners at once, so that a probe dialing anew is refused
// from then on, not told draining). A name never known stays unknown,
// and a service mounted later starts serving.
func (h *Health) SetAll(st HealthStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]HealthStatus)
	}
	for name := range h.m {
		h.m[name] = st
	}
	h.m[""] = st
}

// add makes service known as serving unless it has a status already.
func (h *Health) add(service string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]HealthStatus)
	}
	if _, ok := h.m[service]; !ok {
		h.m[service] = HealthServing
	}
}

// Status returns the status the server reports for service ("" for the
// whole server, serving unless set otherwise): the one set or
// HealthServing for a mounted one, HealthUnknown for a service it does
// not know (or one set so), HealthDraining for any known one once
// [Server.Shutdown] or Close began.
func (h *Health) Status(service string) HealthStatus {
	st, _ := h.lookup(service)
	return st
}

// lookup is Status, and whether service is known (the server as a whole
// always is).
func (h *Health) lookup(service string) (HealthStatus, bool) {
	h.mu.Lock()
	st, ok := h.m[service]
	h.mu.Unlock()
	if !ok {
		if service != "" {
			return HealthUnknown, false
		}
		st = HealthServing
	}
	if h.s != nil && h.s.isClosing() {
		return HealthDraining, true
	}
	return st, true
}

// maxHealthNameQuoted is how much of an unknown service's name the 404 of
// a health check quotes.
const maxHealthNameQuoted = 128

// With WithHealthListing, the 404 of a health check of an unknown service
// lists the names the server knows (so that a caller who asked for "Shop"
// learns it is "shop.Shop"): the first maxHealthNamesListed in byte order, each cut to
// maxHealthNameListed bytes, while the list stays within
// maxHealthNamesBytes; the rest are counted.
const (
	maxHealthNamesListed = 8
	maxHealthNameListed  = 64
	maxHealthNamesBytes  = 256
)

// appendKnown appends to b, for the 404 of a check of an unknown
// service, the names of the services h knows (those mounted or set, not
// the server's ""): ` (known services: "a.A", "b.B" and 3 more)`, or
// ` (no service is known by name; "" checks the server)`. It holds h.mu
// for one pass over the names, keeping the smallest few, and is bounded
// whatever their number.
func (h *Health) appendKnown(b []byte) []byte {
	var first [maxHealthNamesListed]string
	n, total := 0, 0
	h.mu.Lock()
	for name := range h.m {
		if name == "" {
			continue
		}
		total++
		// Insert name into first[:n], kept sorted, dropping the largest
		// when it is full.
		i := n
		for i > 0 && first[i-1] > name {
			i--
		}
		if i == len(first) {
			continue
		}
		if n < len(first) {
			n++
		}
		copy(first[i+1:n], first[i:n-1])
		first[i] = name
	}
	h.mu.Unlock()
	if total == 0 {
		return append(b, ` (no service is known by name; "" checks the server)`...)
	}
	b = append(b, " (known services: "...)
	start, listed := len(b), 0
	for _, name := range first[:n] {
		mark := len(b)
		if listed > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, name[:textCut(name, maxHealthNameListed)])
		if len(name) > maxHealthNameListed {
			b = append(b, "..."...)
		}
		if listed > 0 && len(b)-start > maxHealthNamesBytes {
			b = b[:mark] // the first is listed whatever its length
			break
		}
		listed++
	}
	if rest := total - listed; rest > 0 {
		b = fmt.Appendf(b, " and %d more", rest)
	}
	return append(b, ')')
}

// serveHealth is the handler of HealthMethod.
func serveHealth(ctx context.Context, req, resp []byte) ([]byte, error) {
	j, _ := ctx.Value(callInfoKey{}).(*job)
	if j == nil || j.c == nil {
		return resp, Errorf(StatusInternal, "rpc: health: no server")
	}
	var service []byte
	if len(req) > 0 {
		v, err := ReadHealthCheckRequest(req)
		if err != nil {
			return resp, Errorf(StatusBadRequest, "rpc: health: %v", err)
		}
		service = v.ServiceBytes()
	}
	st, known := j.c.s.health.lookup(string(service))
	if !known {
		// The name is quoted cut: the peer's name, quoted, is up to four
		// times its length, and a request of the largest frame would
		// have the server build an answer of four such frames (sent as
		// a 500, too large for a frame).
		// With WithHealthListing, the names the server knows follow, as
		// few and as cut as appendKnown keeps them; by default none do:
		// the check runs before any interceptor, for any peer.
		var msg []byte
		if n := len(service); n > maxHealthNameQuoted {
			msg = fmt.Appendf(msg, "rpc: health: no such service %q... (%d bytes)",
				service[:textCut(service, maxHealthNameQuoted)], n)
		} else {
			msg = fmt.Appendf(msg, "rpc: health: no such service %q", service)
		}
		if j.c.s.opts.healthList {
			msg = j.c.s.health.appendKnown(msg)
		}
		return resp, &StatusError{Code: StatusNotFound, Message: string(msg)}
	}
	r := HealthCheckResponse{Status: uint32(st)}
	return r.AppendZAP(resp), nil
}

// CheckHealth asks the server behind c for the health of service ("" for
// the server as a whole) on [HealthMethod]. A server that announced
// go-away (or refused the check as not run) is draining: CheckHealth
// returns HealthDraining and a nil error. A service whose status was set
// to HealthUnknown returns HealthUnknown and a nil error. Any other
// failure returns HealthUnknown and the error: a *StatusError with code
// 404 for a service the server never knew (its message quotes the name
// asked for, and names the services the server knows only when it was
// made with [WithHealthListing]), the call's error otherwise (a
// server of another implementation answers 404 "no such method").
func CheckHealth(ctx context.Context, c Caller, service string) (HealthStatus, error) {
	var req []byte
	if service != "" {
		r := HealthCheckRequest{Service: service}
		req = r.AppendZAP(nil)
	}
	out, err := c.Call(ctx, HealthMethod, req, nil)
	if err != nil {
		if errors.Is(err, ErrGoAway) {
			return HealthDraining, nil
		}
		return HealthUnknown, err
	}
	var r HealthCheckResponse
	if err := r.DecodeZAP(out); err != nil {
		return HealthUnknown, fmt.Errorf("rpc: health: bad answer: %w", err)
	}
	return HealthStatus(r.Status), nil
}
