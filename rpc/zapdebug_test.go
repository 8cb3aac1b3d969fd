//go:build zapdebug

package rpc

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
)

// TestZapdebugPoisonsKeptRequest: built with -tags zapdebug, a view of
// its request that a handler kept past its return reads poison by the
// time the caller has the answer, whether the call ran in the read loop
// or on a worker (pipelining sends every call to one), and whatever the
// request's size; without the tag the view read the request's bytes
// until a later call on the connection reused the buffer.
func TestZapdebugPoisonsKeptRequest(t *testing.T) {
	if !poison.Enabled() {
		t.Fatal("poisoning is off in the zapdebug build")
	}
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"worker", []ServerOption{WithPipelining(16)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept := make(chan []byte, 1)
			s, addr, _ := testServer(t, tc.opts...)
			s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
				kept <- req // a misuse: the view outlives the handler
				return append(resp, "ok"...), nil
			})
			c := dial(t, addr)
			for _, size := range []int{1, 100, 5000} {
				req := bytes.Repeat([]byte{'r'}, size)
				out, err := c.Call(context.Background(), 2, req, nil)
				if err != nil || string(out) != "ok" {
					t.Fatalf("size %d: %q, %v", size, out, err)
				}
				view := <-kept
				if want := bytes.Repeat([]byte{poison.Byte}, size); !bytes.Equal(view, want) {
					t.Fatalf("size %d: the kept view reads %q after the call returned, want all %#x", size, view[:min(len(view), 16)], poison.Byte)
				}
			}
		})
	}
}

// TestZapdebugAnswerAliasingRequest: a handler that answers with its
// request itself (a slice of it, not a copy in resp) still gets its answer
// to the caller intact in the zapdebug build (the request is poisoned
// after the write), and the buffer is poisoned before the next call on the
// connection reuses it: with one call in flight, the next call's handler
// finds poison past its own, shorter, request.
func TestZapdebugAnswerAliasingRequest(t *testing.T) {
	stale := make(chan []byte, 1)
	var prev []byte
	s, addr, _ := testServer(t, WithMaxInFlight(1))
	s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
		if prev != nil {
			// The same buffer when the job is the same (one in flight):
			// what lies past this request is the last one's poisoned tail.
			if cap(req) >= len(prev) && &req[:1][0] == &prev[:1][0] {
				stale <- bytes.Clone(req[len(req):len(prev)])
			} else {
				stale <- nil
			}
		}
		prev = req
		return req, nil
	})
	c := dial(t, addr)
	for i, size := range []int{4000, 10} {
		req := []byte(fmt.Sprintf("%0*d", size, i))
		out, err := c.Call(context.Background(), 2, req, nil)
		if err != nil || !bytes.Equal(out, req) {
			t.Fatalf("call %d: answer %q..., %v; want the request back", i, out[:min(len(out), 16)], err)
		}
	}
	tail := <-stale
	if tail == nil {
		t.Skip("the second call did not get the first one's buffer")
	}
	if want := bytes.Repeat([]byte{poison.Byte}, len(tail)); !bytes.Equal(tail, want) {
		t.Fatalf("past the second request: %q, want the first one's bytes poisoned", tail[:min(len(tail), 16)])
	}
}
