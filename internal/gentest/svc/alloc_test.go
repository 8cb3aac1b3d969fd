//go:build !race

package svc

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
	"github.com/zapcodec/zapcodec/rpc"
)

var sink uint64

// TestAllocs: AppendZAP into a buffer with room, and a warm DecodeZAP of the
// same message, allocate nothing for random records of every type.
func TestAllocs(t *testing.T) { check.Allocs(t, 14, types) }

// TestViewAllocs: the Shape view (nested Point, list<u32>) allocates nothing.
func TestViewAllocs(t *testing.T) {
	m := Shape{ID: 3, Origin: &Point{X: -5, Y: 7}, Tags: []uint32{1, 2, 3}, Label: "tri"}
	msg := m.AppendZAP(nil)
	f := func() {
		v, _ := ReadShape(msg)
		sink += uint64(v.ID()) + uint64(v.Origin().Y()) + uint64(v.Tags().At(2)) + uint64(len(v.Label()))
		it := v.Tags().Iter()
		for it.Next() {
			sink += uint64(it.Value())
		}
	}
	f()
	if sink == 0 {
		t.Fatal("nothing read")
	}
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("views: %v allocations, want 0", n)
	}
}

// TestPromiseAllocs: a typed promise's Send and Wait, for a result
// without text, bytes or lists (Point), allocate nothing once warm, as
// the typed unary call does: the answer is read into a pooled buffer,
// decoded from it and the buffer given back. The whole process is
// counted (the server's side too).
func TestPromiseAllocs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	srv := rpc.NewServer()
	RegisterGeometryServer(srv, &geometry{})
	go srv.Serve(l)
	defer srv.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := NewGeometryClient(c)
	ctx := context.Background()
	req := &Shape{ID: 1, Origin: &Point{X: 5, Y: -7}, Tags: []uint32{1, 2, 39}}
	var resp Point
	for name, call := range map[string]func(){
		"Area": func() {
			resp = Point{}
			if err := cli.Area(ctx, req, &resp); err != nil || resp.X != 42 {
				t.Fatalf("Area: %+v, %v", resp, err)
			}
		},
		"SendArea, Wait": func() {
			resp = Point{}
			p, err := cli.SendArea(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(ctx, &resp); err != nil || resp.X != 42 || resp.Y != -7 {
				t.Fatalf("Wait: %+v, %v", resp, err)
			}
		},
	} {
		for range 100 {
			call()
		}
		if n := testing.AllocsPerRun(2000, call); n != 0 {
			t.Errorf("%s: %v allocations a call, want 0", name, n)
		}
	}
}
