package rpc

import (
	"context"
	"errors"
	"github.com/zapcodec/zapcodec/rpc/wire"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// A handler blocked in Send on a full window (the client reads nothing)
// returns once the client cancels the stream: the client's error end
// ends the server's direction too, so the handler goroutine and its
// stream slot are not held until the connection closes.
func TestStreamCancelWakesHandlerBlockedInSend(t *testing.T) {
	s, addr, _ := streamServer(t, WithMaxStreams(1))
	sendErr := make(chan error, 1)
	s.HandleStream(sBlock, sendUntilError(sendErr))
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.OpenStream(ctx, sBlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil { // the handler runs
		t.Fatal(err)
	}
	// Let the handler fill the window and block in Send.
	await(t, "the client's buffer to fill", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.qBytes >= c.streams.window-1004
	})
	cancel()
	select {
	case err := <-sendErr:
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusCanceled {
			t.Fatalf("handler's Send after the client canceled: %v, want status %d", err, StatusCanceled)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: the handler's Send still blocks after the client canceled the stream")
	}
	// The slot is free again (WithMaxStreams(1) on the server) once the
	// handler has returned, which it does just after sendErr: until then
	// an open is refused as one too many.
	await(t, "a stream after the canceled one to be served", func() bool {
		st2, err := c.OpenStream(context.Background(), sEcho, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st2.Send([]byte("x")); err != nil {
			t.Fatal(err)
		}
		m, err := st2.Recv(nil)
		if se := (*StatusError)(nil); errors.As(err, &se) && se.Code == StatusUnavailable && se.Message == streamTooMany {
			return false
		}
		if err != nil || string(m) != "x" {
			t.Fatalf("a stream after the canceled one: %q %v", m, err)
		}
		return true
	})
}

// A stream the server ends at once (a handler returning an error at once)
// while OpenStream's ctx is cancelable: the client's read loop stops the
// ctx's AfterFunc; OpenStream must have set it before the open can be
// answered (a data race under -race, and an AfterFunc left on the ctx
// for every such stream otherwise).
func TestStreamEndedBeforeOpenStreamReturns(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 20 {
		sts := make([]*Stream, 0, 100)
		for range 100 {
			st, err := c.OpenStream(ctx, 99, nil) // no handler: 404 from the read loop
			if err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
		for _, st := range sts {
			var se *StatusError
			if _, err := st.Recv(nil); !errors.As(err, &se) || se.Code != StatusNotFound {
				t.Fatalf("Recv: %v, want status 404", err)
			}
			st.mu.Lock()
			leftover := st.stop != nil
			st.mu.Unlock()
			if leftover {
				t.Fatal("the AfterFunc of an ended stream is still on its ctx")
			}
		}
	}
}

// Shutdown with a stream whose peer flooded past the window (a canonical
// peer: the read loop waits for room) and a unary request behind it:
// the grace ends the stream, the request is answered, Shutdown returns.
func TestStreamShutdownStalledReadLoop(t *testing.T) {
	const window = 8 << 10
	s, addr, _ := streamServer(t, WithStreamWindow(window), WithShutdownGrace(100*time.Millisecond))
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sBlock, PromiseID: 1, Payload: []byte("x")}))
	frames := make(chan [2][]byte, 100)
	go func() {
		for {
			k, env, ok := rc.recv()
			if !ok {
				close(frames)
				return
			}
			frames <- [2][]byte{{k}, env}
		}
	}()
	go func() {
		pad := make([]byte, 1000)
		for range 40 { // 40 KB into an 8 KiB window
			if _, err := rc.Write(frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, pad))); err != nil {
				return
			}
		}
		rc.Write(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 7, Payload: []byte("hi")})))
	}()
	await(t, "the server's read loop to wait for room", func() bool { return s.streamStalls() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var end, answered bool
	for f := range frames {
		switch f[0][0] {
		case wire.KindStreamEnd:
			e, err := wire.ParseStreamEnd(f[1])
			if err == nil && e.ID == 1 && e.Status == StatusUnavailable {
				end = true
			}
		case wire.KindResponse:
			if r, err := wire.ParseResponse(f[1]); err == nil && r.PromiseID == 7 {
				answered = true
			}
		}
	}
	if !end || !answered {
		t.Fatalf("stream ended with 503: %v; request answered: %v", end, answered)
	}
}

// Streams ended every way leave no goroutine behind once the client and
// the server are closed.
func TestStreamNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	s := NewServer()
	registerStreamHandlers(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	c, err := Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	open := func(ctx context.Context, m uint32, init []byte) *Stream {
		st, err := c.OpenStream(ctx, m, init)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Clean, error, panic, status ends.
	for _, m := range []uint32{sCount, sFail, sPanic, sStatus} {
		recvAll(open(bg, m, u32msg(100)))
	}
	// Cancel mid-Recv.
	ctx, cancel := context.WithCancel(bg)
	st := open(ctx, sBlock, []byte("x"))
	st.Recv(nil)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	recvAll(st)
	// Cancel mid-Send: the handler never reads.
	ctx, cancel = context.WithCancel(bg)
	st = open(ctx, sBlock, []byte("x"))
	st.Recv(nil)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	for st.Send(make([]byte, 4096)) == nil {
	}
	// The handler returns while the client still sends.
	st = open(bg, sStatus, nil)
	for st.Send([]byte("more")) == nil {
	}
	// Open and left open at Close.
	st = open(bg, sEcho, nil)
	st.Send([]byte("a"))
	st.Recv(nil)
	open(bg, sBlock, nil)
	c.Close()
	s.Close()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("gave up after 30 s: %d goroutines, %d before\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client that keeps as many streams open as the server allows may open
// a new one as soon as it has read the end of an old one: the server
// must not still count the old one and refuse the new one with 503.
func TestStreamLimitFreedBeforeEnd(t *testing.T) {
	_, addr, _ := streamServer(t, WithMaxStreams(1))
	c := dial(t, addr, WithMaxStreams(1))
	for i := range 2000 {
		st, err := c.OpenStream(context.Background(), sStatus, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Recv(nil)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 418 {
			t.Fatalf("stream %d: %v, want the handler's 418", i, err)
		}
	}
}

// A handler blocked in Send on a full window returns ctx's error when its
// ctx ends for a reason of the server's own (here the base context; the
// deadline carried in the open is another), as Send's doc says.
func TestStreamHandlerSendHonoursCtx(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	s, addr, _ := streamServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	sendErr := make(chan error, 1)
	s.HandleStream(sBlock, sendUntilError(sendErr))
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sBlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
	await(t, "the client's buffer to fill", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.qBytes >= c.streams.window-1004
	})
	cancelBase()
	select {
	case err := <-sendErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler's Send after its ctx ended: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: the handler's Send still blocks after its ctx ended")
	}
}

// A peer whose grants overflow the window counters (huge, repeated, for
// ids never opened, for id 0 again) gets its messages and nothing breaks:
// the server's outstanding count is clamped, not wrapped.
func TestStreamHostileGrants(t *testing.T) {
	_, addr, _ := streamServer(t)
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 16)) // hello: a 16-byte window
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sCount, PromiseID: 1, Payload: u32msg(5000)}))
	go func() {
		for i := range 3000 {
			id := uint32(1)
			switch i % 3 {
			case 1:
				id = 999
			case 2:
				id = 0
			}
			if _, err := rc.Write(frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, id, 0xFFFFFFFF))); err != nil {
				return
			}
		}
	}()
	got := 0
	for {
		kind, env, ok := rc.recv()
		if !ok {
			t.Fatalf("connection closed after %d messages", got)
		}
		if kind == wire.KindStreamMsg {
			id, m, err := wire.ParseStreamMsg(env)
			if err != nil || id != 1 || len(m) != 4 {
				t.Fatalf("message %d: id %d %x %v", got, id, m, err)
			}
			got++
		}
		if kind == wire.KindStreamEnd {
			break
		}
	}
	if got != 5000 {
		t.Fatalf("%d messages, want 5000", got)
	}
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sCount, u32msg(3))
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := recvAll(st); len(msgs) != 3 || err != io.EOF {
		t.Fatalf("another connection: %d messages, %v", len(msgs), err)
	}
}

