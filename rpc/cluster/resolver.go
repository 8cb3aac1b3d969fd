package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Resolver gives the addresses ("host:port", or paths with the "unix"
// network) of a service's replicas. An address given twice counts once,
// and so do the spellings of one IP address and port ("[::ffff:10.0.0.1]:80"
// is "10.0.0.1:80", "[2001:DB8:0::1]:80" is "[2001:db8::1]:80"; the client
// keys its replicas, names them in [Client.Stats] and dials them by the
// spelling of net/netip), and the spellings of one host name that differ
// only in case ("Example.com:80" is "example.com:80": DNS names are
// case-insensitive; the client keys, names and dials the lower-case one);
// a host name is not looked up, and it and its address are two replicas.
// The client calls Resolve at [Dial],
// then every refresh interval ([WithRefresh]) and soon after a
// connection to a replica fails. Each result is the complete set: an
// address missing from it is removed (its connections finish their calls
// and close; a dial or health check to it under way is given up at
// once), a new one is dialed, health-checked and admitted. An
// error, an empty set or one of more addresses than [WithMaxReplicas]
// allows keeps the addresses the client has (a DNS server that hiccups
// must not empty the service); at Dial the client starts with no replica
// and asks again soon (see [Dial]).
//
// Resolve must be safe for concurrent use when one resolver serves
// several clients, and should return soon after ctx is done: the client
// gives a resolution the health timeout or 5 s, whichever is longer. The
// client calls it on a goroutine of its own and stops waiting when ctx
// is done, so a Resolve that ignores ctx holds neither [Dial] nor
// [Client.Close]: it is left to finish on its own, and meanwhile the
// client does not call it again (the next resolution waits for that
// call's answer instead, within its own time). A Resolve that panics
// fails that resolution, the panic's value in the error ("the resolver
// panicked: ..."), rather than ending the program from the client's
// goroutine.
type Resolver interface {
	Resolve(ctx context.Context) ([]string, error)
}

// Endpoint is one address of a service and its weight.
type Endpoint struct {
	Addr string
	// Weight is the address's share of the calls relative to the other
	// addresses' weights: while the replicas keep up, the built-in
	// balancers give each a share of the calls proportional to its
	// weight (P2C compares loads relative to the weights, so a replica
	// that falls behind still gets less). A weight <= 0 counts as 1, and
	// so does the weight of every address a plain [Resolver] gives.
	Weight float64
}

// WeightedResolver is a [Resolver] whose addresses carry weights; the
// client calls ResolveWeighted instead of Resolve. [SRV] is one: it
// gives the SRV records' weights.
type WeightedResolver interface {
	Resolver
	ResolveWeighted(ctx context.Context) ([]Endpoint, error)
}

// Watcher is a Resolver that pushes changes: a service registry (Consul,
// etcd, Kubernetes endpoints) that learns of a change calls update with
// the complete new set, without the client asking. A client whose
// resolver is a Watcher calls Resolve once, at Dial, then runs Watch in a
// goroutine of its own until it is closed (ctx is then done), and does
// not poll while Watch runs. A Watch that returns, or panics, before
// then (a registry's stream that ended) leaves the client polling
// Resolve every refresh interval ([WithRefresh]) from then on, as a
// plain Resolver's (a panic is told in [Client.Stats]' LastError).
// Watch should return once ctx is done; [Client.Close] does not
// wait for it, and an update after Close changes nothing. Watch should call update once at its start with the current set
// (a change between Resolve and Watch would be lost otherwise); the rules
// of an update's set are those of Resolve's result. update may be called
// from any goroutine but not concurrently.
//
// The addresses of an update weigh 1 each: a Watcher that is also a
// [WeightedResolver] has its weights at Dial only, and loses them at its
// first update. A watcher with weights is a [WeightedWatcher].
type Watcher interface {
	Resolver
	Watch(ctx context.Context, update func(addrs []string))
}

// WeightedWatcher pushes changes as a [Watcher] does, with weights (see
// [Endpoint]): a client whose resolver is one calls ResolveWeighted once,
// at Dial, then runs WatchWeighted (never Watch, if it has one too) under
// a Watcher's rules.
type WeightedWatcher interface {
	WeightedResolver
	WatchWeighted(ctx context.Context, update func(eps []Endpoint))
}

// Static returns a resolver that always gives addrs (in that order; a
// duplicate counts once).
func Static(addrs ...string) Resolver { return static(slices.Clone(addrs)) }

type static []string

func (s static) Resolve(context.Context) ([]string, error) { return slices.Clone([]string(s)), nil }

// Push is a [Watcher] whose addresses are set by its owner: the glue to a
// service registry, or a test. Set sends the new set to every client
// watching it. It is safe for concurrent use.
type Push struct {
	mu      sync.Mutex
	deliver sync.Mutex // keeps updates in the order of Set
	addrs   []string
	next    int
	subs    map[int]func([]string)
}

// NewPush returns a Push holding addrs.
func NewPush(addrs ...string) *Push {
	return &Push{addrs: slices.Clone(addrs), subs: make(map[int]func([]string))}
}

// Set replaces the addresses and tells every watching client before it
// returns.
func (p *Push) Set(addrs ...string) {
	p.deliver.Lock()
	defer p.deliver.Unlock()
	p.mu.Lock()
	p.addrs = slices.Clone(addrs)
	subs := make([]func([]string), 0, len(p.subs))
	for _, f := range p.subs {
		subs = append(subs, f)
	}
	p.mu.Unlock()
	for _, f := range subs {
		f(slices.Clone(addrs))
	}
}

// Resolve returns the current addresses.
func (p *Push) Resolve(context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.addrs), nil
}

