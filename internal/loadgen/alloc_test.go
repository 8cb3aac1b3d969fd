//go:build !race

package loadgen

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

func TestRecordAllocatesNothing(t *testing.T) {
	h := new(Histogram)
	v := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = v*3 + 7
	}); n != 0 {
		t.Fatalf("Record allocates %v per call, want 0", n)
	}
}

// A warm direct call allocates nothing (the rpc.Client path is checked by
// package rpc's own tests).
func TestDirectCallAllocatesNothing(t *testing.T) {
	_, addr := startServer(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	d := newDirectConn(nc)
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, resp := []byte("payload"), make([]byte, 0, 64)
	call := func() {
		out, err := d.Call(ctx, mEcho, req, resp[:0])
		if err != nil || string(out) != "payload" {
			t.Fatalf("call: %q, %v", out, err)
		}
	}
	call() // warm: the reader's buffers, the ctx's AfterFunc
	if n := testing.AllocsPerRun(200, call); n != 0 {
		t.Fatalf("a direct call allocates %v times, want 0", n)
	}
}

// Request metadata (Config.Metadata) costs a call no allocation, on a
// direct connection (its bytes set once) or an rpc.Client (the ctx of
// rpc.WithMetadata made once, as run makes it).
func TestMetadataCallAllocatesNothing(t *testing.T) {
	addr := mdServer(t)
	md := []string{"tenant", "blue", "trace", "a=b"}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	d := newDirectConn(nc)
	d.md = encodeMetadata(md)
	defer d.Close()
	c, err := rpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(rpc.WithMetadata(context.Background(), md...))
	defer cancel()
	req, resp := []byte("payload"), make([]byte, 0, 64)
	for _, conn := range []struct {
		name string
		c    callConn
	}{{"direct", d}, {"rpc.Client", c}} {
		call := func() {
			out, err := conn.c.Call(ctx, 1, req, resp[:0])
			if err != nil || string(out) != "payload" {
				t.Fatalf("%s call: %q, %v", conn.name, out, err)
			}
		}
		call() // warm
		if n := testing.AllocsPerRun(200, call); n != 0 {
			t.Errorf("a %s call with metadata allocates %v times, want 0", conn.name, n)
		}
	}
}
