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

// A stream the server ends at once (a handler returning an error at once)
// while OpenStream's ctx is cancelable: the client's read loop stops the
// ctx's AfterFunc; OpenStream must have set it before the open can be
// answered (a data race under -race, and an AfterFunc left on the ctx
// for every such stream otherwise).
func TestStreamEndedBeforeOpenStreamReturns(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 20 {
		sts := make([]*Stream, 0, 100)
		for range 100 {
			st, err := c.OpenStream(ctx, 99, nil) // no handler: 404 from the read loop
			if err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
		for _, st := range sts {
			var se *StatusError
			if _, err := st.Recv(nil); !errors.As(err, &se) || se.Code != StatusNotFound {
				t.Fatalf("Recv: %v, want status 404", err)
			}
			st.mu.Lock()
			leftover := st.stop != nil
			st.mu.Unlock()
			if leftover {
				t.Fatal("the AfterFunc of an ended stream is still on its ctx")
			}
		}
	}
}
