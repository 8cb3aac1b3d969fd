package rpc

import (
	"crypto/tls"
	"net"
)

// resumableConn reports whether a write to nc that failed on its
// deadline can go on where it stopped, as on TCP and Unix sockets. Not
// over TLS: crypto/tls fails every write after a timed-out one (the
// record it was writing is torn), so a write resumed there fails at once,
// again and again, until the write timeout closes the connection. That
// holds for a connection that wraps a *tls.Conn too, which a caller may
// give [NewClient]: a type that embeds one (it has ConnectionState), or
// one that unwraps to one with NetConn.
func resumableConn(nc net.Conn) bool {
	for range 8 {
		switch c := nc.(type) {
		case *tls.Conn:
			return false
		case interface{ ConnectionState() tls.ConnectionState }:
			return false
		case interface{ NetConn() net.Conn }:
			if nc = c.NetConn(); nc == nil {
				return true
			}
		default:
			return true
		}
	}
	return true
}
