package rpc

import (
	"context"
	"testing"
	"time"
)

// An open stream counts as a running call for the idle limit however long
// nothing moves on it (as gRPC-go's MaxConnectionIdle counts open
// streams): a quiet subscription is not cut, and once it moves again it
// works on the same connection.
func TestIdleTimeoutKeepsQuietStream(t *testing.T) {
	t.Parallel()
	// The idle timeout leaves the server ample time to read the open
	// (a loaded machine may not run its read loop for tens of ms; a
	// frame still unread at the idle deadline counts as idleness).
	const idle = 300 * time.Millisecond
	s, addr, _ := streamServer(t, WithIdleTimeout(idle),
		WithReadTimeout(20*time.Millisecond), WithShutdownGrace(20*time.Millisecond))
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The server has the stream once a message came back.
	if err := st.Send([]byte("open")); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Recv(nil); err != nil || string(got) != "open" {
		t.Fatalf("Recv: %q, %v", got, err)
	}
	time.Sleep(5 * idle) // nothing moves
	if c.Draining() || c.Closed() {
		t.Fatalf("a connection with a quiet open stream got the idle go-away (draining %v, closed %v)", c.Draining(), c.Closed())
	}
	if err := st.Send([]byte("ping")); err != nil {
		t.Fatalf("Send after the quiet spell: %v", err)
	}
	if got, err := st.Recv(nil); err != nil || string(got) != "ping" {
		t.Fatalf("Recv after the quiet spell: %q, %v", got, err)
	}
	if n := s.Stats().Active; n != 1 {
		t.Fatalf("Active %d connections, want 1", n)
	}
}
