package rpc

import (
	"io"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// WithOnClosing's functions are called once, in the order given, when
// the client stops taking new calls: at the server's go-away on an idle
// connection (Draining already true), at the server's close, at the
// client's own Close (Closed already true); not again at the close that
// follows a go-away.
func TestOnClosing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(c *Client, peer *rawConn)
		draining bool
	}{
		{"go-away", func(c *Client, peer *rawConn) { peer.send(wire.KindGoAway, nil) }, true},
		{"closed by the server", func(c *Client, peer *rawConn) { peer.Close() }, false},
		{"Close", func(c *Client, peer *rawConn) { c.Close() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				which            int
				c                *Client
				draining, closed bool
			}
			calls := make(chan seen, 8)
			var mu sync.Mutex
			var order []int
			note := func(which int) func(*Client) {
				return func(c *Client) {
					mu.Lock()
					order = append(order, which)
					mu.Unlock()
					calls <- seen{which, c, c.Draining(), c.Closed()}
				}
			}
			c, peer := pipeClient(t, WithOnClosing(note(1)), WithOnClosing(nil), WithOnClosing(note(2)))
			go io.Copy(io.Discard, peer)
			tc.end(c, peer)
			for which := 1; which <= 2; which++ {
				s := receive(t, "a WithOnClosing function to be called", calls)
				if s.which != which || s.c != c {
					t.Fatalf("function %d called with %p, want function %d with the client %p", s.which, s.c, which, c)
				}
				if tc.draining && (!s.draining || s.closed) || !tc.draining && !s.closed {
					t.Fatalf("called with Draining %v, Closed %v", s.draining, s.closed)
				}
			}
			c.Close()
			if len(calls) != 0 {
				t.Fatalf("called again: %v", order)
			}
		})
	}
}
