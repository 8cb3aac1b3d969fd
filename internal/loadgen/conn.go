package loadgen

import (
	"net"
	"sync/atomic"
)

// countingConn counts the bytes read from and written to a connection,
// on counters of its own (one pair shared by every connection would be
// two contended atomic additions per call).
type countingConn struct {
	net.Conn
	in, out atomic.Uint64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(uint64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(uint64(n))
	return n, err
}

// NetConn returns the connection c counts the bytes of: rpc takes a
// connection that unwraps to a socket for one whose writes a deadline
// may cut and resume (see rpc.NewClient), and writes on it from the
// caller's goroutine; writes to a wrapper it cannot see through go to a
// goroutine of their own, whose count may come after the answers.
func (c *countingConn) NetConn() net.Conn { return c.Conn }
