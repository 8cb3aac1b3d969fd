package rpctest_test

import (
	"context"
	"fmt"

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
