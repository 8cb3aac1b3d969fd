package rpc

import (
	"net"
	"sync"
	"testing"
	"time"
)

// heldConn is an accepted connection whose first NetConn call (the
// server makes it while it sets the connection up, see resumableConn)
// reports its arrival and waits for release: a connection the server
// admitted is held there, after WithMaxConns' check. Close reports that
// the server closed it (a rejected one).
type heldConn struct {
	net.Conn
	arrived, release, closed chan struct{}
	arriveOnce, closeOnce    sync.Once
}

func (c *heldConn) NetConn() net.Conn {
	c.arriveOnce.Do(func() {
		close(c.arrived)
		<-c.release
	})
	return c.Conn
}

func (c *heldConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// WithMaxConns holds across listeners served at once: with a limit of
// one, two listeners that each accept a connection at the same moment
// admit one and reject the other. Each admitted connection is held in
// its setup (heldConn) until the test has seen both connections either
// admitted or rejected, so a server that checked the limit and counted
// the connection in two steps would let both pass the check before
// either counted.
func TestMaxConnsAcrossListeners(t *testing.T) {
	s := NewServer(WithMaxConns(1))
	release := make(chan struct{})
	conns := make([]*heldConn, 2)
	served := make(chan error, len(conns))
	for i := range conns {
		a, b := net.Pipe()
		t.Cleanup(func() { b.Close() })
		conns[i] = &heldConn{Conn: a, arrived: make(chan struct{}), release: release, closed: make(chan struct{})}
		l := newOneConnListener(conns[i])
		go func() { served <- s.Serve(l) }()
	}
	admitted := 0
	for i, c := range conns {
		select {
		case <-c.arrived:
			admitted++
		case <-c.closed:
		case <-time.After(30 * time.Second):
			t.Fatalf("connection %d neither admitted nor rejected in 30 s", i)
		}
	}
	close(release)
	if admitted != 1 {
		t.Errorf("%d connections admitted with WithMaxConns(1), want 1", admitted)
	}
	if st := s.Stats(); st.Active > 1 || st.Rejected != 1 {
		t.Errorf("Stats: Active %d, Rejected %d; want at most 1 and 1", st.Active, st.Rejected)
	}
	s.Close()
	for range conns {
		receive(t, "Serve's return", served)
	}
}
