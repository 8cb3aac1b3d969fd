//go:build unix

package rpc

import (
	"crypto/tls"
	"net"
	"syscall"
)

// socketError returns the error the kernel holds for nc's socket
// (SO_ERROR: a reset by the peer, keepalive's timeout), without reading or
// writing a byte; nil when it holds none, when nc (or the connection under
// a *tls.Conn, and under WithTLSConfig's recordConn) is no socket, or when
// the look fails. A peer's FIN sets no error: a half-close is no leave.
// Reading SO_ERROR clears it, which is fine for its one caller: an error
// closes the connection.
func socketError(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if rc, ok := nc.(*recordConn); ok { // WithTLSConfig's record bound
		nc = rc.Conn
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR); err == nil && v != 0 {
			serr = syscall.Errno(v)
		}
	}); err != nil {
		return nil
	}
	return serr
}
