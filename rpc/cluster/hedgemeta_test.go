package cluster

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// The response metadata of a hedged call (rpc.WithResponseMetadata on
// the caller's ctx) is the winning answer's, and no attempt writes the
// caller's receiver: not a loser whose answer came too, nor one sent
// after the winner answered, nor after Call returned. Both replicas
// answer at once, each with its name as the body and as metadata, and
// both attempts go out together.
func TestHedgeResponseMetadata(t *testing.T) {
	replica := func(name string) string {
		return handlerReplica(t, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			if err := rpc.SetResponseMetadata(ctx, "who", name); err != nil {
				return resp, err
			}
			return append(resp, name...), nil
		})
	}
	a, b := replica("a"), replica("b")
	p := HedgingPolicy{MaxAttempts: 2} // no delay: both at once
	c := dialT(t, "static:///"+a+","+b, WithHedgingPolicy(p, mEcho), WithRetryBudget(1, 1e6))
	idle := func() bool {
		for _, cn := range c.ready.Load().conns {
			if cn.InFlight() != 0 {
				return false
			}
		}
		return true
	}
	calls := 300
	if testing.Short() {
		calls = 100
	}
	var md rpc.Metadata
	ctx := rpc.WithResponseMetadata(context.Background(), &md)
	for i := range calls {
		out, err := c.Call(ctx, mEcho, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(md.Get("who")); got != string(out) {
			t.Fatalf("call %d: answer from %q with the metadata of %q", i, out, got)
		}
		await(t, "every attempt done", idle)
		if got := string(md.Get("who")); got != string(out) {
			t.Fatalf("call %d: answer from %q, metadata %q once the attempts ended (written after Call returned)", i, out, got)
		}
	}
}
