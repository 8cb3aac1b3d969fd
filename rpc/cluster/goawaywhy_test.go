package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A replica whose new connection goes away (a graceful shutdown soon
// after the dial) is ejected saying its connection went away, even when
// a call met the go-away before it was written: such a call was marked
// as refused, and the ejection said "refused a call unrun", the mark of
// a server that refuses calls with no go-away (broken or hostile).
func TestGoAwaySoonSaysWentAway(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	hold := func(ctx context.Context, m uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		if m == mEcho && first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return invoke(ctx, m, req, resp)
	}
	c := dialT(t, "static:///"+a.addr+","+b.addr, WithBalancer(firstAddr{a.addr}),
		WithEjection(0, time.Hour, time.Hour), WithClientOptions(rpc.WithClientInterceptors(hold)))
	var connA *Conn
	for _, cn := range c.ready.Load().conns {
		if cn.Addr() == a.addr {
			connA = cn
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
		done <- err
	}()
	<-entered // picked a's connection, not written yet
	go a.shutdown()
	await(t, "a's connection to read the go-away", func() bool { return connA.rc.Draining() })
	close(release)
	if err := receive(t, "the call", done); err != nil {
		t.Fatalf("call: %v", err)
	}
	var why error
	await(t, "a ejected", func() bool {
		why = replicaOf(c, a.addr).lastErrOf()
		return why != nil
	})
	if !strings.Contains(why.Error(), "went away") {
		t.Fatalf("a's ejection says %q, want that its connection went away", why)
	}
}

// lastErrOf returns the replica's LastError.
func (r *replica) lastErrOf() error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.lastErr
}
