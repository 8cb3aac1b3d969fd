package rpc

import (
	"context"
	"crypto/tls"
	"net"
)

// Peer is the other end of the server connection a call or stream came
// on, as a handler or interceptor learns it with [PeerFrom] (gRPC-go's
// peer.Peer, with the TLS state in place of its AuthInfo).
//
// A Peer is a value of its own: it stays valid after the handler
// returns, and after the connection closed. Its fields are shared with
// every call of the connection and must not be changed through: the
// addresses are those the connection's RemoteAddr and LocalAddr return,
// and TLS points to the server's one copy of the connection's handshake
// state, whose certificates and slices the caller only reads.
type Peer struct {
	// Addr is the caller's address (the connection's RemoteAddr): host
	// and port over TCP, the client end's address over an rpc/rpctest
	// pipe.
	Addr net.Addr
	// LocalAddr is the server's address the call came to (the
	// connection's LocalAddr).
	LocalAddr net.Addr
	// TLS is the state of the connection's TLS handshake, complete
	// before any handler runs: the client's certificate chain is
	// TLS.PeerCertificates (the verified chains in TLS.VerifiedChains
	// when the config asks for and verifies one, tls.RequireAndVerifyClientCert),
	// the negotiated version, cipher suite and server name beside it.
	// It is nil when the connection is not TLS: the listener's
	// connections are *tls.Conn when the server has [WithTLSConfig] or
	// serves a tls.NewListener; a connection of another type that wraps
	// a TLS one is not looked into (nil too). Read only (see Peer).
	TLS *tls.ConnectionState
}

// PeerFrom returns the peer of the call or stream a handler's ctx, or
// any context derived from it, belongs to: in a unary handler, a server
// interceptor, a stream handler or a stream interceptor, as gRPC-go's
// peer.FromContext does. ok is false for any other ctx (a client's, one
// made by context.Background). Call it while the handler runs: a unary
// call's ctx is reused afterwards (the Peer it returned stays valid).
//
// It allocates nothing and costs a call that does not ask nothing: the
// addresses are asked of the connection when PeerFrom is called (for
// the listeners of the net package and rpc/rpctest, a stored value),
// and the TLS state is copied once per connection, after its handshake.
func PeerFrom(ctx context.Context) (Peer, bool) {
	var c *serverConn
	if j := callJob(ctx); j != nil {
		c = j.conn()
	} else if st := streamFrom(ctx); st != nil && st.set != nil {
		c = st.set.sc
	}
	if c == nil || c.nc == nil {
		return Peer{}, false
	}
	return Peer{Addr: c.nc.RemoteAddr(), LocalAddr: c.nc.LocalAddr(), TLS: c.tlsState}, true
}
