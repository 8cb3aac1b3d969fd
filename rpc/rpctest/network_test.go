package rpctest_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// serveAt starts a server on n at addr whose method mEcho answers its
// request prefixed with addr, so that a caller sees which one it reached.
func serveAt(t *testing.T, n *rpctest.Network, addr string) *rpc.Server {
	t.Helper()
	l, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addr().String(); got != addr {
		t.Fatalf("Addr() = %q, want %q", got, addr)
	}
	s := rpc.NewServer()
	s.Handle(mEcho, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(append(resp, addr+" "...), req...), nil
	})
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s
}

// A Network dials the listener at the address it is given, refuses an
// address no listener is at as TCP refuses a closed port, and forgets a
// closed listener.
func TestNetwork(t *testing.T) {
	ctx := context.Background()
	n := rpctest.NewNetwork()
	sa := serveAt(t, n, "a:7700")
	serveAt(t, n, "b:7700")

	call := func(addr string) (string, error) {
		c, err := rpc.Dial(ctx, "tcp", addr, rpc.WithDialer(n))
		if err != nil {
			return "", err
		}
		defer c.Close()
		out, err := c.Call(ctx, mEcho, []byte("hi"), nil)
		return string(out), err
	}
	for _, addr := range []string{"a:7700", "b:7700"} {
		if got, err := call(addr); err != nil || got != addr+" hi" {
			t.Fatalf("call %s = %q, %v; want %q", addr, got, err, addr+" hi")
		}
	}

	refused := func(what, addr string) {
		t.Helper()
		_, err := n.DialContext(ctx, "tcp", addr)
		var oe *net.OpError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, rpctest.ErrConnRefused) || !errors.As(err, &oe) {
			t.Fatalf("%s: dial %s: %v, want a *net.OpError matching syscall.ECONNREFUSED", what, addr, err)
		}
		if _, err := rpc.Dial(ctx, "tcp", addr, rpc.WithDialer(n)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%s: rpc.Dial %s: %v, want syscall.ECONNREFUSED", what, addr, err)
		}
	}
	refused("never listened", "c:7700")

	if _, err := n.Listen("b:7700"); !errors.Is(err, syscall.EADDRINUSE) || !errors.Is(err, rpctest.ErrAddrInUse) {
		t.Fatalf("Listen at an address in use: %v, want syscall.EADDRINUSE", err)
	}

	// The server's Close closes its listener: the address leaves the
	// network, the other stays.
	sa.Close()
	refused("closed", "a:7700")
	if got, err := call("b:7700"); err != nil || got != "b:7700 hi" {
		t.Fatalf("call b after a closed = %q, %v", got, err)
	}

	// The address is free again.
	serveAt(t, n, "a:7700")
	if got, err := call("a:7700"); err != nil || got != "a:7700 hi" {
		t.Fatalf("call a listened again = %q, %v", got, err)
	}
}

// A listener closed while a dial waits for its Accept fails the dial as
// refused, not as the listener's ErrClosed: the address is gone.
func TestNetworkCloseWhileDialing(t *testing.T) {
	n := rpctest.NewNetwork()
	l, err := n.Listen("x")
	if err != nil {
		t.Fatal(err)
	}
	dialed := make(chan error, 1)
	go func() {
		_, err := n.DialContext(context.Background(), "pipe", "x")
		dialed <- err
	}()
	l.Close() // no Accept: the dial waits until this, or starts after it
	if err := <-dialed; !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial = %v, want syscall.ECONNREFUSED", err)
	}
}
