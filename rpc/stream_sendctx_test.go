package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A handler's Send whose message the connection's write is stuck on (a
// peer that does not read: a canonical one, which has no window) returns
// once the handler's ctx ends, not a write timeout later: the write goes
// on in another goroutine, Send returns nil (its message is sent, as a
// client's Send does), and the handler's next Send returns ctx's error.
func TestStreamSendBlockedWriteEndsWithCtx(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServerOn(t, smallSendBuffers{l}, WithWriteTimeout(time.Hour))
	const sFlood = 62
	msg := bytes.Repeat([]byte{3}, 1<<20)
	type result struct {
		sent int
		err  error
	}
	done := make(chan result, 1)
	s.HandleStream(sFlood, func(ctx context.Context, init []byte, st *Stream) error {
		sent := 0
		var err error
		for {
			if err = st.Send(msg); err != nil {
				break
			}
			sent++
		}
		done <- result{sent, err}
		return err
	})
	rc := rawDial(t, l.Addr().String())
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	// 200 ms left until the stream's deadline.
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFlood, PromiseID: 1, Timeout: 200_000}))
	r := receive(t, "the handler's Send to return at its ctx's end", done)
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("Send after %d messages: %v, want context.DeadlineExceeded", r.sent, r.err)
	}
	if r.sent == 0 {
		t.Errorf("no Send wrote its message before the deadline: the test did not test a blocked write")
	}
}

// A handler's Send waiting for the peer's window returns ctx's error once
// the handler's ctx ends.
func TestStreamSendWindowWaitEndsWithCtx(t *testing.T) {
	s, addr, _ := streamServer(t)
	const sFlood = 62
	done := make(chan error, 1)
	s.HandleStream(sFlood, func(ctx context.Context, init []byte, st *Stream) error {
		var err error
		for err == nil {
			err = st.Send(make([]byte, 64<<10))
		}
		done <- err
		return err
	})
	rc := rawDial(t, addr)
	// A zapcodec peer's hello (a window of 1 byte), then an open with
	// 200 ms left until its deadline; the peer grants nothing more.
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1))
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFlood, PromiseID: 1, Timeout: 200_000}))
	if err := receive(t, "the handler's Send to return at its ctx's end", done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send: %v, want context.DeadlineExceeded", err)
	}
	if sc := serverConnOf(t, s); sc.streams.creditWaits.Load() == 0 {
		t.Errorf("no Send waited for the window: the test did not test it")
	}
}

// countWrites is a net.Conn that counts the writes begun on it; it
// unwraps to its conn with NetConn, so a server takes it for what that
// conn is (a net.Pipe end: a cut write can go on).
type countWrites struct {
	net.Conn
	n atomic.Int32
}

func (c *countWrites) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

func (c *countWrites) NetConn() net.Conn { return c.Conn }

// A handler's Recv whose grant makes it write the connection's queue,
// stuck on a peer that does not read, returns once the handler's ctx
// ends, not a write timeout later, as its Send does: the grant goes out
// from another goroutine, Recv returns the message it took, and the next
// Recv returns ctx's error. Over net.Pipe, whose write waits for the
// peer's read: the server's hello is read, nothing after it.
func TestStreamRecvGrantBlockedWriteEndsWithCtx(t *testing.T) {
	s, sconn, peer, cancelBase := pipeStreamServer(t)
	const sRecv = 63
	var received atomic.Int32
	done := make(chan error, 1)
	s.HandleStream(sRecv, func(ctx context.Context, init []byte, st *Stream) error {
		var buf []byte
		for {
			m, err := st.Recv(buf[:0])
			if err != nil {
				done <- err
				return err
			}
			buf = m
			received.Add(1)
		}
	})
	peer.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sRecv, PromiseID: 1}))
	// Eight messages of 4 KiB: the Recv of the eighth consumes half the
	// window (8 × 4100 bytes) and grants it back.
	msg := make([]byte, 1<<12)
	for range 8 {
		peer.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, msg))
	}
	await(t, "the grant's write (the server's second)", func() bool { return sconn.n.Load() >= 2 })
	cancelBase()
	if err := receive(t, "the handler's Recv to return at its ctx's end", done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv: %v, want context.Canceled", err)
	}
	if n := received.Load(); n != 8 {
		t.Errorf("the handler received %d messages, want 8", n)
	}
}

// The same for a handler's CloseSend, whose end the connection's write
// is stuck on: it returns once the handler's ctx ends, its end sent.
func TestStreamCloseSendBlockedWriteEndsWithCtx(t *testing.T) {
	s, sconn, peer, cancelBase := pipeStreamServer(t)
	const sClose = 64
	done := make(chan error, 1)
	s.HandleStream(sClose, func(ctx context.Context, init []byte, st *Stream) error {
		err := st.CloseSend()
		done <- err
		<-ctx.Done()
		return err
	})
	peer.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sClose, PromiseID: 1}))
	await(t, "the end's write (the server's second)", func() bool { return sconn.n.Load() >= 2 })
	cancelBase()
	if err := receive(t, "the handler's CloseSend to return at its ctx's end", done); err != nil {
		t.Fatalf("CloseSend: %v, want nil (its end handed over)", err)
	}
}

// pipeStreamServer serves one connection over net.Pipe, whose writes wait
// for the peer's reads, with a write timeout of an hour and a base
// context that cancelBase ends (the handlers' ctx with it). It returns
// the server, its end of the pipe (counting its writes) and the peer's,
// once the peer and the server exchanged hellos: the server's next write
// waits for a read the peer does not make.
func pipeStreamServer(t *testing.T) (s *Server, sconn *countWrites, peer *rawConn, cancelBase context.CancelFunc) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	sconn = &countWrites{Conn: a}
	base, cancelBase := context.WithCancel(context.Background())
	t.Cleanup(cancelBase)
	s, _ = testServerOn(t, newOneConnListener(sconn), WithWriteTimeout(time.Hour),
		WithBaseContext(func(net.Listener) context.Context { return base }))
	peer = &rawConn{t, b}
	peer.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow))
	if kind, _, ok := peer.recv(); !ok || kind != wire.KindStreamWindow {
		t.Fatalf("got frame kind %d (ok %v), want the server's hello", kind, ok)
	}
	return s, sconn, peer, cancelBase
}
