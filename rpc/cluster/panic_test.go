package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// An interceptor of the connections (rpc.WithClientInterceptors and
// rpc.WithStreamClientInterceptors through WithClientOptions) that
// panics: the panic reaches the caller, and the call or open is taken
// off its connection's in-flight count, which the balancer reads as
// load (it stayed there for ever, so that connection looked busy).
func TestConnInterceptorPanicNotCountedAsLoad(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+r.addr, WithClientOptions(
		rpc.WithClientInterceptors(func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
			if string(req) == "panic" {
				panic("conn interceptor")
			}
			return invoke(ctx, method, req, resp)
		}),
		rpc.WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
			panic("conn stream interceptor")
		})))
	panics := func(want string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			if p := recover(); fmt.Sprint(p) != want {
				t.Fatalf("panic %v, want %q", p, want)
			}
		}()
		f()
	}
	load := func() int {
		n := 0
		for _, cn := range c.ready.Load().conns {
			n += cn.Load()
		}
		return n
	}
	for range 10 {
		panics("conn interceptor", func() { c.Call(context.Background(), mEcho, []byte("panic"), nil) })
		panics("conn stream interceptor", func() { c.OpenStream(context.Background(), 1, nil) })
	}
	if n := load(); n != 0 {
		t.Fatalf("load %d after the panics, want 0", n)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("ok"), nil); err != nil || string(out) != "ok" {
		t.Fatalf("call after the panics: %q %v", out, err)
	}
}

// A stream interceptor of the cluster client that panics after its open
// returned a stream: the panic reaches the caller, and the stream, which
// the caller never got, is canceled (its server handler's ctx ends) and
// no longer counts as load on its connection.
func TestClusterStreamInterceptorPanicCancelsStream(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	ended := make(chan error, 10)
	r.server().HandleStream(1, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		<-ctx.Done()
		ended <- ctx.Err()
		return nil
	})
	c := dialT(t, "static:///"+r.addr, WithStreamInterceptors(
		func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
			if _, err := open(ctx, method, init); err != nil {
				return nil, err
			}
			panic("cluster stream interceptor")
		}))
	for range 3 {
		func() {
			defer func() {
				if p := recover(); fmt.Sprint(p) != "cluster stream interceptor" {
					t.Fatalf("panic %v", p)
				}
			}()
			c.OpenStream(context.Background(), 1, nil)
		}()
		select {
		case err := <-ended:
			if err != context.Canceled {
				t.Fatalf("the handler's ctx ended with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the server handler of the lost stream still runs after 30 s")
		}
	}
	await(t, "no load left on the connection", func() bool {
		n := 0
		for _, cn := range c.ready.Load().conns {
			n += cn.Load()
		}
		return n == 0
	})
}
