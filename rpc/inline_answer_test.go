package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
)

// mFat answers its request repeated to 16 KiB.
const mFat = 92

func fat(_ context.Context, req, resp []byte) ([]byte, error) {
	for len(req) > 0 && len(resp) < 16<<10 {
		resp = append(resp, req...)
	}
	return resp, nil
}

// The answers of calls the read loop runs inline collect in its own
// buffer and move into the outbox at its flush point, or once they take
// ansMove bytes. Many small requests read together whose answers take
// far more than ansMove: every answer arrives whole and matched to its
// call.
func TestInlineAnswersLargeBatch(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mFat, fat)
	c := dial(t, addr)
	const callers, calls = 128, 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp []byte
			for i := range calls {
				req := []byte(fmt.Sprintf("caller %d call %d;", g, i))
				want, _ := fat(context.Background(), req, nil)
				out, err := c.Call(context.Background(), mFat, req, resp[:0])
				if err != nil || !bytes.Equal(out, want) {
					errs <- fmt.Errorf("caller %d call %d: %d bytes, err %v", g, i, len(out), err)
					return
				}
				resp = out
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// mTooBig answers 8 KiB.
const mTooBig = 91

// An inline answer above the maximum frame size is replaced by an empty
// 500 (the connection goes on), as a worker's answer is.
func TestInlineAnswerTooLarge(t *testing.T) {
	s, addr, _ := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(4<<10)))
	s.Handle(mTooBig, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, make([]byte, 8<<10)...), nil
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(64<<10)))
	out, err := c.Call(context.Background(), mTooBig, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusInternal || len(out) != 0 {
		t.Fatalf("got %d bytes, %v; want an empty 500", len(out), err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("next call: %q %v", out, err)
	}
}
