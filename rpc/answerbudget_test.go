package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mReserve's handler reserves its answer's size, counts that it got it,
// and answers that many bytes (1 MiB by default; the request's first
// byte, when there is one, picks a failure instead).
const mReserve = 62

// reserveHandler is mReserve's handler; it counts the calls that got
// their budget in got.
func reserveHandler(got *atomic.Int64, size int) Handler {
	answer := bytes.Repeat([]byte{9}, size)
	return func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := ReserveAnswer(ctx, size); err != nil {
			return resp, err
		}
		got.Add(1)
		switch {
		case len(req) == 0:
			return append(resp, answer...), nil
		case req[0] == 'e':
			return resp, Errorf(StatusBadRequest, "refused after reserving")
		default:
			panic("after reserving")
		}
	}
}

// nonReader opens a raw connection to l, with a small receive buffer, and
// pipelines n calls of method on it without reading a byte of their
// answers.
func nonReader(t *testing.T, addr string, method uint32, n int) *rawConn {
	t.Helper()
	rc := rawDial(t, addr)
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	var frames []byte
	for i := range n {
		frames = append(frames, frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: uint32(i + 1)}))...)
	}
	if _, err := rc.Write(frames); err != nil {
		t.Fatal(err)
	}
	return rc
}

// A peer that pipelines calls whose handlers reserve their answers and
// never reads holds its connection's budget, one answer: its other calls
// wait for budget, holding none, instead of building their answers. A
// call on another connection gets the server's budget meanwhile. When
// the peer goes, its reservation and its waiting calls end.
func TestReserveAnswerConnBudget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	// Pipelining makes every call run on a worker: the read loop reads
	// them all, none of them running (and then writing) on it.
	s, _ := testServerOn(t, smallSendBuffers{l}, WithAnswerBudget(size, 4*size), WithPipelining(0))
	var got atomic.Int64
	s.Handle(mReserve, reserveHandler(&got, size))
	rc := nonReader(t, l.Addr().String(), mReserve, 8)
	await(t, "one call with budget, seven waiting", func() bool {
		st := s.Stats()
		return got.Load() == 1 && st.AnswerWaits == 7
	})
	if st := s.Stats(); st.AnswerBytes != size {
		t.Fatalf("%d bytes reserved, want %d", st.AnswerBytes, size)
	}

	c := dial(t, l.Addr().String())
	out, err := c.Call(context.Background(), mReserve, nil, nil)
	if err != nil || len(out) != size {
		t.Fatalf("a call on another connection: %d bytes, %v", len(out), err)
	}
	if got.Load() != 2 {
		t.Fatalf("%d calls got budget, want 2 (the peer's first and the other connection's)", got.Load())
	}

	rc.Close()
	await(t, "the peer's reservation and waiting calls to end", func() bool {
		st := s.Stats()
		return st.AnswerBytes == 0 && st.AnswerWaits == 0
	})
}

// The server's budget is shared by its connections: a call that finds it
// taken waits (its deadline ends the wait with 504), and goes on once the
// answer holding it has left.
func TestReserveAnswerServerBudget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	s, _ := testServerOn(t, smallSendBuffers{l}, WithAnswerBudget(size, size), WithPipelining(0))
	var got atomic.Int64
	s.Handle(mReserve, reserveHandler(&got, size))
	rc := nonReader(t, l.Addr().String(), mReserve, 1)
	await(t, "the peer's call to get the budget", func() bool { return got.Load() == 1 })

	c := dial(t, l.Addr().String())
	// A deadline ends the wait: 2 s is for the call to reach the server
	// and wait there first on a busy machine (if it came after its
	// deadline, the test would fail waiting for it to wait).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	timedOut := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mReserve, nil, nil)
		timedOut <- err
	}()
	await(t, "the call with a deadline to wait for the server's budget", func() bool { return s.Stats().AnswerWaits == 1 })
	// The client's ctx, or the server's 504 for the same deadline,
	// whichever comes first.
	if err := receive(t, "the call with a deadline", timedOut); !errors.Is(err, context.DeadlineExceeded) && Code(err) != StatusDeadlineExceeded {
		t.Fatalf("a call whose deadline passed while it waited for budget: %v, want its ctx's error or 504", err)
	}
	await(t, "the server's wait to end at the deadline", func() bool { return s.Stats().AnswerWaits == 0 })

	done := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mReserve, nil, nil)
		if err == nil && len(out) != size {
			err = io.ErrShortBuffer
		}
		done <- err
	}()
	await(t, "the other connection's call to wait for the server's budget", func() bool { return s.Stats().AnswerWaits == 1 })
	rc.Close()
	if err := receive(t, "the waiting call's answer", done); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.AnswerBytes != 0 || st.AnswerWaits != 0 || got.Load() != 2 {
		t.Fatalf("after the calls: %d bytes reserved, %d waiting, %d got budget", st.AnswerBytes, st.AnswerWaits, got.Load())
	}
}