// A peer that half-closes the connection mid-stream (no end frame) gets
// the answers to what it sent, then an error end (its direction did not
// end cleanly): StatusCanceled, as for a client that went away (the
// server cannot tell a half-close from a close; it was 500), then the
// close.
func TestStreamPeerHalfClosesMidStream(t *testing.T) {
	_, addr, _ := streamServer(t)
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<20))
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1}))
	for i := range 3 {
		rc.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, u32msg(uint32(i))))
	}
	if err := rc.Conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var echoes int
	var end *wire.StreamEnd
	for {
		kind, env, ok := rc.recv()
		if !ok {
			break
		}
		switch kind {
		case wire.KindStreamMsg:
			if id, m, err := wire.ParseStreamMsg(env); err != nil || id != 1 || string(m) != string(u32msg(uint32(echoes))) {
				t.Fatalf("echo %d: %d %x %v", echoes, id, m, err)
			}
			echoes++
		case wire.KindStreamEnd:
			e, err := wire.ParseStreamEnd(env)
			if err != nil {
				t.Fatal(err)
			}
			end = &e
		}
	}
	if echoes != 3 || end == nil || end.ID != 1 || end.Status != StatusCanceled {
		t.Fatalf("%d echoes, end %+v; want 3 and an error end %d", echoes, end, StatusCanceled)
	}
}

// sendUntilError is a stream handler that sends 1,000-byte messages until
// a Send fails, and reports that error on sendErr (which must have room).
func sendUntilError(sendErr chan<- error) StreamHandler {
	return func(ctx context.Context, init []byte, st *Stream) error {
		msg := make([]byte, 1000)
		for {
			if err := st.Send(msg); err != nil {
				sendErr <- err
				return err
			}
		}
	}
}

// A handler's Send after its ctx ended fails with ctx's error even when
// the window and the write queue have room, and nothing of the message
// reaches the peer (as gRPC's SendMsg on a stream whose ctx is done).
func TestStreamHandlerSendAfterCtxEnded(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	s, addr, _ := streamServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	const sLate = 40
	sendErr := make(chan error, 1)
	s.HandleStream(sLate, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send([]byte("before")); err != nil {
			sendErr <- err
			return err
		}
		<-ctx.Done()
		err := st.Send([]byte("after"))
		sendErr <- err
		return nil
	})
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sLate, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "before" {
		t.Fatalf("first message: %q %v", m, err)
	}
	cancelBase()
	if err := <-sendErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler's Send after its ctx ended: %v, want context.Canceled", err)
	}
	// The stream ends without the late message.
	if m, err := st.Recv(nil); err == nil {
		t.Fatalf("the client received %q, sent after the handler's ctx ended", m)
	}
}
