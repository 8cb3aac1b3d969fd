package rpc

import (
	"sync"
	"sync/atomic"
)

// MethodNames maps the wire ordinals a client calls to the full names of
// the methods of generated services, "/" + package + "." + interface +
// "/" + method ("/greet.Greeter/hello"), as [Server.MethodName] names
// them on a server and gRPC's interceptors get them (info.FullMethod,
// the method argument of a client interceptor). A client interceptor, a
// stream client interceptor or a client observer sees only the ordinal;
// it closes over the table to name it:
//
//	names := new(rpc.MethodNames)
//	logCalls := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
//		name, _ := names.Name(method)
//		...
//	}
//	c, err := rpc.Dial(ctx, "tcp", addr, rpc.WithMethodNames(names), rpc.WithClientInterceptors(logCalls))
//	greeter := greet.NewGreeterClient(c) // names ordinal 1 "/greet.Greeter/hello"
//
// A generated New…Client adds its interface's names, at the base its
// rpc.At gives, to the table of the Caller it is given ([NameMethods]):
// the [Client]'s ([WithMethodNames], else one of its own, see
// [Client.MethodNames]), or rpc/cluster's Client's, which its connections
// share. The ordinals are a connection's, not the process's: every
// interface's methods are 1..n unless mounted elsewhere with [At], so
// two services called on two connections (each alone on its server) have
// the same ordinals. That is why the names are kept per client, not in a
// registry of the process filled at init: there an ordinal would name
// the methods of every service at once.
//
// Two services added at overlapping ordinals of one table (a client made
// with the wrong [At], or one table given to the clients of two servers)
// name none of the ordinals they share: [MethodNames.Name] reports those
// as unnamed rather than give one service's name to the other's calls.
// [HealthMethod] is always named [HealthMethodName], [ReflectionMethod]
// [ReflectionMethodName].
//
// The zero value is an empty table, ready to use; it is safe for
// concurrent use. Name is a map lookup without a lock and allocates
// nothing; adding an interface already added at the same base is a
// lookup too (a generated client made per request costs nothing here);
// the first add of one copies the table.
type MethodNames struct {
	mu sync.Mutex // adds
	t  atomic.Pointer[methodNameTable]
}

// methodNameTable is one version of a MethodNames: never changed once
// published.
type methodNameTable struct {
	// names: wire ordinal to full name; "" for an ordinal two services
	// claimed (named by neither).
	names map[uint32]string
	added map[mountKey]struct{} // interfaces added, by name and base
}

// mountKey is an interface added at a base.
type mountKey struct {
	service string
	base    uint32
}

// Name returns the full name of the method at wire ordinal method, and
// true; "" and false for an ordinal no interface added names, or that two
// services added claim (see [MethodNames]). A nil table names only
// [HealthMethod] and [ReflectionMethod].
func (n *MethodNames) Name(method uint32) (string, bool) {
	switch method {
	case HealthMethod:
		return HealthMethodName, true
	case ReflectionMethod:
		return ReflectionMethodName, true
	}
	if n == nil {
		return "", false
	}
	t := n.t.Load()
	if t == nil {
		return "", false
	}
	name := t.names[method]
	return name, name != ""
}

// Add names the methods of the interface named service ("pkg.Interface"),
// mounted at the base opts give ([At]; 0 without one): method k,
// 1..methods, is at wire ordinal base+k and named "/" + service + "/" +
// name(k) ("" from name, or a nil name, leaves it unnamed; name is asked
// once per method, at the first add). Generated clients call it by way
// of [NameMethods]; code that calls by ordinal can name its methods too.
// Ordinals past [MaxMethod] are not named. Adding an interface already
// added at the same base does nothing.
func (n *MethodNames) Add(service string, methods int, name func(ordinal uint32) string, opts ...MountOption) {
	n.add(service, methods, name, MountBase(opts...))
}

// add is Add at base.
func (n *MethodNames) add(service string, methods int, name func(ordinal uint32) string, base uint32) {
	key := mountKey{service, base}
	if t := n.t.Load(); t != nil {
		if _, ok := t.added[key]; ok {
			return
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.t.Load()
	if old != nil {
		if _, ok := old.added[key]; ok {
			return
		}
	}
	t := &methodNameTable{names: make(map[uint32]string), added: make(map[mountKey]struct{})}
	if old != nil {
		for k, v := range old.names {
			t.names[k] = v
		}
		for k := range old.added {
			t.added[k] = struct{}{}
		}
	}
	t.added[key] = struct{}{}
	if name != nil {
		for k := 1; k <= methods && uint64(base)+uint64(k) <= MaxMethod; k++ {
			m := name(uint32(k))
			if m == "" {
				continue
			}
			full, id := "/"+service+"/"+m, base+uint32(k)
			if prev, ok := t.names[id]; ok && prev != full {
				full = "" // two services claim it: named by neither
			}
			t.names[id] = full
		}
	}
	n.t.Store(t)
}

// MethodNamer is a [Caller] that keeps the names of the methods called
// through it: [Client] and rpc/cluster's Client. Generated New…Client
// functions add their interface's names to its table ([NameMethods]).
type MethodNamer interface {
	// MethodNames returns the Caller's table of method names, never nil.
	MethodNames() *MethodNames
}

// NameMethods is for generated code: New…Client calls it with its
// interface's service name, method count, <I>MethodName and mount base
// ([MountBase] of its options). When c is a [MethodNamer] it adds the
// names to c's table ([MethodNames.Add] at that base); other Callers keep
// no names. It allocates nothing once the interface was added at that
// base.
func NameMethods(c Caller, service string, methods int, name func(ordinal uint32) string, base uint32) {
	if nm, ok := c.(MethodNamer); ok {
		if t := nm.MethodNames(); t != nil {
			t.add(service, methods, name, base)
		}
	}
}

// WithMethodNames makes the client keep the names of the methods called
// through it in n (see [MethodNames]), which the caller may share with
// its interceptors and observer, made before the client is: generated
// clients made on the client add their names to n, and n.Name(method)
// names an ordinal an interceptor sees. Several clients may share one
// table when they call the same services at the same bases. Default: a
// table of the client's own ([Client.MethodNames]).
func WithMethodNames(n *MethodNames) ClientOption {
	return clientOption(func(o *clientOptions) { o.names = n })
}

// MethodNames returns the client's table of method names: the one given
// with [WithMethodNames], else the client's own. Generated clients made
// on c add their names to it.
func (c *Client) MethodNames() *MethodNames {
	if c.opts.names != nil {
		return c.opts.names
	}
	return &c.names
}

// MethodName returns the full name of the method at wire ordinal method
// as generated clients made on c named it ("/greet.Greeter/hello"), as
// [Server.MethodName] does on a server: "" for an ordinal none named, or
// that two added services claim.
func (c *Client) MethodName(method uint32) string {
	name, _ := c.MethodNames().Name(method)
	return name
}
