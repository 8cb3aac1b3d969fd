package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

type baseKey struct{}

// A stream handler's ctx (streamCtx, the stream itself) behaves as the
// context package's did: the base context's values, the open's deadline,
// context.Cause, ctxs derived from it ended with it (registered through
// its AfterFunc, no goroutine), and a ctx kept past the handler found
// ended.
func TestStreamHandlerCtx(t *testing.T) {
	const sCtx = 79
	base := context.WithValue(context.Background(), baseKey{}, "base")
	s, addr, _ := testServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	type seen struct {
		value          any
		dl             bool
		err, cause     error
		derived        error
		derivedCause   error
		kept           context.Context
		streamFromSelf bool
	}
	got := make(chan seen, 1)
	s.HandleStream(sCtx, func(ctx context.Context, init []byte, st *Stream) error {
		d, cancel := context.WithCancel(ctx)
		defer cancel()
		var v seen
		v.value = ctx.Value(baseKey{})
		_, v.dl = ctx.Deadline()
		v.streamFromSelf = streamFrom(d) == st
		if err := st.Send(nil); err != nil {
			return err
		}
		<-ctx.Done() // the client's cancel, or the deadline
		<-d.Done()
		v.err, v.cause = ctx.Err(), context.Cause(ctx)
		v.derived, v.derivedCause = d.Err(), context.Cause(d)
		v.kept = ctx
		got <- v
		return ctx.Err()
	})
	c := dial(t, addr)
	for _, deadline := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		want := context.Canceled
		if deadline {
			want = context.DeadlineExceeded
		}
		if deadline {
			// A peer that does not cancel at its deadline (a client
			// would, and its cancel would come first).
			rc := rawDial(t, addr)
			rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sCtx, PromiseID: 1, Timeout: 50_000}))
		} else {
			st, err := c.OpenStream(ctx, sCtx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(nil); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		var v seen
		select {
		case v = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the handler's ctx did not end")
		}
		cancel()
		if v.value != "base" || v.dl != deadline || !v.streamFromSelf {
			t.Errorf("deadline %v: value %v, has deadline %v, streamFrom of a derived ctx is the stream: %v", deadline, v.value, v.dl, v.streamFromSelf)
		}
		if v.err != want || v.cause != want || !errors.Is(v.derived, want) || v.derivedCause != want {
			t.Errorf("deadline %v: Err %v, Cause %v, derived %v (cause %v); want %v", deadline, v.err, v.cause, v.derived, v.derivedCause, want)
		}
		await(t, "the handler to end", func() bool { return s.streamsOpen() == 0 })
		select {
		case <-v.kept.Done():
		default:
			t.Errorf("deadline %v: a ctx kept past its handler is not done", deadline)
		}
	}
}

// A handler's ctx whose Done nobody asked for while it ran (its channel
// is made at the first Done) is found done by a goroutine that asks
// after the handler returned.
func TestStreamHandlerCtxDoneAskedLate(t *testing.T) {
	const sKeep = 81
	s, addr, _ := testServer(t)
	kept := make(chan context.Context, 1)
	s.HandleStream(sKeep, func(ctx context.Context, init []byte, st *Stream) error {
		kept <- ctx
		return nil
	})
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sKeep, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("Recv: %v, want io.EOF", err)
	}
	ctx := <-kept
	await(t, "the handler to end", func() bool { return s.streamsOpen() == 0 })
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the ctx of a handler that returned is not done")
	}
	if err := ctx.Err(); err != context.Canceled {
		t.Fatalf("Err: %v, want context.Canceled", err)
	}
}

// A handler's ctx printed with fmt (a logged ctx) gives a name, as the
// context package's ctxs do, not the Stream's fields, which fmt would
// read while the read loop writes them (a data race under -race).
func TestStreamHandlerCtxString(t *testing.T) {
	const sStr = 83
	s, addr, _ := testServer(t)
	got := make(chan []string, 1)
	s.HandleStream(sStr, func(ctx context.Context, init []byte, st *Stream) error {
		var names []string
		var buf []byte
		for {
			names = append(names[:0], fmt.Sprint(ctx), fmt.Sprint(context.WithValue(ctx, baseKey{}, 1)))
			var err error
			if buf, err = st.Recv(buf[:0]); err != nil {
				break
			}
		}
		got <- names
		return nil
	})
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := st.Send([]byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	names := <-got
	want := []string{"rpc.Stream(method 83, stream 1)", "rpc.Stream(method 83, stream 1).WithValue(rpc.baseKey, int)"}
	if names[0] != want[0] || names[1] != want[1] {
		t.Fatalf("fmt of a handler's ctx: %q, want %q", names, want)
	}
}

// A handler's ctx ended by the base context's end reports the base
// context's cause (context.WithCancelCause's cancel), as a unary
// handler's ctx does and as the stream's did when it was derived from
// the connection's context; so do ctxs derived from it. One whose own
// end came first (the client's cancel) reports its own error.
func TestStreamHandlerCtxBaseCause(t *testing.T) {
	const sCause = 84
	reason := errors.New("base gone")
	base, cancelBase := context.WithCancelCause(context.Background())
	s, addr, _ := testServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	got := make(chan [3]error, 2)
	s.HandleStream(sCause, func(ctx context.Context, init []byte, st *Stream) error {
		d, cancel := context.WithCancel(ctx)
		defer cancel()
		if len(init) == 0 {
			if err := st.Send(nil); err != nil {
				return err
			}
		}
		<-ctx.Done()
		<-d.Done()
		got <- [3]error{ctx.Err(), context.Cause(ctx), context.Cause(d)}
		return nil
	})
	c := dial(t, addr)
	cctx, ccancel := context.WithCancel(context.Background())
	canceled, err := c.OpenStream(cctx, sCause, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := canceled.Recv(nil); err != nil {
		t.Fatal(err)
	}
	ccancel()
	if e := <-got; e != [3]error{context.Canceled, context.Canceled, context.Canceled} {
		t.Errorf("canceled by the client: Err, Cause, derived Cause = %v", e)
	}
	st, err := c.OpenStream(context.Background(), sCause, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
	cancelBase(reason)
	if e := <-got; e != [3]error{context.Canceled, reason, reason} {
		t.Errorf("ended by the base context: Err, Cause, derived Cause = %v, want canceled, %v, %v", e, reason, reason)
	}
}