// A call's reservation goes back however its handler ends: a result, an
// error, a panic. A reservation above the budget counts as the budget
// (it does not wait for ever), and a second one of the same call adds
// nothing beyond it. Any ctx but a unary handler's is refused.
func TestReserveAnswerReleasedAndLimits(t *testing.T) {
	const budget = 64 << 10
	s, addr, _ := testServer(t, WithAnswerBudget(budget, 0))
	var got atomic.Int64
	s.Handle(mReserve, reserveHandler(&got, budget))
	const mTwice = 63
	held := make(chan int64, 1)
	s.Handle(mTwice, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		for range 2 {
			if err := ReserveAnswer(ctx, 10*budget); err != nil {
				return resp, err
			}
		}
		if err := ReserveAnswer(ctx, 0); err != nil {
			return resp, err
		}
		held <- s.Stats().AnswerBytes
		return resp, nil
	})
	const sOpen = 64
	streamErr := make(chan error, 1)
	s.HandleStream(sOpen, func(ctx context.Context, init []byte, st *Stream) error {
		streamErr <- ReserveAnswer(ctx, 1)
		return nil
	})
	c := dial(t, addr)
	ctx := context.Background()
	if out, err := c.Call(ctx, mReserve, nil, nil); err != nil || len(out) != budget {
		t.Fatalf("result: %d bytes, %v", len(out), err)
	}
	if _, err := c.Call(ctx, mReserve, []byte("e"), nil); Code(err) != StatusBadRequest {
		t.Fatalf("error: %v, want 400", err)
	}
	if _, err := c.Call(ctx, mReserve, []byte("p"), nil); Code(err) != StatusInternal {
		t.Fatalf("panic: %v, want 500", err)
	}
	if got.Load() != 3 {
		t.Fatalf("%d calls got budget, want 3", got.Load())
	}
	if st := s.Stats(); st.AnswerBytes != 0 || st.AnswerWaits != 0 {
		t.Fatalf("after the calls: %d bytes reserved, %d waiting", st.AnswerBytes, st.AnswerWaits)
	}

	if _, err := c.Call(ctx, mTwice, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := <-held; n != budget {
		t.Fatalf("two reservations of 10 budgets held %d bytes, want the budget (%d)", n, budget)
	}
	if st := s.Stats(); st.AnswerBytes != 0 {
		t.Fatalf("after the call: %d bytes reserved", st.AnswerBytes)
	}

	if err := ReserveAnswer(ctx, 1); !errors.Is(err, ErrNoAnswerBudget) {
		t.Fatalf("ReserveAnswer(context.Background()): %v, want ErrNoAnswerBudget", err)
	}

	// A goroutine the handler left behind reserves after the call is
	// over: refused, nothing held (a reservation then was given back by
	// no one, and the job could carry it to a connection with no budget,
	// whose finish would then dereference nil).
	const mLeft = 65
	leftCtx := make(chan context.Context, 1)
	s.Handle(mLeft, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		leftCtx <- ctx
		return resp, nil
	})
	if _, err := c.Call(ctx, mLeft, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := ReserveAnswer(<-leftCtx, 1); !errors.Is(err, ErrNoAnswerBudget) {
		t.Fatalf("ReserveAnswer after the handler returned: %v, want ErrNoAnswerBudget", err)
	}
	if st := s.Stats(); st.AnswerBytes != 0 {
		t.Fatalf("after a reservation past the call: %d bytes reserved", st.AnswerBytes)
	}
	st, err := c.OpenStream(ctx, sOpen, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := receive(t, "the stream handler's ReserveAnswer", streamErr); !errors.Is(err, ErrNoAnswerBudget) {
		t.Fatalf("ReserveAnswer with a stream handler's ctx: %v, want ErrNoAnswerBudget", err)
	}
	st.CloseSend()
}
