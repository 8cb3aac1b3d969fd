package rpc

import (
	"context"
	"errors"
	"io"
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
