package rpc_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/internal/gentest/svc"
	"github.com/zapcodec/zapcodec/rpc"
)

// A client interceptor, a stream client interceptor and a client
// observer see only the wire ordinal; the table of names the generated
// clients made on the connection filled (rpc.WithMethodNames, made before
// the client, which they close over) names it as the server's
// Server.MethodName does: "/eth.Eth/getBalance", "/svc.Geometry/area" at
// its base. A gRPC user's logging interceptor gets the full name.
func TestClientInterceptorSeesMethodName(t *testing.T) {
	var mu sync.Mutex
	var seen, observed, served []string
	names := new(rpc.MethodNames)
	ci := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		name, ok := names.Name(method)
		if !ok {
			name = "?"
		}
		mu.Lock()
		seen = append(seen, name)
		mu.Unlock()
		return invoke(ctx, method, req, resp)
	}
	obs := func(ev rpc.CallEvent) {
		name, _ := names.Name(ev.Method)
		mu.Lock()
		observed = append(observed, name)
		mu.Unlock()
	}
	s := rpc.NewServer(rpc.WithInterceptors(func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		mu.Lock()
		served = append(served, rpc.MethodFrom(ctx))
		mu.Unlock()
		return next(ctx, req, resp)
	}))
	ethzap.RegisterEthServer(s, ethImpl{})
	svc.RegisterGeometryServer(s, geoImpl{}, rpc.At(100))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(),
		rpc.WithMethodNames(names), rpc.WithClientInterceptors(ci), rpc.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.MethodNames() != names {
		t.Fatal("the client does not keep its names in the table given")
	}
	ctx := context.Background()
	eth := ethzap.NewEthClient(c)
	geo := svc.NewGeometryClient(c, rpc.At(100))
	var br ethzap.GetBalanceResponse
	if err := eth.GetBalance(ctx, &ethzap.GetBalanceRequest{ID: 7, Block: 41}, &br); err != nil {
		t.Fatal(err)
	}
	var p svc.Point
	if err := geo.Area(ctx, &svc.Shape{Tags: []uint32{1}}, &p); err != nil {
		t.Fatal(err)
	}
	if err := geo.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"/eth.Eth/getBalance", "/svc.Geometry/area", "/svc.Geometry/ping"}
	mu.Lock()
	defer mu.Unlock()
	for _, got := range [][]string{seen, observed, served} {
		if len(got) != len(want) {
			t.Fatalf("names seen %q (interceptor), %q (observer), %q (server); want %q", seen, observed, served, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("names seen %q (interceptor), %q (observer), %q (server); want %q", seen, observed, served, want)
			}
		}
	}
	for _, m := range []uint32{1, 101, 102, 103, 2, 104} {
		if got, want := c.MethodName(m), s.MethodName(m); got != want {
			t.Errorf("client names ordinal %d %q, the server %q", m, got, want)
		}
	}
}

// Two services at the same ordinals of one table name none of the
// ordinals they share: a call there is not given the other's name.
// Adding the same interface at the same base again changes nothing;
// at another base it names those ordinals too.
func TestMethodNamesCollision(t *testing.T) {
	var n rpc.MethodNames
	ab := func(k uint32) string { return [...]string{"", "one", "two", "three"}[k] }
	n.Add("a.A", 3, ab)
	n.Add("b.B", 1, func(uint32) string { return "solo" })
	n.Add("a.A", 3, ab) // again: nothing changes
	for _, tc := range []struct {
		m    uint32
		name string
	}{{1, ""}, {2, "/a.A/two"}, {3, "/a.A/three"}, {4, ""}, {0, ""}} {
		if got, ok := n.Name(tc.m); got != tc.name || ok != (tc.name != "") {
			t.Errorf("Name(%d) = %q %v, want %q", tc.m, got, ok, tc.name)
		}
	}
	// The same interface at another base names its ordinals there.
	n.Add("a.A", 3, ab, rpc.At(10))
	if got, ok := n.Name(11); got != "/a.A/one" || !ok {
		t.Errorf("Name(11) = %q %v", got, ok)
	}
	if got, ok := n.Name(rpc.HealthMethod); got != rpc.HealthMethodName || !ok {
		t.Errorf("Name(HealthMethod) = %q %v", got, ok)
	}
	var none *rpc.MethodNames
	if got, ok := none.Name(1); got != "" || ok {
		t.Errorf("nil table: Name(1) = %q %v", got, ok)
	}
	// Ordinals past MaxMethod are not named (nor wrap round).
	n.Add("z.Z", 3, ab, rpc.At(rpc.MaxMethod-1))
	if got, ok := n.Name(rpc.MaxMethod); got != "/z.Z/one" || !ok {
		t.Errorf("Name(MaxMethod) = %q %v", got, ok)
	}
	if got, _ := n.Name(rpc.MaxMethod + 1); got != "" {
		t.Errorf("Name(MaxMethod+1) = %q", got)
	}
}

// The lookup an interceptor makes per call allocates nothing, nor does
// a generated client made again on a client that has its names (a
// client made per request).
func TestMethodNameLookupAllocs(t *testing.T) {
	var n rpc.MethodNames
	n.Add(ethzap.EthServiceName, 1, ethzap.EthMethodName)
	at := rpc.At(100)
	n.Add(svc.GeometryServiceName, 3, svc.GeometryMethodName, at)
	var sink string
	if a := testing.AllocsPerRun(1000, func() {
		name, _ := n.Name(102)
		sink = name
	}); a != 0 || sink != "/svc.Geometry/notify" {
		t.Fatalf("Name: %v allocations (%q), want 0", a, sink)
	}
	nc, peer := net.Pipe()
	defer peer.Close()
	c := rpc.NewClient(nc)
	defer c.Close()
	svc.NewGeometryClient(c, at)
	if a := testing.AllocsPerRun(1000, func() {
		rpc.NameMethods(c, svc.GeometryServiceName, 3, svc.GeometryMethodName, 100)
		sink = c.MethodName(101)
	}); a != 0 || sink != "/svc.Geometry/area" {
		t.Fatalf("NameMethods again and MethodName: %v allocations (%q), want 0", a, sink)
	}
	// A generated client made again: its own struct alone.
	var g *svc.GeometryClient
	if a := testing.AllocsPerRun(1000, func() { g = svc.NewGeometryClient(c, at) }); a != 1 || g == nil {
		t.Fatalf("NewGeometryClient again: %v allocations, want 1 (the client)", a)
	}
}
