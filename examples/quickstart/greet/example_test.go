package greet_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
	"github.com/zapcodec/zapcodec/rpc"
)

// greeter implements greet.GreeterServer, which zapcodec gen wrote.
type greeter struct{}

func (greeter) Hello(ctx context.Context, req greet.HelloRequestView, resp *greet.HelloReply) error {
	resp.Message = "hello, " + req.Name() // req is valid until Hello returns
	return nil
}

func Example() {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s := rpc.NewServer()
	greet.RegisterGreeterServer(s, greeter{})
	go s.Serve(l)
	defer s.Close()

	c, err := rpc.Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	client := greet.NewGreeterClient(c)
	var reply greet.HelloReply
	if err := client.Hello(ctx, &greet.HelloRequest{Name: "ZAP"}, &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Message)
	// Output: hello, ZAP
}
