package cluster

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// slowCloseDialer dials connections whose Close waits for release (as a
// TLS connection's does, up to 5 s, while its close-notify alert waits
// for a peer that does not read); closing counts the Closes begun.
type slowCloseDialer struct {
	net.Dialer
	closing atomic.Int32
	release chan struct{}
}

func (d *slowCloseDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return slowCloseConn{nc, d}, nil
}

type slowCloseConn struct {
	net.Conn
	d *slowCloseDialer
}

func (c slowCloseConn) Close() error {
	c.d.closing.Add(1)
	<-c.d.release
	return c.Conn.Close()
}

// Close closes the client's connections in parallel (each replica's
// goroutine retires its own as the client's ctx ends): with two replicas
// whose connections' Close blocks, as a TLS connection's does for up to
// 5 s towards a replica that stopped reading, both Closes begin before
// Close returns.
func TestCloseClosesConnsInParallel(t *testing.T) {
	rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
	d := &slowCloseDialer{release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(d.release) })
	t.Cleanup(released) // before the client's own cleanup Close
	c := dialT(t, "static:///"+rs[0].addr+","+rs[1].addr, WithClientOptions(rpc.WithDialer(d)))
	if n := d.closing.Load(); n != 0 {
		t.Fatalf("%d connections closed before Close", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	await(t, "both connections' Close to begin", func() bool { return d.closing.Load() >= 2 })
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the connections' Close did", err)
	default:
	}
	released()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
