package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests of this file: a panic in an observer or an interceptor, on
// either side, ends neither the process nor anything but what it
// belongs to, and leaves no lock, slot or stream held.

// callPanics calls f, which must panic with want; it fails the test
// otherwise.
func callPanics(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || fmt.Sprint(r) != want {
			t.Fatalf("panic %v, want %q", r, want)
		}
	}()
	f()
}

// defaultLog sends slog.Default() (where a client logs an observer's
// panic) to the returned buffer until the test ends.
func defaultLog(t *testing.T) *syncBuf {
	buf := &syncBuf{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

// A unary observer that panics, on the server and on the client: every
// call is still answered and returned as if it had not, on both the
// read loop's inline path and concurrently, and the server logs it.
func TestObserverPanicRecovered(t *testing.T) {
	var srvSeen, cliSeen atomic.Int64
	clientLog := defaultLog(t)
	_, addr, logs := testServer(t, WithObserver(func(ev CallEvent) {
		srvSeen.Add(1)
		panic("server observer")
	}))
	c := dial(t, addr, WithObserver(func(ev CallEvent) {
		cliSeen.Add(1)
		panic("client observer")
	}))
	const callers, calls = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				req := []byte(fmt.Sprintf("g%d-%d", g, i))
				out, err := c.Call(context.Background(), mEcho, req, nil)
				if err != nil || string(out) != string(req) {
					errs <- fmt.Errorf("call %s: %q %v", req, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := cliSeen.Load(); n != callers*calls {
		t.Errorf("client observer ran %d times, want %d", n, callers*calls)
	}
	await(t, "the server observer saw every call", func() bool { return srvSeen.Load() == callers*calls })
	if n := idleSlots(t, c); n != len(*c.table.Load()) {
		t.Errorf("%d of %d slots idle after the calls", n, len(*c.table.Load()))
	}
	if l := logs.String(); !strings.Contains(l, "observer panic") || !strings.Contains(l, "server observer") {
		t.Errorf("server log lacks the observer's panic: %.300s", l)
	}
	if l := clientLog.String(); !strings.Contains(l, "observer panic") || !strings.Contains(l, "client observer") {
		t.Errorf("client log lacks the observer's panic: %.300s", l)
	}
}

// A stream observer that panics at every start and end, on the server
// and on the client: the streams work end to end, the next stream opens,
// and closing the client does not wait for a lock the observer left held
// (the client reports a stream's start under the stream's lock).
func TestStreamObserverPanicRecovered(t *testing.T) {
	var srvSeen, cliSeen atomic.Int64
	clientLog := defaultLog(t)
	_, addr, logs := streamServer(t, WithStreamObserver(func(ev StreamEvent) {
		srvSeen.Add(1)
		panic("server stream observer")
	}))
	// Not dial: its cleanup closes the client, which would wait for ever
	// for a lock a panic left held; this test closes it itself, bounded.
	c, err := Dial(context.Background(), "tcp", addr, WithStreamObserver(func(ev StreamEvent) {
		cliSeen.Add(1)
		panic("client stream observer")
	}))
	if err != nil {
		t.Fatal(err)
	}
	open := func() (st *Stream, err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("OpenStream panicked: %v", r)
			}
		}()
		return c.OpenStream(context.Background(), sEcho, nil)
	}
	const streams = 3
	for i := range streams {
		st, err := open()
		if err != nil {
			t.Fatalf("stream %d: open: %v", i, err)
		}
		echoed := make(chan error, 1)
		go func() {
			for k := range 10 {
				msg := u32msg(uint32(k))
				if err := st.Send(msg); err != nil {
					echoed <- err
					return
				}
				out, err := st.Recv(nil)
				if err != nil || string(out) != string(msg) {
					echoed <- fmt.Errorf("echo %d: %x %v", k, out, err)
					return
				}
			}
			if err := st.CloseSend(); err != nil {
				echoed <- err
				return
			}
			_, err := st.Recv(nil)
			if err != io.EOF {
				echoed <- fmt.Errorf("end: %v, want io.EOF", err)
				return
			}
			echoed <- nil
		}()
		select {
		case err := <-echoed:
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("stream %d: no echo within 30 s (a lock left held?)", i)
		}
	}
	await(t, "every stream's start and end seen on both sides", func() bool {
		return cliSeen.Load() == 2*streams && srvSeen.Load() == 2*streams
	})
	// A stream left open as the client closes: its end is reported (and
	// panics) from Close.
	if _, err := open(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s (a stream lock left held?)")
	}
	if l := logs.String(); !strings.Contains(l, "stream observer panic") || !strings.Contains(l, "server stream observer") {
		t.Errorf("server log lacks the stream observer's panic: %.300s", l)
	}
	if l := clientLog.String(); !strings.Contains(l, "stream observer panic") || !strings.Contains(l, "client stream observer") {
		t.Errorf("client log lacks the stream observer's panic: %.300s", l)
	}
}

// A client interceptor that panics, before or after the call it makes:
// the panic reaches the caller (as in gRPC-go), and the client keeps no
// slot of it and goes on serving calls, this caller's and others'.
func TestClientInterceptorPanicLeavesClientUsable(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr, WithClientInterceptors(func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		switch string(req) {
		case "before":
			panic("before invoke")
		case "after":
			out, err := invoke(ctx, method, req, resp)
			if err != nil || string(out) != "after" {
				return out, err
			}
			panic("after invoke")
		}
		return invoke(ctx, method, req, resp)
	}))
	slots := func() int { return len(*c.table.Load()) }
	for range 100 {
		callPanics(t, "before invoke", func() { c.Call(context.Background(), mEcho, []byte("before"), nil) })
		callPanics(t, "after invoke", func() { c.Call(context.Background(), mEcho, []byte("after"), nil) })
		if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
			t.Fatalf("call after the panics: %q %v", out, err)
		}
	}
	if n := idleSlots(t, c); n != slots() {
		t.Fatalf("%d of %d slots idle after the panics", n, slots())
	}
}

