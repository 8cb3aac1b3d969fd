//go:build !race

package loadgen

import (
	"context"
	"net"
	"testing"
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
