package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
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
