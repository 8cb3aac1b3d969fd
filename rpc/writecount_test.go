package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// badCountConn is a net.Conn wrapper (not a socket of package net) whose
// Write writes nothing and reports count(len(p)) without an error: a
// count outside 0..len(p) breaks io.Writer's contract.
type badCountConn struct {
	net.Conn
	count func(int) int
}

func (c badCountConn) Write(p []byte) (int, error) { return c.count(len(p)), nil }

// badCounts are the counts badCountConn reports, by name.
var badCounts = []struct {
	name  string
	count func(int) int
}{
	{"-1", func(int) int { return -1 }},
	{"len+1", func(n int) int { return n + 1 }},
}

// A net.Conn wrapper whose Write returns a count outside 0..len(p) breaks
// the connection with an error that says so, on either side, and never
// panics. A server's answer of 64 KiB or more went through
// net.Buffers.WriteTo, which on a wrapper is one Write per buffer without
// a look at the counts: a count of -1 panicked (slice bounds out of
// range), in the goroutine writing the answer, and crashed the process.
// Elsewhere a count of -1 was taken for a short write and one of len+1
// for the whole write. (The calls' ctx only keeps a broken test from
// hanging: a request or answer taken for written waits for ever.)
func TestWriteBadCount(t *testing.T) {
	for _, bc := range badCounts {
		t.Run("client/"+bc.name, func(t *testing.T) {
			_, addr, _ := testServer(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c := NewClient(badCountConn{nc, bc.count})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = c.Call(ctx, mEcho, []byte("hello"), nil)
			if !errors.Is(err, ErrClosed) || !contains(err.Error(), "invalid count") {
				t.Fatalf("call: %v, want ErrClosed (an invalid count)", err)
			}
		})
		for _, size := range []int{100, 64 << 10} { // from the queue; a body written as it is
			t.Run("server/"+bc.name+"/"+map[int]string{100: "small", 64 << 10: "large"}[size], func(t *testing.T) {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				_, logs := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return badCountConn{nc, bc.count} }})
				c := dial(t, l.Addr().String())
				req := bytes.Repeat([]byte{3}, size)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Call(ctx, mEcho, req, nil); !errors.Is(err, ErrClosed) {
					t.Fatalf("call: %v, want ErrClosed", err)
				}
				await(t, "the close to be logged", func() bool { return contains(logs.String(), "closing connection") })
				if !contains(logs.String(), "invalid count") {
					t.Errorf("the log does not say why the connection was closed:\n%s", logs)
				}
			})
		}
	}
}
