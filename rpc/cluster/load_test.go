package cluster

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

const mHold = 31 // stream: held open until the client cancels it

// Open streams and outstanding promises count as load for P2C: with
// three of either on one replica's connection and nothing on the
// other's, every call goes to the other; once they are done, calls
// spread over both again.
func TestStreamsAndPromisesCountAsLoad(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	a.server().HandleStream(mHold, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		<-ctx.Done()
		return nil
	})
	c := dialT(t, "static:///"+a.addr+","+b.addr)
	var ca *Conn
	for _, cn := range c.ready.Load().conns {
		if cn.Addr() == a.addr {
			ca = cn
		}
	}
	if ca == nil {
		t.Fatal("no connection to the first replica")
	}
	calls := func(n int) (onA, onB int64) {
		a0, b0 := a.calls.Load(), b.calls.Load()
		for range n {
			if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
		}
		return a.calls.Load() - a0, b.calls.Load() - b0
	}

	ctx, cancel := context.WithCancel(context.Background())
	for range 3 {
		if _, err := ca.Client().OpenStream(ctx, mHold, nil); err != nil {
			t.Fatal(err)
		}
	}
	if l := ca.Load(); l != 3 {
		t.Fatalf("load with 3 open streams: %d", l)
	}
	if onA, onB := calls(200); onA != 0 || onB != 200 {
		t.Fatalf("with 3 streams open on the first replica, it got %d of %d calls", onA, onA+onB)
	}
	cancel()
	await(t, "the streams to end", func() bool { return ca.Client().Streams() == 0 })

	var ps []rpc.Promise
	ran := a.calls.Load() + 3
	for range 3 {
		p, err := ca.Client().Send(context.Background(), mEcho, []byte("p"), nil)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if l := ca.Load(); l != 3 {
		t.Fatalf("load with 3 promises outstanding: %d", l)
	}
	await(t, "the promises' calls to run", func() bool { return a.calls.Load() == ran })
	if onA, onB := calls(200); onA != 0 || onB != 200 {
		t.Fatalf("with 3 promises outstanding on the first replica, it got %d of %d calls", onA, onA+onB)
	}
	for i, p := range ps {
		if i == 0 {
			p.Release()
			continue
		}
		if out, err := p.Wait(context.Background()); err != nil || string(out) != "p" {
			t.Fatalf("promise: %q %v", out, err)
		}
	}
	if l := ca.Load(); l != 0 {
		t.Fatalf("load after the promises: %d", l)
	}
	if onA, onB := calls(400); onA < 50 || onB < 50 {
		t.Fatalf("with no load left, the replicas got %d and %d of 400 calls", onA, onB)
	}
}

// A promise sent through the cluster client counts on the connection it
// went to until it is waited for.
func TestClusterPromiseCountsAsLoad(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+a.addr+","+b.addr)
	p, err := c.Send(context.Background(), mEcho, []byte("p"), nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, cn := range c.ready.Load().conns {
		total += cn.Load()
	}
	if total != 1 {
		t.Fatalf("load over the connections with a promise out: %d, want 1", total)
	}
	if _, err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, cn := range c.ready.Load().conns {
		if cn.Load() != 0 {
			t.Fatalf("load left after Wait: %d on %s", cn.Load(), cn.Addr())
		}
	}
}
