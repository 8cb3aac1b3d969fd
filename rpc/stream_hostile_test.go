package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// outboxFull reports whether o's queue is full (a frame must wait for room).
func outboxFull(o *outbox) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued() >= outboxLimit
}

// A handler's CloseSend whose ctx ended while the connection's queue was
// full queued no end; the end is still sent when the handler returns, so
// the peer learns that the stream is over (it used to get none, and a
// peer without a deadline waited for it for ever).
func TestStreamHandlerCloseSendNotQueuedStillEnds(t *testing.T) {
	s, addr, _ := testServer(t)
	stop := make(chan struct{})
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		// Fills the connection's queue with its like: the peer does not read.
		msg := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			if err := st.Send(msg); err != nil {
				return err
			}
		}
	})
	closeErr := make(chan error, 1)
	s.HandleStream(2, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done() // the open's deadline
		for !outboxFull(st.set.out) {
			time.Sleep(time.Millisecond)
		}
		closeErr <- st.CloseSend()
		return nil
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<30))
	// Several senders: while one writes (blocked), the others fill the queue.
	for id := uint32(1); id <= 5; id += 2 {
		rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: id}))
	}
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: 7, Timeout: 100000}))
	if err := <-closeErr; err != context.DeadlineExceeded {
		t.Fatalf("CloseSend: %v, want the ctx's error (its end not queued)", err)
	}
	close(stop)
	// Generous: only keeps a broken build from reading for ever.
	rc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		kind, env, ok := rc.recv()
		if !ok {
			t.Fatal("no end for the stream whose CloseSend failed")
		}
		if kind != wire.KindStreamEnd {
			continue
		}
		if e, err := wire.ParseStreamEnd(env); err != nil || e.ID != 7 {
			continue
		} else if e.Status != 0 {
			t.Fatalf("end %d %q, want a clean end (the handler returned nil)", e.Status, e.Message)
		}
		return
	}
}
