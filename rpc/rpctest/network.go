package rpctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// ErrConnRefused is the error (inside a *net.OpError) of a dial on a
// [Network] of an address no [Listener] listens at: there was none, or
// it was closed. It matches syscall.ECONNREFUSED (errors.Is), as the
// error of a TCP dial to a port nothing listens on does.
var ErrConnRefused = fmt.Errorf("rpctest: no listener at the address: %w", syscall.ECONNREFUSED)

// ErrAddrInUse is the error (inside a *net.OpError) of [Network.Listen]
// at an address another open [Listener] of the network listens at. It
// matches syscall.EADDRINUSE (errors.Is), as a TCP listen's does.
var ErrAddrInUse = fmt.Errorf("rpctest: another listener is at the address: %w", syscall.EADDRINUSE)

// Network is a set of in-memory [Listener]s, each at an address of its
// own, and an rpc.Dialer that dials the listener at the address it is
// given: the in-memory stand-in for several servers on several ports,
// such as the replicas of an rpc/cluster client (give it to the client
// with cluster.WithClientOptions(rpc.WithDialer(n))). Addresses are any
// strings ("a:7700" reads like a TCP one to code that parses it); the
// dial's network is ignored. Create it with [NewNetwork]; it is safe for
// concurrent use.
//
// A dial of an address no listener is at fails at once, as a TCP dial
// to a closed port does, with a *net.OpError matching [ErrConnRefused]
// and syscall.ECONNREFUSED. A listener leaves the network when it is
// closed (by its Close, or by the Close or Shutdown of the server
// serving it): its address then refuses dials, and can be listened at
// again.
type Network struct {
	o  Options
	mu sync.Mutex
	ls map[string]*Listener
}

// NewNetwork returns a Network with no listener, whose connections
// buffer [DefaultBufferSize] bytes each way.
func NewNetwork() *Network { return NewNetworkWithOptions(Options{}) }

// NewNetworkWithOptions returns a Network with no listener, whose
// connections are configured by o (see [Options]).
func NewNetworkWithOptions(o Options) *Network {
	return &Network{o: o, ls: make(map[string]*Listener)}
}

// Listen returns an open [Listener] at addr, which dials of addr on the
// network reach until it is closed. When an open listener is at addr
// already it fails with a *net.OpError matching [ErrAddrInUse].
func (n *Network) Listen(addr string) (*Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.ls[addr]; ok {
		return nil, &net.OpError{Op: "listen", Net: "pipe", Addr: pipeAddr(addr), Err: ErrAddrInUse}
	}
	l := newListener(n.o, addr)
	l.onClose = func() {
		n.mu.Lock()
		if n.ls[addr] == l {
			delete(n.ls, addr)
		}
		n.mu.Unlock()
	}
	n.ls[addr] = l
	return l, nil
}

// DialContext dials the listener at addr (network is ignored) as
// [Listener.DialContext] does: it returns the client's end of a
// connection once the listener's Accept has taken the other, or ctx's
// error if ctx ends first. With no listener at addr it fails at once
// with a *net.OpError matching [ErrConnRefused]. It implements
// rpc.Dialer.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: pipeAddr(addr), Err: ErrConnRefused}
	}
	c, err := l.DialContext(ctx, network, addr)
	if errors.Is(err, ErrClosed) {
		// Closed between the look-up and the dial: gone, as if it had
		// never been there.
		return nil, &net.OpError{Op: "dial", Net: network, Addr: pipeAddr(addr), Err: ErrConnRefused}
	}
	return c, err
}
