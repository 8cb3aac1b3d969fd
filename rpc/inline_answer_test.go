package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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

// A handler's answer above the maximum frame size is answered 500, inline
// or on a worker (WithPipelining runs calls on workers), and the
// connection goes on. The 500 used to be empty, telling the client
// nothing, and the server logged nothing: its text and the log now say
// the answer was too large for a frame, with the sizes (under
// WithHideErrors the client gets "internal error", the log the same).
func TestInlineAnswerTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
		want string
	}{
		{"inline", nil, "rpc: answer too large for a frame (len:8229 max:4096): raise the maximum frame size"},
		{"worker", []ServerOption{WithPipelining(0)}, "rpc: answer too large for a frame (len:8229 max:4096)"},
		{"hidden", []ServerOption{WithHideErrors()}, internalErrorText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, logs := testServer(t, append(tc.opts, WithFrameOptions(frame.WithMaxFrameSize(4<<10)))...)
			s.Handle(mTooBig, func(_ context.Context, req, resp []byte) ([]byte, error) {
				return append(resp, make([]byte, 8<<10)...), nil
			})
			c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(64<<10)))
			out, err := c.Call(context.Background(), mTooBig, nil, nil)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != StatusInternal || !strings.HasPrefix(se.Message, tc.want) {
				t.Fatalf("got %d bytes, %v; want a 500 saying %q", len(out), err, tc.want)
			}
			if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
				t.Fatalf("next call: %q %v", out, err)
			}
			if l := logs.String(); !strings.Contains(l, "answer too large for a frame (len:8229 max:4096)") || !strings.Contains(l, fmt.Sprintf("method=%d", mTooBig)) {
				t.Fatalf("log: %q", l)
			}
		})
	}
}

// inlineAnswer's few-store path writes what inlineAnswerAny, the path for
// every answer, writes: the two are fed the same random answers (with and
// without metadata, some above the frame limit, batches begun and not;
// an answer with metadata goes to inlineAnswerAny, as its callers send it)
// and must leave the same bytes and counters.
func TestInlineAnswerFastMatchesAny(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 14))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var fast, any serverConn
	for _, c := range []*serverConn{&fast, &any} {
		c.out.max = 300
	}
	for i := range 20000 {
		if i%50 == 0 || len(fast.ansB) > 32<<10 {
			// A new batch: the next answer finds no buffer.
			for _, c := range []*serverConn{&fast, &any} {
				if c.ans != nil {
					c.ans.B = c.ansB[:0]
					outBufs.Put(c.ans)
				}
				c.ans, c.ansB = nil, nil
			}
		}
		status := []uint32{StatusOK, StatusOK, StatusBadRequest, StatusNotFound, StatusInternal, StatusUnavailable, rng.Uint32()}[rng.IntN(7)]
		pid := rng.Uint32()
		body := rnd(rng.IntN(320))
		if rng.IntN(4) == 0 {
			body = nil
		}
		var md []byte
		if rng.IntN(5) == 0 {
			md = rnd(1 + rng.IntN(40))
		}
		if len(md) != 0 {
			fast.inlineAnswerAny(status, pid, body, md) // as inlineAnswer's callers do
		} else {
			fast.inlineAnswer(status, pid, body)
		}
		any.inlineAnswerAny(status, pid, body, md)
		if !bytes.Equal(fast.ansB, any.ansB) || fast.local != any.local {
			t.Fatalf("answer %d (status %d, body %d, metadata %d): the paths differ:\nfast %x %+v\n any %x %+v",
				i, status, len(body), len(md), fast.ansB, fast.local, any.ansB, any.local)
		}
	}
}
