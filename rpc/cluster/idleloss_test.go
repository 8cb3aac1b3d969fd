package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// handConn is a connection a handServer accepted: the test writes a
// go-away on it, or closes it, when it likes.
type handConn struct {
	nc    net.Conn
	mu    sync.Mutex // over w
	w     *frame.Writer
	calls chan uint32 // the methods of the requests it read, health checks aside
}

// goAway writes a go-away frame.
func (h *handConn) goAway() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.w.WriteFrame(wire.KindGoAway, nil)
	h.w.Flush()
}

// mRefuse is a method handServer refuses unrun, as a server going away
// does, with no go-away: a call with the not-run flag, a stream's open
// with the not-run mark before its end.
const mRefuse = 60

// handServer is a replica that speaks the wire by hand: it answers a
// health check 404 (a server without the health service: serving),
// refuses mRefuse, and echoes any other call; it refuses every stream's
// open as it refuses mRefuse. It gives each connection it accepts on
// accepted. before, when not nil, is called with each request before its
// answer.
func handServer(t *testing.T, before func(h *handConn, req wire.Request)) (addr string, accepted <-chan *handConn) {
	ch := make(chan *handConn, 64)
	addr = serveConns(t, func(nc net.Conn) {
		h := &handConn{nc: nc, w: frame.NewWriter(nc), calls: make(chan uint32, 64)}
		ch <- h
		r := frame.NewReader(nc)
		for {
			kind, p, err := r.Next()
			if err != nil {
				return
			}
			if kind != wire.KindRequest && kind != wire.KindStreamOpen {
				continue
			}
			req, err := wire.ParseRequest(p)
			if err != nil {
				return
			}
			if kind == wire.KindStreamOpen {
				h.mu.Lock()
				h.w.WriteFrame(wire.KindStreamNotRun, wire.AppendStreamNotRun(nil, req.PromiseID))
				h.w.WriteFrame(wire.KindStreamEnd, wire.AppendStreamEndError(nil, req.PromiseID, rpc.StatusUnavailable, "going away"))
				err = h.w.Flush()
				h.mu.Unlock()
				if err != nil {
					return
				}
				continue
			}
			if before != nil {
				before(h, req)
			}
			resp := wire.Response{Status: rpc.StatusOK, PromiseID: req.PromiseID, Body: req.Payload}
			switch req.Method {
			case rpc.HealthMethod:
				resp = wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}
			case mRefuse:
				resp = wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true, Body: []byte("going away")}
				fallthrough
			default:
				select {
				case h.calls <- req.Method:
				default:
				}
			}
			h.mu.Lock()
			h.w.WriteFrame(wire.KindResponse, wire.AppendResponse(nil, &resp))
			err = h.w.Flush()
			h.mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return addr, ch
}

// A connection on which no call runs, lost by a go-away or by its
// server's close, is replaced at once: the replica dials a new one
// before any call comes (the test waits for the server to accept it),
// and the next call finds it ready and runs on it. It was replaced only
// when a call next picked it (or at the next health check, an hour away
// here).
func TestIdleLossRedialedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(h *handConn)
	}{
		{"go-away", (*handConn).goAway},
		{"closed by the server", func(h *handConn) { h.nc.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, accepted := handServer(t, nil)
			// A base of 1 ns: the connection, however young, is not one
			// lost at once (which would back off before the redial).
			c := dialT(t, "static:///"+addr, WithHealthCheck(time.Hour, 0), WithEjection(0, time.Nanosecond, time.Nanosecond))
			first := waitFor(t, "the first connection", accepted)
			tc.lose(first)
			second := waitFor(t, "a new connection, with no call made", accepted)
			if n := c.Stats().Calls; n != 0 {
				t.Fatalf("%d calls made", n)
			}
			// Admitted on its health check: it takes the next call.
			await(t, "the new connection in the ready set", func() bool {
				conns := c.ready.Load().conns
				return len(conns) == 1 && !conns[0].rc.Draining() && !conns[0].rc.Closed()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("call: %q %v", out, err)
			}
			if m := waitFor(t, "the call on the new connection", second.calls); m != mEcho {
				t.Fatalf("method %d on the new connection", m)
			}
		})
	}
}

// A connection whose server sends go-away during its health check (here
// before it answers it) is lost at once: its replica is ejected, not
// admitted, however soon after the answer the client gets to it. It was
// admitted, to be ejected at the replica's next connect (which the test
// holds: the replica then stayed "ready").
func TestGoAwayDuringHealthCheckNotAdmitted(t *testing.T) {
	addr, _ := handServer(t, func(h *handConn, req wire.Request) {
		if req.Method == rpc.HealthMethod {
			h.goAway()
		}
	})
	hold := make(chan struct{}) // never closed: the hook ends with the replica's ctx
	connects := 0
	hook := func(r *replica) {
		if r.addr != addr {
			return
		}
		if connects++; connects > 1 {
			select {
			case <-hold:
			case <-r.ctx.Done():
			}
		}
	}
	connectHook.Store(&hook)
	t.Cleanup(func() { connectHook.Store(nil) }) // after the client's Close
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, "static:///"+addr, WithEjection(0, time.Minute, time.Minute), WithHealthCheck(time.Hour, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rs := c.Stats().Replicas
	if len(rs) != 1 || rs[0].State != "ejected" || rs[0].LastError == nil || !strings.Contains(rs[0].LastError.Error(), "went away") {
		t.Fatalf("replicas %+v, want the one ejected for its connection that went away", rs)
	}
}

// A call, or a stream's open, that the server refused unrun (as a server
// going away refuses what crossed its go-away; here with no go-away)
// has its connection replaced at once: the replica dials a new one before
// any other call comes (the test waits for the server to accept it). A
// call did so already; a stream's open, whose refusal comes as the
// stream's error end, left its connection in the ready set, to take the
// next calls and opens.
func TestRefusedUnrunReplacedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse func(c *Client) error // the refused call or open: its error
	}{
		{"call", func(c *Client) error {
			_, err := c.Call(context.Background(), mRefuse, nil, nil)
			return err
		}},
		{"stream", func(c *Client) error {
			st, err := c.OpenStream(context.Background(), mRefuse, nil)
			if err != nil {
				return err
			}
			_, err = st.Recv(nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, accepted := handServer(t, nil)
			// A base of 1 ns: the connection, however young, is not one
			// refused at once (which would back off before the redial);
			// no retry: the call's refusal is its error.
			c := dialT(t, "static:///"+addr, WithHealthCheck(time.Hour, 0), WithEjection(0, time.Nanosecond, time.Nanosecond), WithRetryBudget(0, 0))
			first := waitFor(t, "the first connection", accepted)
			if err := tc.refuse(c); !errors.Is(err, rpc.ErrGoAway) {
				t.Fatalf("refused: %v, want an error matching rpc.ErrGoAway", err)
			}
			second := waitFor(t, "a new connection, with no other call made", accepted)
			if n := c.Stats().Calls; n != 1 {
				t.Fatalf("%d calls made, want 1", n)
			}
			await(t, "the new connection alone in the ready set", func() bool {
				conns := c.ready.Load().conns
				return len(conns) == 1 && !conns[0].rc.Closed() && !conns[0].rc.Draining() && !conns[0].refused.Load()
			})
			if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("call: %q %v", out, err)
			}
			for len(first.calls) > 0 {
				if m := <-first.calls; m != mRefuse {
					t.Fatalf("method %d on the refusing connection", m)
				}
			}
			if m := waitFor(t, "the call on the new connection", second.calls); m != mEcho {
				t.Fatalf("method %d on the new connection", m)
			}
		})
	}
}
