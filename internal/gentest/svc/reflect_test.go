package svc

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc"
)

// TestReflectedSchema: RegisterGeometryServer gives the server its
// interface's schema, which a server made with rpc.WithReflection serves
// at the mount's base: it parses alone and is the interface of
// service_ws.zap. A WithSchema among the caller's options replaces it.
func TestReflectedSchema(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	srv := rpc.NewServer(rpc.WithReflection())
	RegisterGeometryServer(srv, &geometry{}, rpc.At(10))
	go srv.Serve(l)
	defer srv.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svcs, err := rpc.Reflect(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].Name != GeometryServiceName || svcs[0].Base != 10 || svcs[0].Methods != 3 || svcs[0].Schema != zapGeometrySchema {
		t.Fatalf("reflected %+v", svcs)
	}
	f, err := schema.Parse("reflected.zap", []byte(svcs[0].Schema))
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interface("Geometry")
	if it == nil || len(it.Methods) != 3 || it.Method("area").Req.Size != f.Struct("Shape").Size {
		t.Fatalf("the reflected schema:\n%s", svcs[0].Schema)
	}

	other := rpc.NewServer(rpc.WithReflection())
	defer other.Close()
	RegisterGeometryServer(other, &geometry{}, rpc.WithSchema("mine"))
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go other.Serve(l2)
	c2, err := rpc.Dial(context.Background(), "tcp", l2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if svcs, err := rpc.Reflect(context.Background(), c2); err != nil || len(svcs) != 1 || svcs[0].Schema != "mine" {
		t.Fatalf("with WithSchema given: %+v, %v", svcs, err)
	}
}
