package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A handler's status reaches its caller, where Code reads it; a failure
// that no answer carried gets the status a gRPC client gives it: the
// caller's deadline, here passed before the call was sent, is 504 (and
// matches context.DeadlineExceeded), a lost connection, here a call made
// after Close, 503: the code tells a caller to try elsewhere, not that
// a handler failed.
func ExampleCode() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s := rpc.NewServer()
	s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return resp, rpc.Errorf(rpc.StatusNotFound, "no order %s", req)
	})
	go s.Serve(l)
	defer s.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.Call(context.Background(), 1, []byte("7"), nil)
	fmt.Println(rpc.Code(err), err)

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = c.Call(ctx, 1, []byte("7"), nil)
	fmt.Println(rpc.Code(err), errors.Is(err, context.DeadlineExceeded))

	c.Close()
	_, err = c.Call(context.Background(), 1, []byte("7"), nil)
	switch rpc.Code(err) {
	case rpc.StatusUnavailable:
		fmt.Println("503: try another server:", errors.Is(err, rpc.ErrClosed))
	case rpc.StatusInternal:
		fmt.Println("500: the handler failed")
	}
	// Output:
	// 404 rpc: status 404: no order 7
	// 504 true
	// 503: try another server: true
}
