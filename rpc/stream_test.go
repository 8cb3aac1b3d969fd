package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// Stream methods of the tests.
const (
	sCount  = 10 // init: u32 n; sends n messages u32 0..n-1
	sSum    = 11 // receives u32 messages until EOF, sends their sum
	sEcho   = 12 // echoes every message until EOF
	sFail   = 13 // sends one message, then returns an error
	sPanic  = 14 // sends one message, then panics
	sBlock  = 15 // sends init back, then waits for ctx to end
	sStatus = 16 // returns Errorf(418, "teapot")
)

func u32msg(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func streamServer(t testing.TB, opts ...ServerOption) (*Server, string, *syncBuf) {
	t.Helper()
	s, addr, logs := testServer(t, opts...)
	registerStreamHandlers(s)
	return s, addr, logs
}

// registerStreamHandlers registers the tests' stream methods on s.
func registerStreamHandlers(s *Server) {
	s.HandleStream(sCount, func(ctx context.Context, init []byte, st *Stream) error {
		n := binary.LittleEndian.Uint32(init)
		var b [4]byte
		for i := range n {
			binary.LittleEndian.PutUint32(b[:], i)
			if err := st.Send(b[:]); err != nil {
				return err
			}
		}
		return nil
	})
	s.HandleStream(sSum, func(ctx context.Context, init []byte, st *Stream) error {
		var sum uint32
		var buf []byte
		for {
			m, err := st.Recv(buf[:0])
			if err == io.EOF {
				return st.Send(u32msg(sum))
			}
			if err != nil {
				return err
			}
			sum += binary.LittleEndian.Uint32(m)
			buf = m
		}
	})
	s.HandleStream(sEcho, func(ctx context.Context, init []byte, st *Stream) error {
		var buf []byte
		for {
			m, err := st.Recv(buf[:0])
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := st.Send(m); err != nil {
				return err
			}
			buf = m
		}
	})
	s.HandleStream(sFail, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send([]byte("one"))
		return errors.New("it broke")
	})
	s.HandleStream(sPanic, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send([]byte("one"))
		panic("boom")
	})
	s.HandleStream(sBlock, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send(init)
		<-ctx.Done()
		return ctx.Err()
	})
	s.HandleStream(sStatus, func(ctx context.Context, init []byte, st *Stream) error {
		return Errorf(418, "teapot")
	})
}

// recvAll reads st to its end and returns the messages and the end.
func recvAll(st *Stream) ([][]byte, error) {
	var out [][]byte
	for {
		m, err := st.Recv(nil)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func TestStreamServerStream(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sCount, u32msg(1000))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := recvAll(st)
	if err != io.EOF {
		t.Fatalf("end %v, want io.EOF", err)
	}
	if len(msgs) != 1000 {
		t.Fatalf("%d messages, want 1000", len(msgs))
	}
	for i, m := range msgs {
		if binary.LittleEndian.Uint32(m) != uint32(i) {
			t.Fatalf("message %d is %x", i, m)
		}
	}
	if err := st.Send([]byte("x")); err != io.EOF {
		t.Fatalf("Send after the server's end: %v, want io.EOF", err)
	}
	if n := c.streams.open(); n != 0 {
		t.Fatalf("%d streams left open on the client", n)
	}
}

func TestStreamClientStream(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sSum, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(0)
	for i := range uint32(500) {
		want += i
		if err := st.Send(u32msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(u32msg(1)); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Send after CloseSend: %v, want ErrStreamClosed", err)
	}
	msgs, err := recvAll(st)
	if err != io.EOF || len(msgs) != 1 || binary.LittleEndian.Uint32(msgs[0]) != want {
		t.Fatalf("got %x, %v; want the sum %d then io.EOF", msgs, err, want)
	}
}

func TestStreamBidi(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		msg := bytes.Repeat([]byte{byte(i)}, i*37)
		if err := st.Send(msg); err != nil {
			t.Fatal(err)
		}
		got, err := st.Recv(nil)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo %d: %v, %d bytes", i, err, len(got))
		}
	}
	st.CloseSend()
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("end %v", err)
	}
}