// A client stream interceptor that panics after its open returned a
// stream: the panic reaches the caller of OpenStream, and the stream,
// which the caller never got, is canceled rather than left open (it held
// one of the connection's streams and its server handler for ever).
func TestStreamClientInterceptorPanicCancelsStream(t *testing.T) {
	s, addr, _ := streamServer(t)
	ended := make(chan error, 10)
	s.HandleStream(sBlock+100, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done()
		ended <- ctx.Err()
		return nil
	})
	var derive atomic.Bool
	c := dial(t, addr, WithMaxStreams(1), WithStreamClientInterceptors(
		func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
			if derive.Load() {
				// The open made under a ctx derived from the caller's.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			st, err := open(ctx, method, init)
			if err != nil {
				return nil, err
			}
			if method == sBlock+100 {
				panic("after open")
			}
			return st, nil
		}))
	for _, d := range []bool{false, true} {
		derive.Store(d)
		callPanics(t, "after open", func() { c.OpenStream(context.Background(), sBlock+100, nil) })
		if n := c.Streams(); n != 0 {
			t.Fatalf("derived ctx %v: %d streams open after the interceptor panicked, want 0", d, n)
		}
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("derived ctx %v: the handler's ctx ended with %v", d, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("derived ctx %v: the server handler of the lost stream still runs after 30 s", d)
		}
	}
	// The connection's one stream is free: a stream opens and works.
	derive.Store(false)
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if out, err := st.Recv(nil); err != nil || string(out) != "hi" {
		t.Fatalf("echo: %q %v", out, err)
	}
	st.CloseSend()
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// A client tap (installed by a stream interceptor) that panics on one
// message: the panic reaches the caller of Send or Recv, and the stream
// goes on (no lock of it held, nothing of the message sent).
func TestClientTapPanicLeavesStreamUsable(t *testing.T) {
	_, addr, _ := streamServer(t)
	tap := StreamTap{
		Send: func(msg []byte) error {
			if string(msg) == "send-boom" {
				panic("tap send")
			}
			return nil
		},
		Recv: func(msg []byte) error {
			if string(msg) == "recv-boom" {
				panic("tap recv")
			}
			return nil
		},
	}
	c := dial(t, addr, WithStreamClientInterceptors(func(ctx context.Context, m uint32, init []byte, open Streamer) (*Stream, error) {
		st, err := open(ctx, m, init)
		if err == nil {
			st.Tap(tap)
		}
		return st, err
	}))
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	echo := func(msg string) {
		t.Helper()
		if err := st.Send([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if out, err := st.Recv(nil); err != nil || string(out) != msg {
			t.Fatalf("echo %q: %q %v", msg, out, err)
		}
	}
	callPanics(t, "tap send", func() { st.Send([]byte("send-boom")) })
	echo("after the send panic")
	if err := st.Send([]byte("recv-boom")); err != nil {
		t.Fatal(err)
	}
	callPanics(t, "tap recv", func() { st.Recv(nil) })
	echo("after the recv panic")
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}
