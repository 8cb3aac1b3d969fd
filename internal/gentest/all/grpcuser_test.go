package all

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// What a user of gRPC-go's generated code looks for in the generated
// stubs: an Unimplemented server to embed, records filled from views, the
// names of methods, typed promises.

// partial implements only Ping and Stats of Service; the rest comes from
// UnimplementedServiceServer, as when the schema gained methods after the
// implementation was written.
type partial struct {
	UnimplementedServiceServer
	pings atomic.Int32
}

func (p *partial) Ping(ctx context.Context) error { p.pings.Add(1); return nil }

func (p *partial) Stats(ctx context.Context, out *Scalars) error {
	out.Count = 7
	return nil
}

var _ ServiceServer = (*partial)(nil)

// TestUnimplementedServer: a method left to UnimplementedServiceServer is
// answered as a server without the method answers it (404
// rpc.NoSuchMethod, rpc.IsNoSuchMethod true), for a method with a request
// and a result, one with a request only, one with neither, and through a
// typed promise; the methods the implementation has are served.
func TestUnimplementedServer(t *testing.T) {
	srv := rpc.NewServer(rpc.WithPipelining(0))
	impl := &partial{}
	RegisterServiceServer(srv, impl)
	cli := NewServiceClient(serve(t, srv))

	// The same calls to a server that has only Ping and Stats: what a
	// method the server lacks gets.
	bare := rpc.NewServer()
	bare.Handle(ServicePingOrdinal, func(ctx context.Context, req, out []byte) ([]byte, error) { return out, nil })
	lacking := NewServiceClient(serve(t, bare))

	ctx := context.Background()
	want := func(what string, err, lack error) {
		t.Helper()
		var se, le *rpc.StatusError
		if !rpc.IsNoSuchMethod(err) || !errors.As(err, &se) || se.Code != rpc.StatusNotFound || se.Message != rpc.NoSuchMethod {
			t.Errorf("%s: %v, want 404 %q (rpc.IsNoSuchMethod)", what, err, rpc.NoSuchMethod)
			return
		}
		if !errors.As(lack, &le) || le.Code != se.Code || le.Message != se.Message || le.Error() != se.Error() {
			t.Errorf("%s: %v unimplemented, %v on a server without the method", what, err, lack)
		}
		if rpc.IsRetryable(err) {
			t.Errorf("%s: retryable", what)
		}
	}
	var k Kitchen
	want("Get", cli.Get(ctx, &Pair{A: 1}, &k), lacking.Get(ctx, &Pair{A: 1}, &k))
	want("Put", cli.Put(ctx, &Point{X: 1}), lacking.Put(ctx, &Point{X: 1}))
	want("Reset", cli.Reset(ctx), lacking.Reset(ctx))
	var out Scalars
	want("Bump", cli.Bump(ctx, &Scalars{}, &out), lacking.Bump(ctx, &Scalars{}, &out))
	p, err := cli.SendBump(ctx, &Scalars{})
	if err != nil {
		t.Fatal(err)
	}
	want("SendBump's Wait", p.Wait(ctx, &out), lacking.Bump(ctx, &Scalars{}, &out))

	if err := cli.Ping(ctx); err != nil || impl.pings.Load() != 1 {
		t.Fatalf("Ping, implemented: %v (%d pings)", err, impl.pings.Load())
	}
	if err := cli.Stats(ctx, &out); err != nil || out.Count != 7 {
		t.Fatalf("Stats, implemented: %v %+v", err, out)
	}
}

// keeper keeps a record of every Get request past the handler, with
// DecodeView.
type keeper struct {
	UnimplementedServiceServer
	mu   sync.Mutex
	kept []*Pair
}

func (k *keeper) Get(ctx context.Context, req PairView, resp *Kitchen) error {
	p := new(Pair)
	if err := p.DecodeView(req); err != nil {
		return err
	}
	k.mu.Lock()
	k.kept = append(k.kept, p)
	k.mu.Unlock()
	return nil
}

