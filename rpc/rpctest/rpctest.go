// Package rpctest runs an rpc.Server and its clients in one process
// without a network: a [Listener] whose Dial returns one end of an
// in-memory connection (net.Pipe) and hands the other to the server's
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
// The connection is a net.Pipe: each write waits until the other side
// has read it (there is no socket buffer), deadlines work, and Close of
// either end fails the other's reads and writes. The rpc package treats
// it as it treats a TCP connection (a write cut by a ctx's end goes on
// later, see rpc.NewClient). Without a buffer, two peers whose reading
// goroutines both write at once wait for each other until a write
// timeout: an rpc client's read loop writes nothing to an rpc server (its
// acknowledgement of a go-away leaves from a goroutine of its own), so an
// rpc client and server do not; a peer of another make may (one that
// pings the client, or sends it requests), and wants a loopback socket.
// A buffered pipe, as bufconn's, is not written yet.
package rpctest

import (
	"context"
	"fmt"
	"net"
	"sync"
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
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
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
// accepted are not closed (the server closes its own). Close is
// idempotent and returns nil.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns the listener's address: network "pipe", address
// "rpctest".
func (l *Listener) Addr() net.Addr { return addr{} }

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
	client, server := net.Pipe()
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

// addr is the Listener's net.Addr.
type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "rpctest" }

var _ net.Listener = (*Listener)(nil)
