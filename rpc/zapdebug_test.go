//go:build zapdebug

package rpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// TestZapdebugPoisonsKeptMetadataAndCap: built with -tags zapdebug, the
// views of a call's cap and metadata (CapFrom, MetadataFrom) that a
// handler kept past its return read poison by the time the caller has the
// answer, as its request does; before, only the payload was poisoned, and
// these views read the call's bytes until a later call reused the buffer.
// A handler that answers with its cap, or sets response metadata from its
// request's, still has them reach the caller intact (written before the
// poisoning).
func TestZapdebugPoisonsKeptMetadataAndCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"worker", []ServerOption{WithPipelining(16)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type views struct {
				cap []byte
				md  Metadata
			}
			kept := make(chan views, 1)
			s, addr, _ := testServer(t, tc.opts...)
			s.Handle(2, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				kept <- views{CapFrom(ctx), MetadataFrom(ctx)} // a misuse: the views outlive the handler
				return append(resp, "ok"...), nil
			})
			s.Handle(3, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				if err := SetResponseMetadata(ctx, "echo", string(MetadataFrom(ctx).Get("k"))); err != nil {
					return nil, err
				}
				return CapFrom(ctx), nil // the answer aliases the cap's buffer
			})
			c := dial(t, addr)
			for _, size := range []int{1, 100, 5000} {
				token := bytes.Repeat([]byte{'c'}, size)
				value := string(bytes.Repeat([]byte{'v'}, size))
				ctx := WithMetadata(WithCap(context.Background(), token), "k", value)
				out, err := c.Call(ctx, 2, []byte("req"), nil)
				if err != nil || string(out) != "ok" {
					t.Fatalf("size %d: %q, %v", size, out, err)
				}
				v := <-kept
				if want := bytes.Repeat([]byte{poison.Byte}, size); !bytes.Equal(v.cap, want) {
					t.Fatalf("size %d: the kept cap reads %q after the call returned, want all %#x", size, v.cap[:min(len(v.cap), 16)], poison.Byte)
				}
				if want := bytes.Repeat([]byte{poison.Byte}, v.md.Size()); v.md.Size() == 0 || !bytes.Equal(v.md.b, want) {
					t.Fatalf("size %d: the kept metadata reads %q... after the call returned, want all %#x", size, v.md.b[:min(len(v.md.b), 16)], poison.Byte)
				}
				var md Metadata
				out, err = c.Call(WithResponseMetadata(ctx, &md), 3, nil, nil)
				if err != nil || !bytes.Equal(out, token) || string(md.Get("echo")) != value {
					t.Fatalf("size %d: answer %q..., metadata %q..., %v; want the cap and the metadata value back", size, out[:min(len(out), 16)], md.Get("echo")[:min(len(md.Get("echo")), 16)], err)
				}
			}
		})
	}
}

// TestZapdebugPoisonsKeptStreamMetadataAndCap: the same for a stream
// handler: its open's cap and metadata read poison by the time the client
// has the stream's end. Its init message is its own (StreamHandler's
// doc) and is left as it is.
func TestZapdebugPoisonsKeptStreamMetadataAndCap(t *testing.T) {
	type views struct {
		cap, init []byte
		md        Metadata
	}
	kept := make(chan views, 1)
	s, addr, _ := testServer(t)
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		kept <- views{CapFrom(ctx), init, MetadataFrom(ctx)}
		return nil
	})
	c := dial(t, addr)
	ctx := WithMetadata(WithCap(context.Background(), []byte("token")), "k", "value")
	st, err := c.OpenStream(ctx, 1, []byte("init"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(st); err != io.EOF {
		t.Fatalf("Recv: %v, want io.EOF", err)
	}
	v := <-kept
	if want := bytes.Repeat([]byte{poison.Byte}, len("token")); !bytes.Equal(v.cap, want) {
		t.Fatalf("the kept cap reads %q after the end, want all %#x", v.cap, poison.Byte)
	}
	if want := bytes.Repeat([]byte{poison.Byte}, v.md.Size()); v.md.Size() == 0 || !bytes.Equal(v.md.b, want) {
		t.Fatalf("the kept metadata reads %q after the end, want all %#x", v.md.b, poison.Byte)
	}
	if string(v.init) != "init" {
		t.Fatalf("the handler's own init reads %q after the end, want it kept", v.init)
	}
}
