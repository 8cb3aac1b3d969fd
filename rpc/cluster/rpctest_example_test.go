package cluster_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// replicaGreeter answers with the name of its replica.
type replicaGreeter struct{ name string }

func (g replicaGreeter) Hello(_ context.Context, req greet.HelloRequestView, resp *greet.HelloReply) error {
	resp.Message = g.name + " greets " + req.Name()
	return nil
}

// A test of a service behind a cluster client, its two replicas in memory
// (an rpctest.Network serves each at its address and is the client's
// dialer). Dial returns as soon as the first replica is admitted, the
// other possibly still in its health check: a test that needs both
// waits for them with WaitReady (0: every replica the resolver names),
// then sees calls go to each.
func ExampleDial_inMemory() {
	ctx := context.Background()
	n := rpctest.NewNetwork()
	for _, addr := range []string{"a:7700", "b:7700"} {
		l, err := n.Listen(addr)
		if err != nil {
			log.Fatal(err)
		}
		s := rpc.NewServer()
		greet.RegisterGreeterServer(s, replicaGreeter{addr})
		go s.Serve(l)
		defer s.Close()
	}

	c, err := cluster.Dial(ctx, "a:7700,b:7700", cluster.WithClientOptions(rpc.WithDialer(n)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.WaitReady(wctx, 0); err != nil {
		log.Fatal(err) // says how many were ready, and what went wrong
	}

	client := greet.NewGreeterClient(c)
	seen := map[string]bool{}
	for i := 0; i < 1000 && len(seen) < 2; i++ {
		var reply greet.HelloReply
		if err := client.Hello(ctx, &greet.HelloRequest{Name: "ZAP"}, &reply); err != nil {
			log.Fatal(err)
		}
		seen[reply.Message] = true
	}
	fmt.Println(seen["a:7700 greets ZAP"], seen["b:7700 greets ZAP"])
	// Output: true true
}
