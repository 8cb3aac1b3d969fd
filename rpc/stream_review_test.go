package rpc

import (
	"context"
	"errors"
	"io"
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
