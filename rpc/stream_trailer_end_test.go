package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A trailer the client refuses (over WithMaxResponseMetadata) replaces
// the server's end as what Recv returns, and the stream observer sees
// what the caller got, as for a call whose response metadata is refused:
// Status 0 (the end's status is not the stream's outcome) and Err the
// refusal, after a clean end (not a 200 with an error) or an error end.
// A trailer taken keeps the end's status.
func TestStreamTrailerRefusedObserved(t *testing.T) {
	var mu sync.Mutex
	var ends []StreamEvent
	c, peer := pipeClient(t, WithMaxResponseMetadata(32), WithStreamObserver(func(ev StreamEvent) {
		if ev.End {
			mu.Lock()
			ends = append(ends, ev)
			mu.Unlock()
		}
	}))
	go io.Copy(io.Discard, peer)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	for _, tc := range []struct {
		name       string
		trailer    []byte
		status     uint32
		wantStatus uint32
		refused    bool
	}{
		{"refused, clean end", encodeMD("k", strings.Repeat("v", 40)), 0, 0, true},
		{"refused, error end", encodeMD("k", strings.Repeat("v", 40)), StatusForbidden, 0, true},
		{"taken, clean end", encodeMD("k", "v"), 0, StatusOK, false},
		{"taken, error end", encodeMD("k", "v"), StatusForbidden, StatusForbidden, false},
	} {
		st, err := c.OpenStream(ctx, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		peer.send(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, st.id, tc.trailer))
		if tc.status == 0 {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, st.id))
		} else {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, st.id, tc.status, "no"))
		}
		_, err = recvAll(st)
		if errors.Is(err, ErrResponseMetadata) != tc.refused {
			t.Fatalf("%s: Recv's end %v", tc.name, err)
		}
		await(t, "the end's event", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(ends) > 0
		})
		mu.Lock()
		ev := ends[0]
		ends = ends[:0]
		mu.Unlock()
		if ev.Status != tc.wantStatus || ev.Err != err && !(err == io.EOF && ev.Err == nil) {
			t.Errorf("%s: event Status %d, Err %v; want %d and Recv's end (%v)", tc.name, ev.Status, ev.Err, tc.wantStatus, err)
		}
	}
}

// A handler's CloseSend whose trailer waits for room in the connection's
// write queue (full, its write stuck on a peer that does not read) when
// the stream's deadline passes returns ctx's error, nothing queued: the
// end is then sent when the handler returns, and the trailer must go
// just before it, not be lost with the write CloseSend gave up.
func TestStreamCloseSendTrailerNotQueued(t *testing.T) {
	untilReached(t, "the stream's deadline passed before its CloseSend waited for room", closeSendTrailerNotQueued)
}

func closeSendTrailerNotQueued(t *testing.T) (reached bool) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	sconn := &countWrites{Conn: a}
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	s, _ := testServerOn(t, newOneConnListener(sconn), WithWriteTimeout(time.Hour),
		WithBaseContext(func(net.Listener) context.Context { return base }))
	defer s.Close()
	peer := &rawConn{t, b} // no hello: the server sends without windows
	const sStuck, sFill, sTrailer = 70, 71, 72
	msg := bytes.Repeat([]byte{7}, 1<<20)
	full := func(o *outbox) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.queued() >= outboxLimit
	}
	// The first message's write waits for the peer's read: its Send is
	// the writer until the base ctx ends (when the test returns).
	s.HandleStream(sStuck, func(ctx context.Context, _ []byte, st *Stream) error {
		st.Send(msg)
		<-ctx.Done()
		return nil
	})
	filled := make(chan struct{})
	s.HandleStream(sFill, func(ctx context.Context, _ []byte, st *Stream) error {
		for !full(st.set.out) {
			if err := st.Send(msg); err != nil {
				return err
			}
		}
		close(filled)
		<-ctx.Done()
		return nil
	})
	waited := make(chan bool, 1)
	s.HandleStream(sTrailer, func(ctx context.Context, _ []byte, st *Stream) error {
		SetResponseMetadata(ctx, "k", "v")
		closed := make(chan error, 1)
		go func() { closed <- st.CloseSend() }()
		o := st.set.out
		// Nothing else waits for room: once something does, CloseSend's
		// trailer does, and the queue stays full until the peer reads.
		w := false
		for !w && ctx.Err() == nil {
			o.mu.Lock()
			w = o.wake != nil
			o.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		w = w && ctx.Err() == nil
		err := <-closed
		if w && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("CloseSend: %v, want context.DeadlineExceeded (nothing queued)", err)
		}
		waited <- w
		return nil
	})
	peer.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sStuck, PromiseID: 1}))
	await(t, "the first message's write", func() bool { return sconn.n.Load() >= 1 })
	peer.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFill, PromiseID: 3}))
	receive(t, "the queue to be full", filled)
	peer.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sTrailer, PromiseID: 5, Timeout: 300_000}))
	if !receive(t, "the trailer stream's handler", waited) {
		return false
	}
	var trailer []byte
	for {
		kind, env, ok := peer.recv()
		if !ok {
			t.Fatal("connection closed before stream 5's end")
		}
		switch kind {
		case wire.KindStreamTrailer:
			if id, md, err := wire.ParseStreamTrailer(env); err == nil && id == 5 {
				trailer = bytes.Clone(md)
			}
		case wire.KindStreamEnd:
			if e, err := wire.ParseStreamEnd(env); err == nil && e.ID == 5 {
				if !bytes.Equal(trailer, encodeMD("k", "v")) {
					t.Errorf("stream 5 ended (status %d) after trailer %q, want k=v", e.Status, trailer)
				}
				return true
			}
		}
	}
}
