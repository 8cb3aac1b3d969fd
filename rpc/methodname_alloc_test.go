//go:build !race

package rpc

import (
	"context"
	"testing"
)

// Server.MethodName and MethodFrom, a call's and a stream's, allocate
// nothing.
func TestMethodNameAllocs(t *testing.T) {
	s, addr, _ := testServer(t)
	for k, svc := range []string{"a.A", "b.B", "c.C"} {
		s.MountNamed(svc, 3, nameList("x", "y", "z"), At(uint32(100*(k+1))))
	}
	if n := testing.AllocsPerRun(100, func() {
		if s.MethodName(302) != "/c.C/y" || s.MethodName(7) != "" {
			panic("wrong name")
		}
	}); n != 0 {
		t.Errorf("Server.MethodName: %v allocations, want 0", n)
	}
	var callAllocs, streamAllocs float64 = -1, -1
	s.Handle(201, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		callAllocs = testing.AllocsPerRun(100, func() {
			if MethodFrom(ctx) != "/b.B/x" {
				panic("wrong name")
			}
		})
		return resp, nil
	})
	s.HandleStream(203, func(ctx context.Context, init []byte, st *Stream) error {
		streamAllocs = testing.AllocsPerRun(100, func() {
			if MethodFrom(ctx) != "/b.B/z" {
				panic("wrong name")
			}
		})
		return nil
	})
	c := dial(t, addr)
	if _, err := c.Call(context.Background(), 201, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, err := c.OpenStream(context.Background(), 203, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err == nil {
		t.Fatal("the stream sent a message")
	}
	if callAllocs != 0 || streamAllocs != 0 {
		t.Errorf("MethodFrom: %v allocations in a call, %v in a stream, want 0", callAllocs, streamAllocs)
	}
}
