package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
)

// heldQueueBuffer returns the capacity of the largest buffer o's queue
// holds (the queue's and its spare).
func heldQueueBuffer(o *outbox) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	held := 0
	for _, b := range []*outBuf{o.cur, o.spare} {
		if b != nil {
			held = max(held, cap(b.B))
		}
	}
	return held
}

// An open whose initial message makes a frame over the maximum size is
// refused before it is copied into the connection's write queue, as a
// Call's request and a Send's message are: the queue's buffer used to
// grow to the open's size and stay so until the next write.
func TestOpenStreamTooLargeNotQueued(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	init := make([]byte, c.out.max)
	if st, err := c.OpenStream(context.Background(), sEcho, init); !errors.Is(err, frame.ErrFrameTooLarge) {
		t.Fatalf("OpenStream: %v, %v; want frame.ErrFrameTooLarge", st, err)
	}
	if held := heldQueueBuffer(&c.out); held >= len(init) {
		t.Fatalf("the write queue holds a %d-byte buffer after refusing a %d-byte initial message", held, len(init))
	}
	if n := c.streams.open(); n != 0 {
		t.Fatalf("%d streams open after the refused open", n)
	}
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, st.Send([]byte("small")))
	must(t, st.CloseSend())
	if msgs, err := recvAll(st); err != io.EOF || len(msgs) != 1 || string(msgs[0]) != "small" {
		t.Fatalf("the next stream: %q, %v", msgs, err)
	}
}

// A client's CloseSend after its stream's ctx ended sends no clean end:
// the server's handler must not read a truncated stream as complete (an
// upload cut short by its deadline, taken as whole). CloseSend checked
// the ctx only while it waited for room in the write queue, so a
// CloseSend that came before the cancel's own goroutine ran sent a clean
// end, and the handler read io.EOF before the cancel.
func TestStreamCloseSendAfterCtxEndedSendsNoCleanEnd(t *testing.T) {
	s, addr, _ := testServer(t)
	ends := make(chan error, 1)
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		for {
			if _, err := st.Recv(nil); err != nil {
				ends <- err
				return nil
			}
		}
	})
	c := dial(t, addr)
	for i := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		st, err := c.OpenStream(ctx, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		must(t, st.Send([]byte("part")))
		cancel()
		if err := st.CloseSend(); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("CloseSend after the cancel: %v", err)
		}
		if err := receive(t, "the handler's end", ends); err == io.EOF {
			t.Fatalf("stream %d: the handler read a clean end sent after the stream's ctx ended", i)
		}
	}
}

// A stream ended from outside its handler (the client's cancel, the
// client's connection closed) whose handler returns the error that ended
// it (its ctx's, or Recv's ErrClosed) is not logged as a handler error:
// a client's cancel is its only way to stop a server stream early, and
// each such stream used to log an error. A handler's own error still is.
func TestStreamEndedFromOutsideNotLoggedAsHandlerError(t *testing.T) {
	s, addr, logs := testServer(t)
	returned := make(chan error, 1)
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done()
		returned <- ctx.Err()
		return ctx.Err()
	})
	s.HandleStream(2, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send(init)
		for {
			if _, err := st.Recv(nil); err != nil {
				returned <- err
				return err
			}
		}
	})
	s.HandleStream(3, func(ctx context.Context, init []byte, st *Stream) error {
		return errors.New("own failure")
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.OpenStream(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := receive(t, "the canceled stream's handler", returned); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler's ctx: %v", err)
	}
	c2 := dial(t, addr)
	st, err := c2.OpenStream(context.Background(), 2, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if err := receive(t, "the closed connection's handler", returned); !errors.Is(err, ErrClosed) {
		t.Fatalf("handler's Recv: %v", err)
	}
	st, err = c.OpenStream(context.Background(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err == nil || !contains(err.Error(), "own failure") {
		t.Fatalf("Recv: %v, want the handler's error", err)
	}
	await(t, "every stream to end", func() bool { return s.streamsOpen() == 0 })
	if n := strings.Count(logs.String(), "rpc: stream handler error"); n != 1 || !contains(logs.String(), "own failure") {
		t.Fatalf("%d handler errors logged, want the handler's own alone:\n%s", n, logs.String())
	}
}

// A stream whose client went away, and whose handler returns the error
// that gave it (its ctx's once the connection closed, here by a reset;
// Recv's once the client closed its side, a FIN, which the server cannot
// tell from a half-close), is counted and observed as canceled
// (StatusCanceled), as gRPC-go reports codes.Canceled on a server whose
// client went away: it was counted Internal (500), as a handler's failure.
func TestStreamClientGoneCountedCanceled(t *testing.T) {
	for _, viaRecv := range []bool{false, true} {
		var log streamLog
		s, addr, logs := testServer(t, WithStreamObserver(log.observe))
		started := make(chan struct{})
		s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
			close(started)
			if viaRecv {
				_, err := st.Recv(nil)
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		})
		c := dial(t, addr)
		if !viaRecv {
			resetOnClose(t, c)
		}
		if _, err := c.OpenStream(context.Background(), 1, nil); err != nil {
			t.Fatal(err)
		}
		receive(t, "the handler to start", started)
		c.Close()
		// The end is counted in Stats before the observer is told of
		// it: wait for both.
		await(t, "the stream's end", func() bool { return s.Stats().Streams.Active == 0 && log.count() >= 2 })
		if st := s.Stats().Streams; st.Canceled != 1 || st.Internal != 0 {
			t.Errorf("via Recv %v: Stats.Streams %+v, want 1 canceled, none internal", viaRecv, st)
		}
		evs := log.take()
		if len(evs) != 2 || !evs[1].End || evs[1].Status != StatusCanceled {
			t.Errorf("via Recv %v: events %+v, want a start and an end with status %d", viaRecv, evs, StatusCanceled)
		}
		if l := logs.String(); contains(l, "handler error") {
			t.Errorf("via Recv %v: logged as a handler error:\n%s", viaRecv, l)
		}
	}
}

// resetOnClose makes c's Close reset its TCP connection (SO_LINGER 0): the
// server's read fails at once, where a FIN reads as a half-close, after
// which the server still answers the calls running.
func resetOnClose(t *testing.T, c *Client) {
	t.Helper()
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		t.Fatalf("the client's connection is a %T", c.nc)
	}
	if err := tc.SetLinger(0); err != nil {
		t.Fatal(err)
	}
}

// The same for a unary call: a handler that returns its ctx's error once
// the client's connection is gone (reset) is observed as canceled
// (StatusCanceled), not as a handler's failure (500), and is not logged
// as a handler error.
func TestCallClientGoneCountedCanceled(t *testing.T) {
	var log eventLog
	s, addr, logs := testServer(t, WithObserver(log.observe))
	started := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-ctx.Done()
		return resp, ctx.Err()
	})
	c := dial(t, addr)
	resetOnClose(t, c)
	go c.Call(context.Background(), mSlow, nil, nil)
	receive(t, "the handler to start", started)
	c.Close()
	await(t, "the call's event", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.evs) == 1
	})
	if ev := log.evs[0]; ev.Status != StatusCanceled {
		t.Errorf("event %+v, want status %d", ev, StatusCanceled)
	}
	if st := s.Stats(); st.Internal != 0 {
		t.Errorf("Stats %+v: a call counted internal", st)
	}
	if l := logs.String(); contains(l, "handler error") {
		t.Errorf("the call was logged as a handler error:\n%s", l)
	}
}
