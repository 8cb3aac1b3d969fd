package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// A call handed to a worker whose connection dies before the worker starts
// it does not run: its answer could not reach the peer. (Over a socket the
// window is a scheduling gap, so the worker's step is driven directly.)
func TestWorkerSkipsCallOfDeadConnection(t *testing.T) {
	s := NewServer()
	defer s.Close()
	a, b := net.Pipe()
	defer b.Close()
	c := newServerConn(s, a, context.Background())
	s.mu.Lock() // registered as Serve does, so close can unregister it
	s.conns[c] = struct{}{}
	s.stats.active.Add(1)
	s.connWG.Add(1)
	s.mu.Unlock()
	var ran atomic.Int32
	j := c.acquire()
	j.h = func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		return resp, nil
	}
	j.pid = 1
	c.inflight.Add(1) // as request does for the call it dispatches
	c.close(errors.New("peer reset"))
	c.run(j)
	if n := ran.Load(); n != 0 {
		t.Fatalf("handler ran %d times on a dead connection", n)
	}
	if n := c.inflight.Load(); n != 0 {
		t.Fatalf("in flight %d after the skipped call, want 0", n)
	}
}

// A handler error of megabytes is logged cut like a client's error string
// (MaxErrorMessage bytes and the full length), never whole.
func TestHandlerErrorLogIsBounded(t *testing.T) {
	s, addr, logs := testServer(t)
	huge := strings.Repeat("é", 1<<20) // 2 MiB of two-byte characters
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, errors.New(huge)
	})
	c := dial(t, addr)
	if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
		t.Fatal("call succeeded")
	}
	await(t, "the handler error in the log", func() bool { return contains(logs.String(), "rpc: handler error") })
	log := logs.String()
	if len(log) > 4*MaxErrorMessage {
		t.Fatalf("log of %d bytes for one handler error", len(log))
	}
	if !contains(log, fmt.Sprintf("len=%d", len(huge))) {
		t.Fatalf("log lacks the error's length: %.300s", log)
	}
}
