package rpc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// heldCtx is a ctx the test cancels itself and whose AfterFuncs
// (context.AfterFunc asks a ctx with an AfterFunc method to run them) start
// only when the test says (runHeld; context.AfterFunc's own function then
// starts the stream's on a goroutine): the moment between a ctx's end and its
// AfterFunc's run, which is otherwise a goroutine's start away, held open.
type heldCtx struct {
	done chan struct{}
	mu   sync.Mutex
	fs   []*heldFunc
}

type heldFunc struct {
	f       func()
	stopped bool
}

func newHeldCtx() *heldCtx { return &heldCtx{done: make(chan struct{})} }

func (h *heldCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (h *heldCtx) Done() <-chan struct{}       { return h.done }
func (h *heldCtx) Value(any) any               { return nil }

func (h *heldCtx) Err() error {
	select {
	case <-h.done:
		return context.Canceled
	default:
		return nil
	}
}

func (h *heldCtx) cancel() { close(h.done) }

func (h *heldCtx) AfterFunc(f func()) func() bool {
	hf := &heldFunc{f: f}
	h.mu.Lock()
	h.fs = append(h.fs, hf)
	h.mu.Unlock()
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		was := hf.stopped
		hf.stopped = true
		return !was
	}
}

// runHeld runs the AfterFuncs not stopped, once each.
func (h *heldCtx) runHeld() {
	h.mu.Lock()
	fs := h.fs
	h.fs = nil
	h.mu.Unlock()
	for _, hf := range fs {
		h.mu.Lock()
		run := !hf.stopped
		hf.stopped = true
		h.mu.Unlock()
		if run {
			hf.f()
		}
	}
}

// A client's Recv after the stream's ctx ended returns ctx's error, even
// with messages queued and before the AfterFunc that cancels the stream
// has run; the server learns of the cancel all the same. Recv used to
// return the queued messages until that goroutine ran.
func TestStreamRecvAfterCtxEndIsCtxError(t *testing.T) {
	s, addr, _ := testServer(t)
	const sHold = 90
	sent := make(chan struct{})
	handlerCtx := make(chan error, 1)
	s.HandleStream(sHold, func(ctx context.Context, init []byte, st *Stream) error {
		for range 3 {
			if err := st.Send([]byte("m")); err != nil {
				return err
			}
		}
		close(sent)
		<-ctx.Done()
		handlerCtx <- ctx.Err()
		return ctx.Err()
	})
	c := dial(t, addr)
	ctx := newHeldCtx()
	st, err := c.OpenStream(ctx, sHold, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	await(t, "the three messages to be queued", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.qBytes == 3*(1+4)
	})
	ctx.cancel()
	for i := range 2 {
		if m, err := st.Recv(nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv %d after the ctx ended: %q, %v; want context.Canceled", i, m, err)
		}
	}
	if err := st.Send([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send after the ctx ended: %v, want context.Canceled", err)
	}
	if err := receive(t, "the handler's ctx to end (the client's cancel)", handlerCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler's ctx: %v", err)
	}
	await(t, "the client's stream to leave its table", func() bool { return c.streams.open() == 0 })
	// The AfterFunc runs late: nothing more happens.
	ctx.runHeld()
	if m, err := st.Recv(nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv after the AfterFunc ran: %q, %v", m, err)
	}
	if _, err := c.Call(context.Background(), mEcho, []byte("ok"), nil); err != nil {
		t.Fatalf("a call after: %v", err)
	}
}

// A client's CloseSend after the stream's ctx ended returns ctx's error
// whether the AfterFunc that cancels the stream ran before it or not. It
// returned nil once that had run (the direction was done), ctx's error
// before.
func TestStreamCloseSendAfterCtxEndIsCtxError(t *testing.T) {
	s, addr, _ := testServer(t)
	const sHold = 90
	s.HandleStream(sHold, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done()
		return ctx.Err()
	})
	c := dial(t, addr)
	for _, ran := range []bool{true, false} {
		ctx := newHeldCtx()
		st, err := c.OpenStream(ctx, sHold, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx.cancel()
		if ran {
			ctx.runHeld() // context.AfterFunc then runs it on a goroutine
			await(t, "the cancel to take the stream out of the client's table", func() bool { return c.streams.open() == 0 })
		}
		if err := st.CloseSend(); !errors.Is(err, context.Canceled) {
			t.Fatalf("AfterFunc run before: %v; CloseSend: %v, want context.Canceled", ran, err)
		}
		ctx.runHeld()
		if err := st.CloseSend(); !errors.Is(err, context.Canceled) {
			t.Fatalf("AfterFunc run before: %v; second CloseSend: %v, want context.Canceled", ran, err)
		}
		await(t, "the stream to leave the client's table", func() bool { return c.streams.open() == 0 })
	}
}
