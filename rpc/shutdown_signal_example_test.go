package rpc_test

import (
	"context"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A server's main as deployed: serve until SIGTERM (or Ctrl-C), then stop
// in three steps. First report not serving, so that probes that dial
// anew (a load balancer's, a container's readiness probe, zapcodec
// health) take the server out of rotation while it still answers: once
// Shutdown begins its listener is closed and they are refused. Then
// Shutdown with a deadline: calls running are answered, calls that
// arrive after the go-away are refused unrun (rpc/cluster sends them to
// another replica). A Shutdown cut by its deadline has closed the
// connections left, and says how many. The example is not run: it
// waits for a signal.
func ExampleServer_Shutdown_signal() {
	const (
		probeInterval = 5 * time.Second  // the load balancer's
		stopDeadline  = 25 * time.Second // within the orchestrator's grace (30 s in Kubernetes)
	)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	s := rpc.NewServer(
		// A client stalled past the grace loses the calls it sends
		// after the go-away (rpc/README.md, rpc/cluster's "shutdown
		// grace"); Shutdown returns sooner for clients that acknowledge.
		rpc.WithShutdownGrace(stopDeadline - 5*time.Second),
	)
	// Register services here (generated Register…Server functions).
	l, err := net.Listen("tcp", ":7700")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()

	select {
	case err := <-served: // the listener failed
		log.Fatal(err)
	case <-ctx.Done():
	}
	stop() // a second signal now ends the process at once

	s.Health().SetAll(rpc.HealthNotServing)
	time.Sleep(probeInterval + time.Second)

	sctx, cancel := context.WithTimeout(context.Background(), stopDeadline)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		log.Printf("shutdown cut short: %v", err)
	}
	<-served // rpc.ErrServerClosed, since Shutdown began
}
