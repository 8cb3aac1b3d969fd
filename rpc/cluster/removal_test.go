package cluster

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// hangDialer dials every address but hang as a net.Dialer does, and
// holds a dial of hang until its ctx ends (a SYN into a black hole),
// counting the dials of hang it holds.
type hangDialer struct {
	net.Dialer
	hang    string
	holding atomic.Int32
	dials   atomic.Int32
}

func (d *hangDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != d.hang {
		return d.Dialer.DialContext(ctx, network, addr)
	}
	d.dials.Add(1)
	d.holding.Add(1)
	defer d.holding.Add(-1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A replica the resolver removes stops dialing it at once: its dial was
// bounded by the client's life and the health timeout only, so a list
// that flapped kept a dial (or a probe, below) of every replica removed
// meanwhile, a goroutine and a socket each, for the whole health timeout.
func TestRemovedReplicaStopsDialing(t *testing.T) {
	good := startReplica(t, "127.0.0.1")
	d := &hangDialer{hang: "127.0.0.1:1"}
	p := NewPush(good.addr)
	c := dialT(t, "push", WithResolver(p), WithClientOptions(rpc.WithDialer(d)),
		WithHealthCheck(0, time.Hour))
	for k := range int32(5) {
		p.Set(d.hang, good.addr)
		await(t, "a dial of the address", func() bool { return d.dials.Load() == k+1 })
		p.Set(good.addr)
	}
	await(t, "the dials of the removed replicas to end", func() bool { return d.holding.Load() == 0 })
	await(t, "the removed replicas to be forgotten", func() bool { return replicaOf(c, d.hang) == nil })
}

// A replica removed while its probe waits for an answer stops waiting:
// the server that accepted the connection and never answers is left.
func TestRemovedReplicaStopsProbing(t *testing.T) {
	good := startReplica(t, "127.0.0.1")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var open atomic.Int32
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			open.Add(1)
			go func() { // read until the client closes; answer nothing
				defer open.Add(-1)
				defer nc.Close()
				buf := make([]byte, 512)
				for {
					if _, err := nc.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	hang := l.Addr().String()
	p := NewPush(good.addr)
	c := dialT(t, "push", WithResolver(p), WithHealthCheck(0, time.Hour))
	p.Set(hang, good.addr)
	await(t, "a connection to the silent server", func() bool { return open.Load() > 0 })
	p.Set(good.addr)
	await(t, "the probe's connection to close", func() bool { return open.Load() == 0 })
	await(t, "the removed replica to be forgotten", func() bool { return replicaOf(c, hang) == nil })
	if s := c.Stats(); s.LastError != nil {
		t.Fatalf("a replica removed while probing left the client's LastError: %v", s.LastError)
	}
}
