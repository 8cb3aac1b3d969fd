package cluster_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// A cluster client over replicas in memory: an rpctest.Network serves
// each at its address and dials them as the client's rpc.Dialer. Both
// replicas get calls, and a third address nothing listens at is refused
// as a closed TCP port is, and ejected.
func TestInMemoryReplicas(t *testing.T) {
	ctx := context.Background()
	n := rpctest.NewNetwork()
	for _, addr := range []string{"a:7700", "b:7700"} {
		l, err := n.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		s := rpc.NewServer()
		s.Handle(1, func(_ context.Context, _, resp []byte) ([]byte, error) {
			return append(resp, addr...), nil
		})
		go s.Serve(l)
		t.Cleanup(func() { s.Close() })
	}

	c, err := cluster.Dial(ctx, "a:7700,b:7700,c:7700", cluster.WithClientOptions(rpc.WithDialer(n)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Dial returns once one replica is admitted and every address was
	// tried once: the other may still be in its health check (seen once
	// under -tags zapdebug in CI). Wait for both (a hang guard only).
	for guard := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		ready := 0
		for _, r := range c.Stats().Replicas {
			if r.State == "ready" {
				ready++
			}
		}
		if ready == 2 {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("replicas: %+v, want a:7700 and b:7700 ready", c.Stats().Replicas)
		}
	}

	seen := map[string]int{}
	for i := 0; i < 1000 && (seen["a:7700"] == 0 || seen["b:7700"] == 0); i++ {
		out, err := c.Call(ctx, 1, nil, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		seen[string(out)]++
	}
	if seen["a:7700"] == 0 || seen["b:7700"] == 0 || len(seen) != 2 {
		t.Fatalf("answers by replica: %v, want both a:7700 and b:7700", seen)
	}

	var refused bool
	for _, r := range c.Stats().Replicas {
		if r.Addr == "c:7700" {
			refused = r.State != "ready" && errors.Is(r.LastError, syscall.ECONNREFUSED)
			if !refused {
				t.Errorf("replica c:7700: state %s, last error %v; want not ready, refused", r.State, r.LastError)
			}
		}
	}
	if !refused {
		t.Errorf("replica c:7700 not in %+v", c.Stats().Replicas)
	}
}
