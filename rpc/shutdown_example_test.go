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

// A graceful stop: Serve returns ErrServerClosed as soon as Shutdown
// begins, while the call in flight still runs; Shutdown returns once its
// answer is written. A main that ran Serve would wait for Shutdown (here,
// <-stopped) before it exits.
func ExampleServer_Shutdown() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	running, release := make(chan struct{}), make(chan struct{})
	s := rpc.NewServer()
	s.Handle(1, func(_ context.Context, _, resp []byte) ([]byte, error) {
		close(running)
		<-release
		return append(resp, "done"...), nil
	})
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()

	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	answered := make(chan string, 1)
	go func() {
		out, err := c.Call(context.Background(), 1, nil, nil)
		answered <- fmt.Sprint(string(out), " ", err)
	}()
	<-running

	stopped := make(chan error, 1)
	go func() {
		// In a program: on SIGTERM, with a bound on the wait.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- s.Shutdown(ctx)
	}()
	err = <-served
	fmt.Println("Serve:", errors.Is(err, rpc.ErrServerClosed))
	close(release) // the call in flight ends after Serve returned
	fmt.Println("Shutdown:", <-stopped)
	fmt.Println("call:", <-answered)
	// Output:
	// Serve: true
	// Shutdown: <nil>
	// call: done <nil>
}