func TestStreamErrorEnds(t *testing.T) {
	_, addr, logs := streamServer(t)
	c := dial(t, addr)
	for _, tc := range []struct {
		method uint32
		code   uint32
		text   string
		first  string
	}{
		{sFail, StatusInternal, "it broke", "one"},
		{sPanic, StatusInternal, streamPanicText, "one"},
		{sStatus, 418, "teapot", ""},
		{999, StatusNotFound, streamNoHandler, ""},
	} {
		st, err := c.OpenStream(context.Background(), tc.method, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := recvAll(st)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != tc.code || se.Message != tc.text {
			t.Fatalf("method %d: end %v, want status %d %q", tc.method, err, tc.code, tc.text)
		}
		if tc.first != "" && (len(msgs) != 1 || string(msgs[0]) != tc.first) {
			t.Fatalf("method %d: messages %q, want the one sent before the error", tc.method, msgs)
		}
		if err := st.Send(nil); !errors.As(err, &se) {
			t.Fatalf("Send after an error end: %v", err)
		}
	}
	if !strings.Contains(logs.String(), "stream handler panic") {
		t.Fatalf("the panic was not logged: %s", logs)
	}
	// The connection and the server go on.
	if out, err := c.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		t.Fatalf("unary after the panic: %q %v", out, err)
	}
}