// Watch gives update the current addresses, then every set given to Set,
// until ctx is done.
func (p *Push) Watch(ctx context.Context, update func([]string)) {
	p.deliver.Lock()
	p.mu.Lock()
	id := p.next
	p.next++
	p.subs[id] = update
	cur := slices.Clone(p.addrs)
	p.mu.Unlock()
	update(cur)
	p.deliver.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	delete(p.subs, id)
	p.mu.Unlock()
}

// DNS resolves Host to its A and AAAA records and gives each address with
// Port. It is what the target "dns:///host:port" makes.
type DNS struct {
	Host string
	Port uint16
	// Network is "ip" (default: IPv4 and IPv6), "ip4" or "ip6".
	Network string
	// Resolver is the resolver to ask; nil: net.DefaultResolver.
	Resolver *net.Resolver
}

// Resolve looks the name up.
func (d *DNS) Resolve(ctx context.Context) ([]string, error) {
	network := d.Network
	if network == "" {
		network = "ip"
	}
	ips, err := resolver(d.Resolver).LookupNetIP(ctx, network, d.Host)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), d.Port).String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// SRV resolves Name's SRV records (such as "_zap._tcp.eth.svc") and the
// A and AAAA records of their targets, and gives each address with the
// record's port. Only the records of the lowest priority are used (the
// others are backups in SRV's terms). Their weights are honoured as RFC
// 2782 says (see [SRV.ResolveWeighted]). It is what the target
// "dns+srv:///_zap._tcp.eth.svc" makes.
type SRV struct {
	Name string
	// Network is "ip" (default), "ip4" or "ip6", for the targets.
	Network string
	// Resolver is the resolver to ask; nil: net.DefaultResolver.
	Resolver *net.Resolver
}

// Resolve looks the records and their targets up and gives the
// addresses, without their weights (see ResolveWeighted).
func (s *SRV) Resolve(ctx context.Context) ([]string, error) {
	eps, err := s.ResolveWeighted(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.Addr
	}
	return out, nil
}

// ResolveWeighted looks the records and their targets up and gives each
// address of the lowest priority a weight, so that the share of calls a
// record gets is the one RFC 2782 gives it: its weight over the sum of
// the weights, where the records of weight 0 share a chance of one in
// (sum + 1) between them (all of weight 0: equal shares). A record's
// weight is divided evenly among its target's addresses; an address
// named by several records adds their weights. The targets are looked up
// at the same time, eight at most at once, each once however many
// records name it. A target that does not exist or has no address is
// left out (an error only when none has one), and so is the target "."
// (RFC 2782: the service is not available there), without a lookup; a
// target whose lookup failed otherwise (it timed out, the DNS server
// failed, ctx ended) fails the resolution, so that the client keeps its
// replicas rather than drop that target's. Addresses come sorted.
func (s *SRV) ResolveWeighted(ctx context.Context) ([]Endpoint, error) {
	return s.resolveWeighted(ctx, resolver(s.Resolver))
}

