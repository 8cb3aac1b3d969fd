package rpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A handler blocked in Send on a full window (the client reads nothing)
// returns once the client cancels the stream: the client's error end
// ends the server's direction too, so the handler goroutine and its
// stream slot are not held until the connection closes.
func TestStreamCancelWakesHandlerBlockedInSend(t *testing.T) {
	s, addr, _ := streamServer(t, WithMaxStreams(1))
	sendErr := make(chan error, 1)
	s.HandleStream(sBlock, func(ctx context.Context, init []byte, st *Stream) error {
		msg := make([]byte, 1000)
		for {
			if err := st.Send(msg); err != nil {
				sendErr <- err
				return err
			}
		}
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.OpenStream(ctx, sBlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil { // the handler runs
		t.Fatal(err)
	}
	// Let the handler fill the window and block in Send.
	await(t, "the client's buffer to fill", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.qBytes >= c.streams.window-1004
	})
	cancel()
	select {
	case err := <-sendErr:
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusCanceled {
			t.Fatalf("handler's Send after the client canceled: %v, want status %d", err, StatusCanceled)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: the handler's Send still blocks after the client canceled the stream")
	}
	// The slot is free again (WithMaxStreams(1) on the server).
	st2, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st2.Send([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if m, err := st2.Recv(nil); err != nil || string(m) != "x" {
		t.Fatalf("a stream after the canceled one: %q %v", m, err)
	}
}
