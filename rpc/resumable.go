package rpc

import (
	"crypto/tls"
	"net"
	"reflect"
	"sync"
)

// resumableConn reports whether a write to nc that failed on its
// deadline can go on where it stopped: it is a TCP or Unix socket (or a
// net.Pipe end), or unwraps to one with NetConn. Anything else is not
// known to be: a connection that wraps a *tls.Conn, above all, which a
// caller may give [NewClient] inside a type of its own (a metrics
// wrapper, a custom dialer's struct{ net.Conn }): crypto/tls fails every
// write after a timed-out one (the record it was writing is torn), with
// an error that still matches os.ErrDeadlineExceeded, so a write resumed
// there fails at once, again and again. A type that embeds a *tls.Conn
// (it has ConnectionState) is not followed through the NetConn it
// embeds too, which returns the socket under the TLS layer. A wrapper
// that wants its writes cut at a ctx's end and resumed unwraps with
// NetConn to the socket it writes to unchanged.
//
// What it costs not to be resumable: on a client, a write whose caller
// has a ctx that can end is not cut at its end, it runs in the
// connection's writer goroutine (one more goroutine per connection
// while such writes come, see outbox.handToWriter), bounded by the write
// timeout; on a
// server (a listener's wrapper), each write must end within the write
// timeout, as over TLS (see outbox.write, writeWatched).
func resumableConn(nc net.Conn) bool {
	for range 8 {
		switch c := nc.(type) {
		case *net.TCPConn, *net.UnixConn:
			return true
		case *tls.Conn:
			return false
		case interface{ ConnectionState() tls.ConnectionState }:
			return false
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nc != nil && reflect.TypeOf(nc) == pipeType()
		}
	}
	return false
}

// pipeType is the dynamic type of net.Pipe's ends (unexported): a write
// to one that its deadline cut took what it reports and can go on.
var pipeType = sync.OnceValue(func() reflect.Type {
	a, b := net.Pipe()
	a.Close()
	b.Close()
	return reflect.TypeOf(a)
})