// srvLookups is how many targets of an SRV resolution are looked up at
// once: one slow target does not hold the others back, and a long list of
// targets does not send a burst of queries.
const srvLookups = 8

// lookuper is what SRV asks: a *net.Resolver, or a test's fake.
type lookuper interface {
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (s *SRV) resolveWeighted(ctx context.Context, r lookuper) ([]Endpoint, error) {
	_, recs, err := r.LookupSRV(ctx, "", "", s.Name)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("cluster: no SRV record for %s", s.Name)
	}
	network := s.Network
	if network == "" {
		network = "ip"
	}
	lowest := recs[0].Priority
	for _, rec := range recs {
		lowest = min(lowest, rec.Priority)
	}
	// A target "." says the service is decidedly not available there
	// (RFC 2782): not a name to look up.
	recs = slices.DeleteFunc(slices.Clone(recs), func(rec *net.SRV) bool { return rec.Priority != lowest || rec.Target == "." })
	if len(recs) == 0 {
		return nil, fmt.Errorf("cluster: the SRV records of %s say the service is not available (target \".\")", s.Name)
	}
	zeros := 0
	for _, rec := range recs {
		if rec.Weight == 0 {
			zeros++
		}
	}
	ips, errs, err := lookupTargets(ctx, r, network, s.Name, recs)
	if err != nil {
		return nil, err
	}
	w := make(map[string]float64)
	var firstErr error
	for _, rec := range recs {
		if err := errs[rec.Target]; err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		// RFC 2782's selection gives a record of weight 0 a chance only
		// when the running sum is 0: 1 in sum+1, shared by the zeros.
		rw := float64(rec.Weight)
		if rec.Weight == 0 {
			rw = 1 / float64(zeros)
		}
		addrs := ips[rec.Target]
		for _, ip := range addrs {
			w[netip.AddrPortFrom(ip.Unmap(), rec.Port).String()] += rw / float64(len(addrs))
		}
	}
	if len(w) == 0 {
		return nil, firstErr
	}
	out := make([]Endpoint, 0, len(w))
	for a, x := range w {
		out = append(out, Endpoint{Addr: a, Weight: x})
	}
	slices.SortFunc(out, func(a, b Endpoint) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// lookupTargets looks the records' targets up, each once, srvLookups at
// a time. It gives each target's addresses, or the error that leaves it
// out (it does not exist, or has no address); any other failure ends the
// lookups still running and is returned, naming its target.
func lookupTargets(ctx context.Context, r lookuper, network, name string, recs []*net.SRV) (map[string][]netip.Addr, map[string]error, error) {
	ips := make(map[string][]netip.Addr, len(recs))
	errs := make(map[string]error)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		failed error // the first failure, which canceled the others
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, srvLookups)
	seen := make(map[string]bool, len(recs))
	for _, rec := range recs {
		target := rec.Target
		if seen[target] {
			continue
		}
		seen[target] = true
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			// A lookup failed, or ctx ended: this target is not asked.
			mu.Lock()
			if failed == nil {
				failed = fmt.Errorf("cluster: resolving %s, target of %s: %w", target, name, context.Cause(ctx))
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			addrs, err := r.LookupNetIP(ctx, network, target)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && len(addrs) > 0:
				ips[target] = addrs
			case err == nil:
				errs[target] = fmt.Errorf("cluster: %s has no address", target)
			case isNotFound(err):
				errs[target] = err
			case failed == nil:
				// A timeout, a server failure, the ctx ended: the target
				// may well have addresses, whose replicas a partial set
				// would remove from the client.
				failed = fmt.Errorf("cluster: resolving %s, target of %s: %w", target, name, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	return ips, errs, failed
}

// isNotFound reports whether a lookup's error says that the name does
// not exist or has no address of the network asked (NXDOMAIN, or no
// record of the type): an answer, not a failure to get one.
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// canonicalAddr returns the spelling of an address the client keys its
// replicas by: an IP address and port as net/netip writes them (lower
// case, zeros compressed, an IPv4-mapped IPv6 address as IPv4, the port
// without leading zeros), so that the spellings of one address make one
// replica; a host name and port with the name in lower case (DNS names
// are case-insensitive: "Example.com:80" and "example.com:80" are one
// replica); anything else (an IPv6 literal with a zone, a socket path,
// garbage) as given. Socket paths never come here (setEndpoints keeps
// them as given).
func canonicalAddr(a string) string {
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return lowerHost(a)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

// lowerHost returns a, a host name and port, with the name in lower case;
// a itself when it is not one (no port, or a host with a character a DNS
// name does not have: a bracketed IPv6 literal, a path) or has no upper
// case letter.
func lowerHost(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" || port == "" {
		return a
	}
	upper := false
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return a
		}
	}
	if !upper {
		return a
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

// resolveEndpoints asks res for the addresses, with their weights when it
// is a WeightedResolver (1 each otherwise).
func resolveEndpoints(ctx context.Context, res Resolver) ([]Endpoint, error) {
	if wr, ok := res.(WeightedResolver); ok {
		return wr.ResolveWeighted(ctx)
	}
	addrs, err := res.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	return unweighted(addrs), nil
}

// unweighted gives each address the weight 1.
func unweighted(addrs []string) []Endpoint {
	out := make([]Endpoint, len(addrs))
	for i, a := range addrs {
		out[i] = Endpoint{Addr: a, Weight: 1}
	}
	return out
}

func resolver(r *net.Resolver) *net.Resolver {
	if r == nil {
		return net.DefaultResolver
	}
	return r
}

// ErrTarget is matched (errors.Is) by the error of a target ParseTarget
// cannot read.
var ErrTarget = errors.New("cluster: bad target")

// ParseTarget returns the resolver a target names:
//
//	dns:///host:port                A and AAAA records of host ([DNS]); port required
//	dns://server:53/host:port       the same, asking the DNS server at server:53
//	dns+srv:///_zap._tcp.eth.svc    SRV records and their targets' addresses ([SRV])
//	dns+srv://server:53/name        the same, asking that DNS server
//	static:///a:7700,b:7700         this list ([Static]); also without "static:///"
//	static:///tmp/a.sock,/tmp/b.sock  socket paths ([WithNetwork] "unix")
//	host:port                       one address, dialed as given
//
// An authority (server:53, or [::1]:53; port 53 when it has none) sends
// the queries there over UDP, and TCP when an answer is truncated, with
// Go's own resolver. In a static list, the slash that ends "static://"
// is the leading slash of the first address when that address has
// another slash (a path): "static:///tmp/a.sock" is "/tmp/a.sock",
// "static:///a.sock" the relative "a.sock".
func ParseTarget(target string) (Resolver, error) {
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok {
		if target == "" {
			return nil, fmt.Errorf("%w: empty", ErrTarget)
		}
		return staticList(target)
	}
	authority, path, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, fmt.Errorf("%w: %q: want scheme://[authority]/name", ErrTarget, target)
	}
	var r *net.Resolver
	if authority != "" {
		server := dnsServer(authority)
		r = &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, server)
			},
		}
	}
	switch scheme {
	case "dns":
		host, port, err := net.SplitHostPort(path)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w: %q: want dns:///host:port", ErrTarget, target)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: port %q", ErrTarget, target, port)
		}
		return &DNS{Host: host, Port: uint16(p), Resolver: r}, nil
	case "dns+srv":
		if path == "" || strings.Contains(path, "/") {
			return nil, fmt.Errorf("%w: %q: want dns+srv:///name", ErrTarget, target)
		}
		return &SRV{Name: path, Resolver: r}, nil
	case "static":
		if authority != "" {
			return nil, fmt.Errorf("%w: %q: static:/// takes no authority", ErrTarget, target)
		}
		if first, _, _ := strings.Cut(path, ","); strings.Contains(first, "/") && !strings.HasPrefix(first, "/") {
			path = "/" + path // an absolute path: static:///tmp/a.sock
		}
		return staticList(path)
	}
	return nil, fmt.Errorf("%w: %q: unknown scheme %q (dns, dns+srv, static)", ErrTarget, target, scheme)
}

// dnsServer returns the address of the DNS server a target's authority
// names: port 53 unless it gives one; an IPv6 address in brackets or not.
func dnsServer(authority string) string {
	if _, _, err := net.SplitHostPort(authority); err == nil {
		return authority
	}
	host := authority
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return net.JoinHostPort(host, "53")
}

func staticList(list string) (Resolver, error) {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no address in %q", ErrTarget, list)
	}
	return Static(addrs...), nil
}
