package rpctest_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// A server and a client in one process, over an in-memory connection.
func ExampleListener() {
	l := rpctest.NewListener()
	s := rpc.NewServer()
	s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(append(resp, "hello, "...), req...), nil
	})
	go s.Serve(l)
	defer s.Close()

	ctx := context.Background()
	c, err := rpc.Dial(ctx, "tcp", "rpctest", rpc.WithDialer(l)) // network and address are ignored
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	out, err := c.Call(ctx, 1, []byte("pipe"), nil)
	fmt.Printf("%s %v\n", out, err)
	// Output: hello, pipe <nil>
}

// Two servers at addresses of their own on a Network, which dials each
// by its address; an address nothing listens at is refused.
func ExampleNetwork() {
	n := rpctest.NewNetwork()
	for _, addr := range []string{"a:7700", "b:7700"} {
		l, err := n.Listen(addr)
		if err != nil {
			fmt.Println(err)
			return
		}
		s := rpc.NewServer()
		s.Handle(1, func(_ context.Context, _, resp []byte) ([]byte, error) {
			return append(resp, "this is "+addr...), nil
		})
		go s.Serve(l)
		defer s.Close()
	}

	ctx := context.Background()
	for _, addr := range []string{"a:7700", "b:7700", "c:7700"} {
		c, err := rpc.Dial(ctx, "tcp", addr, rpc.WithDialer(n))
		if err != nil {
			fmt.Println(errors.Is(err, syscall.ECONNREFUSED), err)
			continue
		}
		out, err := c.Call(ctx, 1, nil, nil)
		fmt.Printf("%s %v\n", out, err)
		c.Close()
	}
	// Output:
	// this is a:7700 <nil>
	// this is b:7700 <nil>
	// true dial tcp c:7700: rpctest: no listener at the address: connection refused
}
