package rpc_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"

	"github.com/zapcodec/zapcodec/rpc"
)

// A server with two raw handlers on loopback TCP and a client that calls
// them. A Handler gets the request payload and a buffer to append its
// answer to; the client's Call appends the answer to the buffer it is
// given, so a caller that reuses one allocates nothing per call. Generated
// code (zapcodec gen) puts typed records around exactly these calls.
func Example() {
	const (
		methodUpper = 1
		methodFail  = 2
	)
	s := rpc.NewServer()
	s.Handle(methodUpper, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		// req is valid only until the handler returns; the answer is what
		// the handler appends to resp.
		return append(resp, bytes.ToUpper(req)...), nil
	})
	s.Handle(methodFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, rpc.Errorf(rpc.StatusForbidden, "not for %s", req)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go s.Serve(l)
	defer s.Shutdown(context.Background())

	ctx := context.Background()
	c, err := rpc.Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	buf := make([]byte, 0, 64)
	out, err := c.Call(ctx, methodUpper, []byte("hello, zap"), buf[:0])
	fmt.Printf("%s %v\n", out, err)

	_, err = c.Call(ctx, methodFail, []byte("you"), buf[:0])
	fmt.Println(rpc.Code(err), err)

	_, err = c.Call(ctx, 99, nil, buf[:0])
	fmt.Println(rpc.Code(err))
	// Output:
	// HELLO, ZAP <nil>
	// 403 rpc: status 403: not for you
	// 404
}
