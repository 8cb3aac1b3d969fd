package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// peerSeen is what each server-side place PeerFrom is asked in saw: the
// unary handler, the server interceptor around it, the stream handler,
// the stream interceptor around it, and a ctx derived from the unary
// handler's.
type peerSeen struct {
	handler, intercept, stream, streamIntercept, derived Peer
	ok                                                   [5]bool
}

const (
	mPeer       = 61
	mPeerStream = 62
)

// peerServerOptions are the options of a server whose interceptors
// record PeerFrom into seen.
func peerServerOptions(seen *peerSeen) []ServerOption {
	return []ServerOption{
		WithInterceptors(func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
			if method == mPeer {
				seen.intercept, seen.ok[1] = PeerFrom(ctx)
			}
			return next(ctx, req, resp)
		}),
		WithStreamInterceptors(func(ctx context.Context, method uint32, init []byte, s *Stream, next StreamHandler) error {
			seen.streamIntercept, seen.ok[3] = PeerFrom(ctx)
			return next(ctx, init, s)
		}),
	}
}

// peerHandlers registers the handlers that record PeerFrom into seen.
func peerHandlers(s *Server, seen *peerSeen) {
	s.Handle(mPeer, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		seen.handler, seen.ok[0] = PeerFrom(ctx)
		type k struct{}
		seen.derived, seen.ok[4] = PeerFrom(context.WithValue(ctx, k{}, 1))
		return resp, nil
	})
	s.HandleStream(mPeerStream, func(ctx context.Context, init []byte, st *Stream) error {
		seen.stream, seen.ok[2] = PeerFrom(ctx)
		return nil
	})
}

// peerCallAndStream makes one call of mPeer and one stream of
// mPeerStream on c, each answered before it returns (the handlers'
// writes to seen come before).
func peerCallAndStream(t *testing.T, c *Client) {
	t.Helper()
	if _, err := c.Call(context.Background(), mPeer, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, err := c.OpenStream(context.Background(), mPeerStream, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("stream Recv: %v, want io.EOF", err)
	}
}

// check compares every Peer seen with want (addresses by network and
// string) and reports each place's TLS state to tlsCheck.
func (seen *peerSeen) check(t *testing.T, remote, local net.Addr, tlsCheck func(where string, st *tls.ConnectionState)) {
	t.Helper()
	for i, p := range []struct {
		where string
		p     Peer
	}{{"unary handler", seen.handler}, {"server interceptor", seen.intercept}, {"stream handler", seen.stream}, {"stream interceptor", seen.streamIntercept}, {"ctx derived from a handler's", seen.derived}} {
		if !seen.ok[i] {
			t.Errorf("%s: PeerFrom ok false", p.where)
			continue
		}
		if p.p.Addr == nil || p.p.Addr.Network() != remote.Network() || p.p.Addr.String() != remote.String() {
			t.Errorf("%s: Addr %v, want the client's %v (%s)", p.where, p.p.Addr, remote, remote.Network())
		}
		if p.p.LocalAddr == nil || p.p.LocalAddr.Network() != local.Network() || p.p.LocalAddr.String() != local.String() {
			t.Errorf("%s: LocalAddr %v, want the server's %v (%s)", p.where, p.p.LocalAddr, local, local.Network())
		}
		tlsCheck(p.where, p.p.TLS)
	}
}

// A handler, a server interceptor, a stream handler and a stream
// interceptor see the caller's TCP address, the server's, and, over
// TLS, the handshake's state with the client's certificate.
func TestPeerFromTLSClientCert(t *testing.T) {
	serverCert, roots := selfSigned(t)
	clientCert, _ := selfSigned(t)
	var seen peerSeen
	opts := append(peerServerOptions(&seen), WithTLSConfig(&tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientAuth:   tls.RequireAnyClientCert,
	}))
	s, addr, _ := testServer(t, opts...)
	peerHandlers(s, &seen)
	c := dial(t, addr, WithTLSConfig(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}}))
	peerCallAndStream(t, c)
	seen.check(t, c.nc.LocalAddr(), c.nc.RemoteAddr(), func(where string, st *tls.ConnectionState) {
		if st == nil {
			t.Errorf("%s: TLS nil on a TLS connection", where)
			return
		}
		if !st.HandshakeComplete || st.Version != tls.VersionTLS13 {
			t.Errorf("%s: TLS handshake complete %v, version %x; want complete, TLS 1.3", where, st.HandshakeComplete, st.Version)
		}
		if len(st.PeerCertificates) != 1 || !st.PeerCertificates[0].Equal(clientCert.Leaf) {
			t.Errorf("%s: %d peer certificates, want the client's one", where, len(st.PeerCertificates))
		}
	})
	if seen.handler.TLS != seen.stream.TLS {
		t.Error("a call and a stream of one connection have TLS states of their own, want the connection's one")
	}
}

// Over plain TCP, TLS is nil.
func TestPeerFromTCP(t *testing.T) {
	var seen peerSeen
	s, addr, _ := testServer(t, peerServerOptions(&seen)...)
	peerHandlers(s, &seen)
	c := dial(t, addr)
	peerCallAndStream(t, c)
	seen.check(t, c.nc.LocalAddr(), c.nc.RemoteAddr(), func(where string, st *tls.ConnectionState) {
		if st != nil {
			t.Errorf("%s: TLS %p on a plain connection, want nil", where, st)
		}
	})
}

// Over rpc/rpctest's in-memory pipes, the addresses are the pipe's: the
// client end's ("rpctest-N") and the listener's.
func TestPeerFromRPCTestPipe(t *testing.T) {
	l := rpctest.NewListener()
	var seen peerSeen
	s, _ := testServerOn(t, l, peerServerOptions(&seen)...)
	peerHandlers(s, &seen)
	nc, err := l.Dial()
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(nc)
	t.Cleanup(func() { c.Close() })
	peerCallAndStream(t, c)
	if nc.RemoteAddr().String() != l.Addr().String() {
		t.Fatalf("the pipe's remote address %v is not the listener's %v", nc.RemoteAddr(), l.Addr())
	}
	seen.check(t, nc.LocalAddr(), l.Addr(), func(where string, st *tls.ConnectionState) {
		if st != nil {
			t.Errorf("%s: TLS %p on a pipe, want nil", where, st)
		}
	})
}

// A ctx that is no handler's has no peer: Background, a client's ctx
// (with metadata), and a job's ctx once its call ended (it waits in the
// pool, its connection retired).
func TestPeerFromNotAHandler(t *testing.T) {
	for _, ctx := range []context.Context{
		context.Background(),
		WithMetadata(context.Background(), "k", "v"),
		&job{},
	} {
		if p, ok := PeerFrom(ctx); ok || p != (Peer{}) {
			t.Errorf("PeerFrom(%T) = %+v, %v; want the zero Peer, false", ctx, p, ok)
		}
	}
}
