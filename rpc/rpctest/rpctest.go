// Package rpctest runs an rpc.Server and its clients in one process
// without a network: a [Listener] whose Dial returns one end of an
// in-memory connection ([Pipe]) and hands the other to the server's
// Accept, as gRPC-go's bufconn does. No port is opened, nothing is left
// behind, and the race detector sees every byte pass between the two
// sides. It imports the standard library only.
//
//	l := rpctest.NewListener()
//	s := rpc.NewServer()
//	s.Handle(1, handler)
//	go s.Serve(l)
//	defer s.Close()
//	c, err := rpc.Dial(ctx, "tcp", "rpctest", rpc.WithDialer(l)) // network and address are ignored
//	// or: nc, err := l.Dial(); c := rpc.NewClient(nc)
//
// Several servers, each at an address of its own (the replicas of an
// rpc/cluster client), run on a [Network]: its Listen gives the listener
// at an address, and it is itself the rpc.Dialer that dials the listener
// at the address it is given. A dial of an address no listener is at
// (none was, or it was closed) fails as a TCP dial to a closed port
// does, matching syscall.ECONNREFUSED:
//
//	n := rpctest.NewNetwork()
//	la, _ := n.Listen("a:7700")
//	lb, _ := n.Listen("b:7700")
//	sa, sb := rpc.NewServer(), rpc.NewServer() // handlers as above
//	go sa.Serve(la)
//	go sb.Serve(lb)
//	c, err := cluster.Dial(ctx, "a:7700,b:7700", cluster.WithClientOptions(rpc.WithDialer(n)))
//
// cluster.Dial returns once the first replica is ready: a test that
// counts the calls each replica gets first waits for both with
// c.WaitReady(ctx, 0) (rpc/cluster's ExampleDial_inMemory).
//
// The connection buffers each way, as a socket does ([DefaultBufferSize],
// 64 KiB; [Options].BufferSize): a write returns once its bytes are
// buffered and waits for the peer's reads only while the buffer is full.
// So two peers whose reading goroutines both write now and then (an
// answer, a ping's answer, a go-away's acknowledgement) do not wait for
// each other, as they would over net.Pipe, where every write waits for a
// read; only one that writes more than the buffer holds while the other
// is not reading waits, as over TCP. Deadlines work, and Close of either
// end fails the other's writes, its reads once they have taken what was
// buffered (see [Pipe]). The rpc package treats it as it treats a TCP
// connection (a write cut by a ctx's end goes on later, see
// rpc.NewClient).
package rpctest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// ErrClosed is the error of a dial on a [Listener] that was closed (by
// its Close, or by the Close or Shutdown of the server serving it). It
// matches net.ErrClosed (errors.Is), as the error of Accept after Close
// is net.ErrClosed itself.
var ErrClosed = fmt.Errorf("rpctest: dial on a closed listener: %w", net.ErrClosed)

// Listener is a net.Listener of in-memory connections: [Listener.Dial]
// makes a pipe, hands one end to a caller of Accept and returns the
// other. Create it with [NewListener]; it is safe for concurrent use.
// Give it to rpc.Server.Serve, and to clients as their rpc.Dialer
// (rpc.WithDialer) or through Dial and rpc.NewClient.
type Listener struct {
	conns chan net.Conn // unbuffered: a dial returns once Accept took its end
	done  chan struct{} // closed by Close
	once  sync.Once
	size  int           // of each direction of a connection's buffer
	dials atomic.Uint64 // names the client ends: "rpctest-1", ...
	addr  string        // "rpctest", or its address on a Network
	// onClose, when not nil, runs once at Close: the Network it listens
	// on forgets it.
	onClose func()
}

// NewListener returns an open Listener whose connections buffer
// [DefaultBufferSize] bytes each way.
func NewListener() *Listener { return NewListenerWithOptions(Options{}) }

// NewListenerWithOptions returns an open Listener whose connections are
// configured by o (see [Options]).
func NewListenerWithOptions(o Options) *Listener {
	return newListener(o, "rpctest")
}

func newListener(o Options, addr string) *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{}), size: o.bufferSize(), addr: addr}
}

// Accept waits for a dial and returns the server's end of its
// connection. After Close it returns net.ErrClosed (a closed TCP
// listener's error matches it too): rpc.Server.Serve then returns
// rpc.ErrServerClosed when the server is shutting down, net.ErrClosed
// when the listener alone was closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops the listener: waiting and later Accepts return
// net.ErrClosed, and dials fail with [ErrClosed]. Connections already
// accepted are not closed (the server closes its own). A listener of a
// [Network] leaves it: its address is free again, and dials of it are
// refused. Close is idempotent and returns nil.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		if l.onClose != nil {
			l.onClose()
		}
	})
	return nil
}

// Addr returns the listener's address: network "pipe", address
// "rpctest", or for a listener of a [Network] the address it listens at.
func (l *Listener) Addr() net.Addr { return pipeAddr(l.addr) }

// Dial connects to the listener and returns the client's end of the
// connection once Accept has taken the server's end. It waits for as
// long as no one calls Accept (a server not serving yet): see
// [Listener.DialContext] to bound the wait. After Close it fails with
// [ErrClosed].
func (l *Listener) Dial() (net.Conn, error) {
	return l.DialContext(context.Background(), "pipe", "rpctest")
}

// DialContext is [Listener.Dial] bounded by ctx: when ctx ends before
// Accept takes the connection, it returns ctx's error. network and addr
// are ignored: it implements rpc.Dialer, so that rpc.Dial (and an
// rpc/cluster client, through its client options) with rpc.WithDialer(l)
// dials the listener whatever address it is given.
func (l *Listener) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	select {
	case <-l.done:
		return nil, ErrClosed // before making a pipe for nothing
	default:
	}
	client, server := newPipe(l.size, pipeAddr(fmt.Sprintf("rpctest-%d", l.dials.Add(1))), pipeAddr(l.addr))
	var err error
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		err = ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, err
}

// pipeAddr is the net.Addr of a Listener and of the ends of a Pipe: network
// "pipe", the string its address.
type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }

var _ net.Listener = (*Listener)(nil)
