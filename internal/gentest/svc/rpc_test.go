package svc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// geometry serves the whitespace-form interface of service_ws.zap.
type geometry struct{ notified, pings atomic.Int32 }

// Area answers the sum of the tags as X and the origin's Y.
func (g *geometry) Area(ctx context.Context, req ShapeView, resp *Point) error {
	it := req.Tags().Iter()
	for it.Next() {
		resp.X += int32(it.Value())
	}
	resp.Y = req.Origin().Y()
	return nil
}

func (g *geometry) Notify(ctx context.Context, req ShapeView) error {
	g.notified.Add(int32(req.Tags().Len()))
	return nil
}

func (g *geometry) Ping(ctx context.Context) error { g.pings.Add(1); return nil }

func TestGeometryRPC(t *testing.T) {
	if GeometryAreaOrdinal != 1 || GeometryNotifyOrdinal != 2 || GeometryPingOrdinal != 3 {
		t.Fatal("ordinals are not 1..3 in declaration order")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	srv := rpc.NewServer()
	impl := &geometry{}
	RegisterGeometryServer(srv, impl)
	go srv.Serve(l)
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer c.Close()
	cli := NewGeometryClient(c)
	ctx := context.Background()
	var p Point
	if err := cli.Area(ctx, &Shape{ID: 1, Origin: &Point{X: 5, Y: -7}, Tags: []uint32{1, 2, 39}, Label: "tri"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.X != 42 || p.Y != -7 {
		t.Fatalf("Area: %+v, want {42 -7}", p)
	}
	if err := cli.Notify(ctx, &Shape{Tags: []uint32{1, 2}}); err != nil || impl.notified.Load() != 2 {
		t.Fatalf("Notify: %v, %d tags seen", err, impl.notified.Load())
	}
	if err := cli.Ping(ctx); err != nil || impl.pings.Load() != 1 {
		t.Fatalf("Ping: %v", err)
	}
}
