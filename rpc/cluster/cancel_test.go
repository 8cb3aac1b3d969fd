package cluster

import (
	"context"
	"testing"
)

// A call through the cluster client whose ctx is canceled reaches the
// replica's handler as the rpc client's does (rpc's cancel.go): Call
// returns context.Canceled at once and the handler's ctx ends with
// context.Canceled. The first cancel on a connection asks the server
// first, the second goes at once: both are checked.
func TestCallCancelReachesReplica(t *testing.T) {
	const mBlock = 30
	r := startReplica(t, "127.0.0.1")
	started, ended, release := make(chan struct{}, 2), make(chan error, 2), make(chan struct{})
	defer close(release)
	r.server().Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		ended <- ctx.Err()
		return resp, nil
	})
	c := dialT(t, r.addr)
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, mBlock, nil, nil)
			done <- err
		}()
		receive(t, "the handler's start", started)
		cancel()
		if err := receive(t, "Call's return", done); err != context.Canceled {
			t.Fatalf("call %d: Call: %v, want context.Canceled", i, err)
		}
		if err := receive(t, "the handler's ctx's end", ended); err != context.Canceled {
			t.Fatalf("call %d: the handler's ctx ended with %v, want context.Canceled", i, err)
		}
	}
}