// A client's ctx ending cancels the stream on both sides.
func TestStreamCancel(t *testing.T) {
	s, addr, _ := streamServer(t)
	ended := make(chan error, 1)
	sendErr := make(chan error, 1)
	s.HandleStream(sBlock, func(ctx context.Context, init []byte, st *Stream) error {
		st.Send(init)
		<-ctx.Done()
		_, err := st.Recv(nil)
		ended <- err
		sendErr <- st.Send([]byte("late"))
		return nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.OpenStream(ctx, sBlock, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "hello" {
		t.Fatalf("%q %v", m, err)
	}
	cancel()
	if _, err := st.Recv(nil); err != context.Canceled {
		t.Fatalf("Recv after cancel: %v", err)
	}
	if err := st.Send(nil); err != context.Canceled {
		t.Fatalf("Send after cancel: %v", err)
	}
	select {
	case err := <-ended:
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusCanceled {
			t.Fatalf("handler's Recv after the cancel: %v", err)
		}
		if err := <-sendErr; !errors.As(err, &se) || se.Code != StatusCanceled {
			t.Fatalf("handler's Send after the cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: the handler's ctx was not canceled")
	}
	await(t, "the server's stream to go", func() bool { return s.Stats().Active == 1 && c.streams.open() == 0 })
}

// Messages that arrived before a clean end are all delivered, even when
// the connection closes right after.
func TestStreamNothingLostAtClose(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sCount, u32msg(5000))
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the end is in (the window lets the server run ahead
	// only by 64 KiB, so read some first).
	var got int
	for got < 4000 {
		if _, err := st.Recv(nil); err != nil {
			t.Fatal(err)
		}
		got++
	}
	await(t, "the end", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.rdone
	})
	c.Close()
	msgs, err := recvAll(st)
	if err != io.EOF || got+len(msgs) != 5000 {
		t.Fatalf("after Close: %d more messages and %v; want %d and io.EOF", len(msgs), err, 5000-got)
	}
}

func TestStreamMaxStreams(t *testing.T) {
	s, addr, _ := streamServer(t, WithMaxStreams(3))
	_ = s
	c := dial(t, addr, WithMaxStreams(100))
	var open []*Stream
	for i := range 3 {
		st, err := c.OpenStream(context.Background(), sBlock, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(nil); err != nil {
			t.Fatal(err)
		}
		open = append(open, st)
	}
	st, err := c.OpenStream(context.Background(), sBlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv(nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusUnavailable || se.Message != streamTooMany {
		t.Fatalf("open beyond the limit: %v", err)
	}
	// Client-side limit.
	c2 := dial(t, addr, WithMaxStreams(1))
	if _, err := c2.OpenStream(context.Background(), sBlock, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.OpenStream(context.Background(), sBlock, nil); err != ErrTooManyStreams {
		t.Fatalf("second open: %v, want ErrTooManyStreams", err)
	}
	// Its text said only "too many open streams", where the usual cause
	// is streams given up without a cancel, which stay open.
	if msg := ErrTooManyStreams.Error(); !strings.Contains(msg, "WithMaxStreams") || !strings.Contains(msg, "its ctx is canceled") {
		t.Fatalf("ErrTooManyStreams says %q: not the limit nor how streams end", msg)
	}
	_ = open
}

// Shutdown lets a stream that ends within the grace finish, then ends the
// others with 503.
//
// The grace is an hour, and the test makes it pass once the first stream
// has finished, by calling what Shutdown calls at each tick with a time
// an hour on: with a grace of 200 ms, a loaded machine took longer than
// that from Shutdown's start to the first stream's end, which the grace
// then cut with 503.
func TestStreamShutdown(t *testing.T) {
	const grace = time.Hour
	s, addr, _ := streamServer(t, WithShutdownGrace(grace))
	release := make(chan struct{})
	s.HandleStream(sSum, func(ctx context.Context, init []byte, st *Stream) error {
		<-release
		return st.Send([]byte("finished"))
	})
	c := dial(t, addr)
	quick, err := c.OpenStream(context.Background(), sSum, nil)
	if err != nil {
		t.Fatal(err)
	}
	stuck, err := c.OpenStream(context.Background(), sBlock, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stuck.Recv(nil); err != nil {
		t.Fatal(err)
	}
	await(t, "both handlers", func() bool { return s.streamsOpen() == 2 })
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	await(t, "the go-away", c.Draining)
	close(release)
	msgs, err := recvAll(quick)
	if err != io.EOF || len(msgs) != 1 || string(msgs[0]) != "finished" {
		t.Fatalf("stream ending within the grace: %q %v", msgs, err)
	}
	// The grace passes. (It begins at Shutdown's first look at the
	// streams: made here, should Shutdown not have looked yet.)
	sc := serverConnOf(t, s)
	sc.shutdownStreams(monoNow(), grace)
	sc.shutdownStreams(monoNow()+int64(grace), grace)
	_, err = stuck.Recv(nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusUnavailable {
		t.Fatalf("stream past the grace: %v, want a 503 end", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: Shutdown did not return")
	}
	if _, err := c.OpenStream(context.Background(), sSum, nil); err != ErrGoAway && !errors.Is(err, ErrClosed) {
		t.Fatalf("open after go-away: %v", err)
	}
}

// Shutdown's grace for open streams is measured on the monotonic clock
// (monoNow values), not between wall clock readings (time.Time's
// UnixNano), which a step of the system clock during Shutdown moved: a
// step back kept the streams open past the grace, one forward cut them
// at once. The grace ends exactly grace after Shutdown first found the
// streams open, by that clock.
func TestStreamShutdownGraceMonotonic(t *testing.T) {
	s, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sBlock, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
	sc := serverConnOf(t, s)
	const grace = time.Hour
	t0 := monoNow()
	sc.shutdownStreams(t0, grace)
	sc.shutdownStreams(t0+int64(grace)-1, grace)
	if n := s.streamsOpen(); n != 1 {
		t.Fatalf("%d streams open within the grace, want 1", n)
	}
	sc.shutdownStreams(t0+int64(grace), grace)
	_, err = st.Recv(nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusUnavailable {
		t.Fatalf("stream past the grace: %v, want a 503 end", err)
	}
}

// streamsOpen counts the server's open streams (tests).
func (s *Server) streamsOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		n += c.streams.open()
	}
	return n
}

// The open carries the ctx's deadline, cap and metadata like a call: the
// handler's ctx has them.
func TestStreamOpenCarriesCtx(t *testing.T) {
	s, addr, _ := streamServer(t)
	type seen struct {
		dl      bool
		cap, md string
	}
	got := make(chan seen, 1)
	s.HandleStream(sBlock, func(ctx context.Context, init []byte, st *Stream) error {
		_, dl := ctx.Deadline()
		v := MetadataFrom(ctx).Get("k")
		got <- seen{dl: dl, cap: string(CapFrom(ctx)), md: string(v)}
		<-ctx.Done()
		return nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx = WithMetadata(WithCap(ctx, []byte("token")), "k", "v")
	if _, err := c.OpenStream(ctx, sBlock, nil); err != nil {
		t.Fatal(err)
	}
	if g := <-got; !g.dl || g.cap != "token" || g.md != "v" {
		t.Fatalf("handler saw %+v", g)
	}
}
