package rpc_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/zapcodec/zapcodec/rpc"
)

// An authenticating server interceptor, a client interceptor that adds
// nothing but counts, and an observer on each side.
func ExampleWithInterceptors() {
	auth := func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		if len(req) == 0 {
			return resp, rpc.Errorf(401, "empty request")
		}
		return next(ctx, req, resp)
	}
	var served atomic.Int64
	s := rpc.NewServer(rpc.WithInterceptors(auth), rpc.WithObserver(func(ev rpc.CallEvent) {
		served.Add(1)
	}))
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, req...), nil
	})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(l)
	defer s.Close()

	var sent atomic.Int64
	count := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		sent.Add(1)
		return invoke(ctx, method, req, resp)
	}
	var statuses []uint32
	c, _ := rpc.Dial(context.Background(), "tcp", l.Addr().String(),
		rpc.WithClientInterceptors(count),
		rpc.WithObserver(func(ev rpc.CallEvent) { statuses = append(statuses, ev.Status) }))
	defer c.Close()

	out, err := c.Call(context.Background(), 1, []byte("hi"), nil)
	fmt.Printf("%s %v\n", out, err)
	_, err = c.Call(context.Background(), 1, nil, nil)
	fmt.Println(err)
	fmt.Println(sent.Load(), served.Load(), statuses)
	// Output:
	// hi <nil>
	// rpc: status 401: empty request
	// 2 2 [200 401]
}

// Two interfaces on one server: the second at offset 100, where its
// clients call it too; health checks for the server and each service.
func ExampleServer_Mount() {
	s := rpc.NewServer()
	base := s.Mount("demo.Users", 2) // ordinals 1..2, where a canonical client calls
	s.Handle(base+1, func(ctx context.Context, req, resp []byte) ([]byte, error) { return append(resp, "user"...), nil })
	base = s.Mount("demo.Admin", 1, rpc.At(100)) // ordinal 101
	s.Handle(base+1, func(ctx context.Context, req, resp []byte) ([]byte, error) { return append(resp, "admin"...), nil })
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(l)
	defer s.Close()

	c, _ := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	defer c.Close()
	ctx := context.Background()
	u, _ := c.Call(ctx, 1, nil, nil)
	a, _ := c.Call(ctx, rpc.MountBase(rpc.At(100))+1, nil, nil)
	fmt.Println(string(u), string(a))

	s.Health().Set("demo.Admin", rpc.HealthNotServing)
	for _, name := range []string{"", "demo.Users", "demo.Admin", "demo.Other"} {
		st, err := rpc.CheckHealth(ctx, c, name)
		fmt.Printf("%q: %v %v\n", name, st, rpc.Code(err))
	}
	// Output:
	// user admin
	// "": serving 200
	// "demo.Users": serving 200
	// "demo.Admin": not serving 200
	// "demo.Other": unknown 404
}

// A logging interceptor names each call as gRPC-go's info.FullMethod does,
// whatever base its service is mounted at.
func ExampleServer_MethodName() {
	logCalls := func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		fmt.Println("call", method, rpc.MethodFrom(ctx))
		return next(ctx, req, resp)
	}
	s := rpc.NewServer(rpc.WithInterceptors(logCalls))
	// As a generated RegisterUsersServer(s, impl, rpc.At(100)) does:
	names := func(k uint32) string { return map[uint32]string{1: "get", 2: "put"}[k] }
	base := s.MountNamed("demo.Users", 2, names, rpc.At(100))
	s.Handle(base+2, func(ctx context.Context, req, resp []byte) ([]byte, error) { return resp, nil })
	fmt.Printf("%q %q %q\n", s.MethodName(101), s.MethodName(102), s.MethodName(103))

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(l)
	defer s.Close()
	c, _ := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	defer c.Close()
	_, err := c.Call(context.Background(), 102, nil, nil)
	fmt.Println(err)
	// Output:
	// "/demo.Users/get" "/demo.Users/put" ""
	// call 102 /demo.Users/put
	// <nil>
}
