package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// pastDeadlineCtx is a ctx whose deadline has passed and whose Done is not
// closed yet: a context.WithDeadline between its deadline and its timer's
// firing, which a loaded machine makes long.
type pastDeadlineCtx struct{ context.Context }

func (pastDeadlineCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// A call (or a stream open) whose deadline has passed is not sent, even
// when its ctx's Done is not closed yet: it fails with
// context.DeadlineExceeded, as gRPC-go's does, rather than reaching the
// server with a timeout of 1 µs that the server may find not yet passed
// when it would run the handler.
func TestPastDeadlineNotSent(t *testing.T) {
	c, peer := pipeClient(t)
	got := make(chan string, 8)
	go func() {
		for {
			kind, env, ok := peer.recv()
			if !ok {
				return
			}
			if kind != wire.KindRequest && kind != wire.KindStreamOpen {
				continue
			}
			r, err := wire.ParseRequest(env)
			if err != nil {
				t.Error(err)
				return
			}
			got <- fmt.Sprintf("kind %d timeout %d", kind, r.Timeout)
			if kind == wire.KindRequest {
				peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
			}
		}
	}()
	// Done closes in a minute: only so that a broken client, which sends
	// the calls and waits for their answers, does not hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	past := pastDeadlineCtx{ctx}
	if _, err := c.Call(past, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call: %v; want context.DeadlineExceeded", err)
	}
	if p, err := c.Send(past, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send: %v; want context.DeadlineExceeded", err)
		if err == nil {
			p.Release()
		}
	}
	if st, err := c.OpenStream(past, mEcho, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("OpenStream: %v; want context.DeadlineExceeded", err)
		if err == nil {
			st.CloseSend()
		}
	}
	// A call without a deadline after them reaches the peer first.
	answered := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, nil, nil)
		answered <- err
	}()
	if f, want := receive(t, "a request", got), fmt.Sprintf("kind %d timeout 0", wire.KindRequest); f != want {
		t.Errorf("the peer got %s first; want %s (the call without a deadline)", f, want)
	}
	// The test ends once the peer has answered: its answer, written
	// after the test ended, failed the ended test.
	if err := receive(t, "the answer to the call without a deadline", answered); err != nil {
		t.Errorf("the call without a deadline: %v", err)
	}
}
