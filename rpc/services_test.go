package rpc_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/internal/gentest/svc"
	"github.com/zapcodec/zapcodec/rpc"
)

type ethImpl struct{}

func (ethImpl) GetBalance(ctx context.Context, req ethzap.GetBalanceRequestView, resp *ethzap.GetBalanceResponse) error {
	resp.ID = req.ID()
	resp.Nonce = req.Block() + 1
	return nil
}

type geoImpl struct{}

func (geoImpl) Area(ctx context.Context, req svc.ShapeView, resp *svc.Point) error {
	resp.X = int32(req.Tags().Len())
	return nil
}
func (geoImpl) Notify(ctx context.Context, req svc.ShapeView) error { return nil }
func (geoImpl) Ping(ctx context.Context) error                      { return nil }

// Two generated interfaces on one server over TCP: Eth at the canonical
// ordinals, Geometry at offset 100; their generated clients share one
// connection, both go through the interceptors on both sides (which see
// the wire ordinals), both answer health checks, and mounting Geometry
// over Eth's ordinals panics.
func TestSeveralServicesOneServer(t *testing.T) {
	var mu sync.Mutex
	var seenS, seenC []uint32
	si := func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		mu.Lock()
		seenS = append(seenS, method)
		mu.Unlock()
		return next(ctx, req, resp)
	}
	ci := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		mu.Lock()
		seenC = append(seenC, method)
		mu.Unlock()
		return invoke(ctx, method, req, resp)
	}
	s := rpc.NewServer(rpc.WithInterceptors(si))
	ethzap.RegisterEthServer(s, ethImpl{})
	svc.RegisterGeometryServer(s, geoImpl{}, rpc.At(100))
	func() {
		defer func() {
			msg, _ := recover().(string)
			if !strings.Contains(msg, `service "svc.Geometry" is mounted already`) {
				t.Errorf("second Geometry mount: panic %q", msg)
			}
		}()
		svc.RegisterGeometryServer(s, geoImpl{})
	}()
	s2 := rpc.NewServer()
	ethzap.RegisterEthServer(s2, ethImpl{})
	func() {
		defer func() {
			msg, _ := recover().(string)
			if !strings.Contains(msg, `service "svc.Geometry" at ordinals 1..3 overlaps service "eth.Eth" at ordinals 1..1`) {
				t.Errorf("overlapping mount: panic %q", msg)
			}
		}()
		svc.RegisterGeometryServer(s2, geoImpl{})
	}()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(), rpc.WithClientInterceptors(ci))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	eth := ethzap.NewEthClient(c)
	geo := svc.NewGeometryClient(c, rpc.At(100))
	var br ethzap.GetBalanceResponse
	if err := eth.GetBalance(ctx, &ethzap.GetBalanceRequest{ID: 7, Block: 41}, &br); err != nil || br.ID != 7 || br.Nonce != 42 {
		t.Fatalf("GetBalance: %+v %v", br, err)
	}
	var p svc.Point
	if err := geo.Area(ctx, &svc.Shape{Tags: []uint32{1, 2, 3}}, &p); err != nil || p.X != 3 {
		t.Fatalf("Area: %+v %v", p, err)
	}
	if err := geo.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if got, want := seenS, []uint32{1, 101, 103}; !equal(got, want) {
		t.Errorf("server interceptor saw methods %v, want %v", got, want)
	}
	if got, want := seenC, []uint32{1, 101, 103}; !equal(got, want) {
		t.Errorf("client interceptor saw methods %v, want %v", got, want)
	}
	mu.Unlock()
	// Geometry's client without the offset calls ordinal 3, which nothing
	// serves on this server: the base is the client's business too.
	if err := svc.NewGeometryClient(c).Ping(ctx); rpc.Code(err) != rpc.StatusNotFound {
		t.Fatalf("Ping at the wrong base: %v, want 404", err)
	}
	for _, name := range []string{ethzap.EthServiceName, svc.GeometryServiceName, ""} {
		if st, err := rpc.CheckHealth(ctx, c, name); st != rpc.HealthServing || err != nil {
			t.Fatalf("health of %q: %v %v", name, st, err)
		}
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
