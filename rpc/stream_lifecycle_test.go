package rpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Shutdown's grace ends every open stream of a connection at once, even
// when the peer reads nothing and the connection's write queue is full:
// the end of one stream waiting for room does not hold back the cancel
// of the others. The streams were ended one after another on one
// goroutine, and the first end's wait for room (for the write timeout)
// left the other handlers running.
func TestStreamShutdownEndsAllWhilePeerNotReading(t *testing.T) {
	s, addr, _ := testServer(t, WithShutdownGrace(time.Millisecond), WithWriteTimeout(time.Hour))
	const sFlood, sWait = 91, 92
	floodErr := make(chan error, 2)
	s.HandleStream(sFlood, sendUntilError(floodErr))
	waitErr := make(chan error, 1)
	s.HandleStream(sWait, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done()
		waitErr <- ctx.Err()
		return ctx.Err()
	})
	// A canonical peer (no hello: no window) that reads nothing.
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sWait, PromiseID: 1}))
	// Two that send without end: one writes (it is the writer, blocked
	// on the socket), the other fills the queue.
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFlood, PromiseID: 3}))
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFlood, PromiseID: 5}))
	// Full: the queue holds its limit, or a sender waits for room. The
	// writer may have taken the whole full queue into one write, blocked
	// on the socket (seen with GOMAXPROCS=1: the other flooder filled it
	// before the writer ran), and the queue then looks empty while the
	// other flooder waits for that write.
	await(t, "the write queue to fill", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			c.out.mu.Lock()
			full := c.out.queued() >= outboxLimit || c.out.wake != nil
			c.out.mu.Unlock()
			if full && c.streams.open() == 3 {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Shutdown(ctx)
	for range 2 {
		if err := receive(t, "the flooding handlers' Send to fail", floodErr); err == nil {
			t.Fatal("a flooding handler's Send returned nil")
		}
	}
	if err := receive(t, "the waiting handler's ctx to end", waitErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiting handler's ctx: %v", err)
	}
}