// TestDecodeViewKeepsRequest: records a handler fills from its request
// view with DecodeView stay as they were sent while the server reuses the
// request buffer for the calls after.
func TestDecodeViewKeepsRequest(t *testing.T) {
	srv := rpc.NewServer()
	impl := &keeper{}
	RegisterServiceServer(srv, impl)
	cli := NewServiceClient(serve(t, srv))
	ctx := context.Background()
	var sent []Pair
	for i := range 50 {
		p := Pair{A: uint16(i), B: string(rune('a'+i%26)) + "-request-text-of-the-same-length"}
		var k Kitchen
		if err := cli.Get(ctx, &p, &k); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, p)
	}
	impl.mu.Lock()
	defer impl.mu.Unlock()
	if len(impl.kept) != len(sent) {
		t.Fatalf("%d requests kept, %d sent", len(impl.kept), len(sent))
	}
	for i, p := range impl.kept {
		if *p != sent[i] {
			t.Errorf("request %d kept as %+v, sent %+v", i, *p, sent[i])
		}
	}
}

// TestDecodeViewNested: DecodeView of a nested record's view, of a list
// element's, and of a null view (which resets the record) agree with the
// record the message was written from; the copies outlive the message's
// bytes.
func TestDecodeViewNested(t *testing.T) {
	k := Kitchen{
		Title: "t", Blob: []byte("blob"), Words: []uint32{4, 5}, Points: []Point{{1, 2}, {3, 4}},
		Origin: &Point{7, 8}, Self: &Kitchen{Title: "inner", Blob: []byte{9}, Points: []Point{{5, 6}}, Tail: 9},
	}
	msg := k.AppendZAP(nil)
	v, err := ReadKitchen(msg)
	if err != nil {
		t.Fatal(err)
	}
	var inner Kitchen
	var origin, second Point
	if err := inner.DecodeView(v.Self()); err != nil {
		t.Fatal(err)
	}
	if err := origin.DecodeView(v.Origin()); err != nil {
		t.Fatal(err)
	}
	if err := second.DecodeView(v.Points().At(1)); err != nil {
		t.Fatal(err)
	}
	clear(msg)
	if inner.Title != "inner" || string(inner.Blob) != "\x09" || len(inner.Points) != 1 || inner.Points[0] != (Point{5, 6}) || inner.Tail != 9 || inner.Self != nil {
		t.Errorf("Self: %+v", inner)
	}
	if origin != (Point{7, 8}) || second != (Point{3, 4}) {
		t.Errorf("Origin %+v, Points[1] %+v", origin, second)
	}
	// A null view: every field reads as zero.
	if err := inner.DecodeView(KitchenView{}); err != nil {
		t.Fatal(err)
	}
	if inner.Title != "" || len(inner.Blob) != 0 || len(inner.Points) != 0 || inner.Tail != 0 || inner.Origin != nil {
		t.Errorf("from a null view: %+v", inner)
	}
}

// TestMethodName: ServiceMethodName names each method by its schema
// ordinal, and nothing else; an interceptor of a service mounted at a
// base finds the name of each call from its wire ordinal.
func TestMethodName(t *testing.T) {
	want := map[uint32]string{
		ServiceGetOrdinal: "get", ServicePutOrdinal: "put", ServicePingOrdinal: "ping",
		ServiceStatsOrdinal: "stats", ServiceResetOrdinal: "reset", ServiceBumpOrdinal: "bump",
	}
	for ord, name := range want {
		if got := ServiceMethodName(ord); got != name {
			t.Errorf("ServiceMethodName(%d) = %q, want %q", ord, got, name)
		}
	}
	for _, ord := range []uint32{0, 7, 100, ^uint32(0)} {
		if got := ServiceMethodName(ord); got != "" {
			t.Errorf("ServiceMethodName(%d) = %q, want none", ord, got)
		}
	}

	const base = 100
	var (
		mu           sync.Mutex
		server, call []string
	)
	srv := rpc.NewServer(rpc.WithInterceptors(func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		mu.Lock()
		server = append(server, ServiceServiceName+"."+ServiceMethodName(method-base))
		mu.Unlock()
		return next(ctx, req, resp)
	}))
	RegisterServiceServer(srv, &service{}, rpc.At(base))
	c := serve(t, srv, rpc.WithClientInterceptors(func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		mu.Lock()
		call = append(call, ServiceMethodName(method-base))
		mu.Unlock()
		return invoke(ctx, method, req, resp)
	}))
	cli := NewServiceClient(c, rpc.At(base))
	ctx := context.Background()
	var st Scalars
	if err := cli.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cli.Stats(ctx, &st); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(server, []string{"all.Service.ping", "all.Service.stats"}) || !slices.Equal(call, []string{"ping", "stats"}) {
		t.Errorf("server interceptor saw %q, client interceptor %q", server, call)
	}
}
