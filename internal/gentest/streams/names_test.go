package streams

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/svc"
	"github.com/zapcodec/zapcodec/rpc"
)

// Generated Register…Server functions give the server their methods'
// names: with two services mounted at different bases, the server's
// interceptors and stream interceptors read each call's and stream's
// full name, as gRPC spells it, from the server and from ctx.
func TestGeneratedMethodNames(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var srv *rpc.Server
	record := func(ctx context.Context, method uint32) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%d=%s|%s", method, srv.MethodName(method), rpc.MethodFrom(ctx)))
		mu.Unlock()
	}
	srv = rpc.NewServer(
		rpc.WithInterceptors(func(ctx context.Context, m uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
			record(ctx, m)
			return next(ctx, req, resp)
		}),
		rpc.WithStreamInterceptors(func(ctx context.Context, m uint32, init []byte, s *rpc.Stream, next rpc.StreamHandler) error {
			record(ctx, m)
			return next(ctx, init, s)
		}))
	svc.RegisterGeometryServer(srv, svc.UnimplementedGeometryServer{})
	RegisterFeedServer(srv, &feed{}, rpc.At(100))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	if err := svc.NewGeometryClient(c).Ping(ctx); rpc.Code(err) != rpc.StatusNotFound {
		t.Fatalf("Geometry.ping (unimplemented): %v", err)
	}
	fc := NewFeedClient(c, rpc.At(100))
	if err := fc.Ping(ctx); err != nil {
		t.Fatalf("Feed.ping: %v", err)
	}
	sub, err := fc.Subscribe(ctx, &Filter{Count: 1, Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := sub.Recv(); err != nil {
			break
		}
	}
	mu.Lock()
	got := strings.Join(seen, " ")
	mu.Unlock()
	want := "3=/svc.Geometry/ping|/svc.Geometry/ping 104=/streams.Feed/ping|/streams.Feed/ping 101=/streams.Feed/subscribe|/streams.Feed/subscribe"
	if got != want {
		t.Fatalf("interceptors saw\n%s\nwant\n%s", got, want)
	}
	for m, want := range map[uint32]string{1: "/svc.Geometry/area", 2: "/svc.Geometry/notify", 4: "", 100: "", 102: "/streams.Feed/upload", 106: "/streams.Feed/sink", 107: ""} {
		if got := srv.MethodName(m); got != want {
			t.Errorf("MethodName(%d) = %q, want %q", m, got, want)
		}
	}
}
