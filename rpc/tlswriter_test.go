package rpc

import (
	"context"
	"testing"
	"time"
)

// A TLS client's calls whose ctx can end hand their writes to one writer
// goroutine per connection, which ends with the connection: when the
// client closes, and when the server goes away.
func TestTLSWriterGoroutine(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	tlsServer, tlsClient := tlsOptions(t)
	srv, addr, _ := testServer(t, tlsServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := func(c *Client) {
		t.Helper()
		if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
			t.Fatalf("call: %q, %v", out, err)
		}
	}

	a := dial(t, addr, tlsClient)
	call(a)
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after a call with a deadline, want 1", n)
	}
	for range 100 {
		call(a)
	}
	b := dial(t, addr, tlsClient)
	if _, err := b.Call(context.Background(), mEcho, []byte("y"), nil); err != nil {
		t.Fatal(err)
	}
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after 101 calls on one connection and one without a ctx on another, want 1", n)
	}
	call(b)
	if n := writers.Load(); n != 2 {
		t.Fatalf("%d writer goroutines with two connections, want 2", n)
	}

	a.Close()
	await(t, "the closed client's writer to end", func() bool { return writers.Load() == 1 })
	srv.Close()
	await(t, "the writer of the client whose server went away to end", func() bool { return writers.Load() == 0 })
	if _, err := b.Call(ctx, mEcho, []byte("z"), nil); err == nil {
		t.Fatal("call on a connection whose server went away succeeded")
	}
}
