package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// halfCloseThenCancel opens a stream of method on c, half-closes it,
// receives one message and cancels the stream's ctx.
func halfCloseThenCancel(t *testing.T, c *Client, method uint32) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.OpenStream(ctx, method, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
}

// A client that half-closed its direction (CloseSend) and then cancels
// OpenStream's ctx still tells the server: the handler's ctx ends.
func TestStreamCancelAfterCloseSendReachesHandler(t *testing.T) {
	s, addr, _ := streamServer(t)
	const sWait = 41
	result := make(chan error, 1)
	s.HandleStream(sWait, func(ctx context.Context, init []byte, st *Stream) error {
		if _, err := st.Recv(nil); err != io.EOF {
			result <- err
			return nil
		}
		if err := st.Send([]byte("ready")); err != nil {
			result <- err
			return nil
		}
		<-ctx.Done()
		result <- ctx.Err()
		return nil
	})
	halfCloseThenCancel(t, dial(t, addr), sWait)
	if err := receive(t, "the handler's ctx to end", result); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler: %v, want its ctx canceled", err)
	}
}

// The handler of such a stream, blocked in Send on a full window (the
// client has forgotten the stream and grants nothing), ends, and frees
// the connection's stream for the next open.
func TestStreamCancelAfterCloseSendFreesServerStream(t *testing.T) {
	s, addr, _ := streamServer(t, WithMaxStreams(1))
	const sPush = 42
	sendErr := make(chan error, 1)
	s.HandleStream(sPush, func(ctx context.Context, init []byte, st *Stream) error {
		if _, err := st.Recv(nil); err != io.EOF {
			return err
		}
		return sendUntilError(sendErr)(ctx, init, st)
	})
	c := dial(t, addr)
	halfCloseThenCancel(t, c, sPush)
	if err := receive(t, "the handler's Send to fail", sendErr); err == nil {
		t.Fatal("Send: nil error")
	}
	await(t, "the server's stream to end", func() bool { return s.Stats().Streams.Active == 0 })
	st2, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st2.Send([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if m, err := st2.Recv(nil); err != nil || string(m) != "x" {
		t.Fatalf("the next stream: %q, %v", m, err)
	}
}

// A client's Recv that sends a grant, and so writes the connection's
// queue, towards a server that stopped reading, returns once OpenStream's
// ctx ends (the rest of the write goes on in another goroutine), as
// Send's write does; not a write timeout later.
func TestStreamClientGrantWriteBoundedByCtx(t *testing.T) {
	cli, srv := net.Pipe()
	c := NewClient(cli, WithWriteTimeout(time.Hour))
	t.Cleanup(func() { c.Close(); srv.Close() })
	peer := &rawConn{t, srv}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := make(chan struct{})
	go func() { // the client's hello and open
		defer close(read)
		for range 2 {
			if _, _, ok := peer.recv(); !ok {
				return
			}
		}
	}()
	st, err := c.OpenStream(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-read
	peer.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<20))
	const n = 40 // 40 × 1,004 bytes: more than half the client's window, so a grant
	for range n {
		peer.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, st.ID(), make([]byte, 1000)))
	}
	// The peer reads nothing from now on.
	done := make(chan error, 1)
	go func() {
		for range n {
			if _, err := st.Recv(nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	await(t, "Recv to write its grant", func() bool {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return c.out.flushing
	})
	cancel()
	receive(t, "Recv to return after its ctx ended", done)
}

// A stream's receive queue does not keep the room a large message took
// once the message is read: an idle stream holds at most about its
// window.
func TestStreamQueueShrinksAfterLargeMessage(t *testing.T) {
	s, addr, _ := streamServer(t)
	const sBig = 43
	s.HandleStream(sBig, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send(make([]byte, 4<<20)); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.OpenStream(ctx, sBig, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || len(m) != 4<<20 {
		t.Fatalf("Recv: %d bytes, %v", len(m), err)
	}
	st.mu.Lock()
	held, buffered := cap(st.q), st.qBytes
	st.mu.Unlock()
	if lim := 2 * c.streams.limit; int64(held) > lim {
		t.Fatalf("an open stream with %d bytes buffered holds a %d-byte queue (twice the window: %d)", buffered, held, lim)
	}
}

// A handler waiting in Recv returns once its ctx ends (here the server's
// base context), though the client sends nothing and keeps the stream.
func TestStreamHandlerRecvEndsWithCtx(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	s, addr, _ := streamServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	const sRecv = 44
	started, result := make(chan struct{}), make(chan error, 1)
	s.HandleStream(sRecv, func(ctx context.Context, init []byte, st *Stream) error {
		close(started)
		_, err := st.Recv(nil)
		result <- err
		return nil
	})
	c := dial(t, addr)
	if _, err := c.OpenStream(context.Background(), sRecv, nil); err != nil {
		t.Fatal(err)
	}
	receive(t, "the handler to start", started)
	cancelBase()
	if err := receive(t, "the handler's Recv", result); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv: %v, want context.Canceled", err)
	}
}

// A frame of a stream that comes before the server's hello tells the
// client the server is a canonical one (a zapcodec server's hello comes
// first): sends are no longer held to preHelloWindow, without waiting for
// helloWait.
func TestStreamCanonicalByEvidence(t *testing.T) {
	old := helloWait
	helloWait = time.Hour
	defer func() { helloWait = old }()
	c, peer := pipeClient(t)
	read := make(chan struct{})
	go func() { // the client's hello and open
		defer close(read)
		for range 2 {
			peer.recv()
		}
	}()
	st, err := c.OpenStream(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-read
	if c.streams.noHello.Load() {
		t.Fatal("canonical before any evidence")
	}
	peer.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, st.ID(), []byte("first")))
	if m, err := st.Recv(nil); err != nil || string(m) != "first" {
		t.Fatalf("Recv: %q, %v", m, err)
	}
	if !c.streams.noHello.Load() {
		t.Fatal("a stream's frame before any hello did not make the server canonical")
	}
}

// The hello wait counts from when the client's hello left its queue: a
// hello held behind a blocked write does not make the server canonical.
func TestStreamHelloWaitAfterHelloLeaves(t *testing.T) {
	old := helloWait
	helloWait = time.Millisecond
	defer func() { helloWait = old }()
	c, peer := pipeClient(t)
	opened := openBehindBlockedWrite(t, c)
	await(t, "five looks of the hello wait", func() bool { return c.streams.helloChecks.Load() >= 5 })
	if c.streams.noHello.Load() {
		t.Fatal("the server was taken for canonical while our hello was still queued")
	}
	peer.recvRequest() // the call's write ends; the hello and the open follow
	go func() {
		for {
			if _, _, ok := peer.recv(); !ok {
				return
			}
		}
	}()
	await(t, "the server taken for canonical once the hello left", func() bool { return c.streams.noHello.Load() })
	if err := receive(t, "OpenStream", opened); err != nil {
		t.Fatal(err)
	}
}

// The round trip the hello is awaited for counts from when the client's
// hello left its queue, not from when it was queued: a hello that waited
// in the queue until just before the client's first look (0.9 s of a 1 s
// helloWait, say) still gets helloWait for the server's answer. The looks
// are run here by hand (helloAfter), the first only once the hello has
// left: the client used to take the server for a canonical one at that
// look, leaving the round trip what remained of helloWait.
func TestStreamHelloWaitCountsFromLeaving(t *testing.T) {
	type timer struct {
		d time.Duration
		f func()
	}
	timers := make(chan timer, 8)
	oldAfter := helloAfter
	helloAfter = func(d time.Duration, f func()) { timers <- timer{d, f} }
	defer func() { helloAfter = oldAfter }()
	c, peer := pipeClient(t)
	opened := openBehindBlockedWrite(t, c)
	first := receive(t, "the first look's timer", timers)
	peer.recvRequest() // the call's write ends; the hello and the open follow
	if kind, env, ok := peer.recv(); !ok || kind != wire.KindStreamWindow {
		t.Fatalf("frame kind %d %x, want the client's hello", kind, env)
	}
	go func() { // the open, and nothing else
		for {
			if _, _, ok := peer.recv(); !ok {
				return
			}
		}
	}()
	if err := receive(t, "OpenStream", opened); err != nil {
		t.Fatal(err)
	}
	first.f() // the first look, after the hello left
	if c.streams.noHello.Load() {
		t.Fatal("the server was taken for canonical at the first look after the hello left: the round trip got what remained of helloWait")
	}
	next := receive(t, "the look after the hello left", timers)
	if next.d != helloWait {
		t.Fatalf("the round trip's wait is %v, want helloWait (%v)", next.d, helloWait)
	}
	next.f() // helloWait after it left, and no hello came
	if !c.streams.noHello.Load() {
		t.Fatal("no hello helloWait after ours left, and the server was not taken for canonical")
	}
	if n := c.streams.helloEnds.Load(); n != 1 {
		t.Fatalf("the hello wait ended %d times, want 1", n)
	}
}

// A client's hello wait reads the variables tests set (helloWait,
// helloAfter) once, as it begins: its looks run in timers' goroutines,
// which a later test that sets them does not wait for. A look that read
// helloWait as it found the hello gone raced (-race) with such a test's
// write: TestStreamCanonicalByEvidence failed now and then so, a look of
// an earlier test's client having read it.
func TestStreamHelloWaitReadsVariablesOnce(t *testing.T) {
	type timer struct {
		d     time.Duration
		later bool // through the helloAfter set after the wait began
		f     func()
	}
	timers := make(chan timer, 8)
	oldAfter, oldWait := helloAfter, helloWait
	defer func() { helloAfter, helloWait = oldAfter, oldWait }()
	helloAfter = func(d time.Duration, f func()) { timers <- timer{d, false, f} }
	helloWait = time.Hour
	c, peer := pipeClient(t)
	go func() { // the hello and the open, and nothing else
		for {
			if _, _, ok := peer.recv(); !ok {
				return
			}
		}
	}()
	if _, err := c.OpenStream(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	first := receive(t, "the first look's timer", timers)
	// What a later test sets while the wait goes on.
	helloAfter = func(d time.Duration, f func()) { timers <- timer{d, true, f} }
	helloWait = time.Millisecond
	first.f() // the hello left: the round trip's wait begins
	next := receive(t, "the look after the hello left", timers)
	if next.later || next.d != time.Hour {
		t.Fatalf("the round trip's wait is %v (through the helloAfter set later: %v), want the hour of helloWait as the wait began", next.d, next.later)
	}
}

// openBehindBlockedWrite makes c's next frames wait in its queue: a call
// whose write blocks (c's peer reads nothing yet), then an OpenStream,
// whose hello and open queue behind it. It returns what OpenStream
// returns.
func openBehindBlockedWrite(t *testing.T, c *Client) <-chan error {
	t.Helper()
	go c.Call(context.Background(), mEcho, make([]byte, 1000), nil)
	await(t, "the call's write to block", func() bool {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return c.out.flushing
	})
	opened := make(chan error, 1)
	go func() {
		_, err := c.OpenStream(context.Background(), 1, nil)
		opened <- err
	}()
	return opened
}

// A client that closes while its hello is still queued (behind a write
// the peer does not read) stops the hello wait at its next look: the
// timer no longer holds the closed client for maxHelloWaits looks.
func TestStreamHelloWaitEndsAtClose(t *testing.T) {
	oldWait, oldMax := helloWait, maxHelloWaits
	helloWait, maxHelloWaits = time.Millisecond, 1<<30
	defer func() { helloWait, maxHelloWaits = oldWait, oldMax }()
	c, _ := pipeClient(t)
	opened := openBehindBlockedWrite(t, c)
	await(t, "three looks of the hello wait", func() bool { return c.streams.helloChecks.Load() >= 3 })
	c.Close()
	receive(t, "OpenStream", opened) // queued before the close, or failed by it
	await(t, "the hello wait to end after the close", func() bool { return c.streams.helloEnds.Load() == 1 })
	if c.streams.noHello.Load() {
		t.Fatal("the closed client took its server for a canonical one")
	}
}

// An open with stream id 0 (the hello's id, which no opener numbers a
// stream with) starts no handler; the connection goes on.
func TestStreamOpenIDZeroDropped(t *testing.T) {
	s, addr, _ := streamServer(t)
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<16)) // a zapcodec client's hello
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 0}))
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 7, Payload: []byte("after")}))
	for {
		kind, env, ok := rc.recv()
		if !ok {
			t.Fatal("connection closed")
		}
		if kind != wire.KindResponse {
			continue // the server's hello
		}
		r, err := wire.ParseResponse(env)
		if err != nil || r.PromiseID != 7 || string(r.Body) != "after" {
			t.Fatalf("answer %+v, %v", r, err)
		}
		break
	}
	if n := s.Stats().Streams.Opened; n != 0 {
		t.Fatalf("%d streams opened", n)
	}
}

// A message above the largest frame is refused before it is copied into
// the connection's write queue.
func TestStreamSendTooLargeNotQueued(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, c.out.max)
	if err := st.Send(msg); !errors.Is(err, frame.ErrFrameTooLarge) {
		t.Fatalf("Send: %v, want frame.ErrFrameTooLarge", err)
	}
	c.out.mu.Lock()
	held := 0
	for _, b := range []*outBuf{c.out.cur, c.out.spare} {
		if b != nil {
			held = max(held, cap(b.B))
		}
	}
	c.out.mu.Unlock()
	if held >= len(msg) {
		t.Fatalf("the write queue holds a %d-byte buffer after refusing a %d-byte message", held, len(msg))
	}
	if err := st.Send([]byte("small")); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "small" {
		t.Fatalf("Recv: %q, %v", m, err)
	}
}

// A client's Send or CloseSend after its stream's ctx ended returns at
// once, even while the canceled end waits to be written to a server that
// does not read. Before, the cancel held the stream's write lock over
// that write, and Send and CloseSend waited for it (for the write
// timeout) although their ctx had ended.
func TestStreamSendAfterCancelPeerNotReading(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(*Stream) error
		want error
	}{
		{"Send", func(st *Stream) error { return st.Send([]byte("x")) }, context.Canceled},
		// ctx's error, as when the cancel has not run yet (it returned
		// nil once it had: TestStreamCloseSendAfterCtxEndIsCtxError).
		{"CloseSend", (*Stream).CloseSend, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t) // the write timeout is an hour
			read := make(chan struct{})
			go func() { // the hello and the open, then nothing
				defer close(read)
				for range 2 {
					peer.recv()
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			st, err := c.OpenStream(ctx, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			<-read
			flushing := func() bool {
				c.out.mu.Lock()
				defer c.out.mu.Unlock()
				return c.out.flushing
			}
			cancel()
			await(t, "the canceled end's write to block", flushing)
			done := make(chan error, 1)
			go func() { done <- tc.op(st) }()
			if err := receive(t, tc.name+" after the stream's ctx ended", done); err != tc.want {
				t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

// ErrStreamClosed's text is true of every call that returns it: Recv in
// a goroutine a handler left running, once the handler returned, as well
// as Send after CloseSend (it said "closed for sending" for both).
func TestStreamClosedTextFitsRecv(t *testing.T) {
	s, addr, _ := streamServer(t)
	const sLeft = 45
	result := make(chan error, 1)
	s.HandleStream(sLeft, func(ctx context.Context, init []byte, st *Stream) error {
		go func() {
			<-ctx.Done() // canceled once the handler's stream ended
			_, err := st.Recv(nil)
			result <- err
		}()
		return nil
	})
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sLeft, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("client's Recv: %v, want io.EOF", err)
	}
	err = receive(t, "the left goroutine's Recv", result)
	if !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Recv after the handler returned: %v, want ErrStreamClosed", err)
	}
	if text := err.Error(); strings.Contains(text, "sending") {
		t.Errorf("Recv returned %q: its text speaks of sending", text)
	}
}

// After about 2^31 opens on one connection the client's id counter wraps;
// a new stream may then get the id of a stream it canceled whose server
// handler still runs (the client forgot the id at its cancel; the server
// keeps it until the handler returns). The server refused that open
// without an end, and the new stream waited until its ctx ended; it now
// ends it with 503 (the id is the new stream's alone on the client, so
// the end can reach no other), and Recv says so. The counter is set near
// the wrap.
func TestStreamIDWrapOntoCanceledStream(t *testing.T) {
	s, addr, _ := streamServer(t)
	const sStubborn = 46
	started, release := make(chan struct{}, 1), make(chan struct{})
	canceled := make(chan struct{})
	s.HandleStream(sStubborn, func(ctx context.Context, init []byte, st *Stream) error {
		started <- struct{}{}
		<-ctx.Done()
		close(canceled)
		<-release // runs on after the client's cancel
		return nil
	})
	defer close(release)
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	old, err := c.OpenStream(ctx, sStubborn, nil)
	if err != nil {
		t.Fatal(err)
	}
	receive(t, "the first handler to start", started)
	cancel()
	receive(t, "the server to see the cancel", canceled)
	c.streams.mu.Lock()
	c.streams.next = 1<<32 - 3 // two opens before the wrap
	c.streams.mu.Unlock()
	for range 2 {
		st, err := c.OpenStream(context.Background(), sCount, u32msg(1))
		if err != nil {
			t.Fatal(err)
		}
		if msgs, err := recvAll(st); len(msgs) != 1 || err != io.EOF {
			t.Fatalf("stream %d: %d messages, %v", st.ID(), len(msgs), err)
		}
	}
	st, err := c.OpenStream(context.Background(), sCount, u32msg(1))
	if err != nil {
		t.Fatal(err)
	}
	if st.ID() != old.ID() {
		t.Fatalf("stream id %d after the wrap, want the canceled stream's %d", st.ID(), old.ID())
	}
	type result struct {
		msgs int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		msgs, err := recvAll(st)
		done <- result{len(msgs), err}
	}()
	r := receive(t, "the stream that reuses a running stream's id to end", done)
	if Code(r.err) != StatusUnavailable || r.msgs != 0 {
		t.Fatalf("%d messages, %v; want none and status %d", r.msgs, r.err, StatusUnavailable)
	}
	// The next id is free on both sides.
	st, err = c.OpenStream(context.Background(), sCount, u32msg(1))
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := recvAll(st); len(msgs) != 1 || err != io.EOF {
		t.Fatalf("stream %d: %d messages, %v", st.ID(), len(msgs), err)
	}
}
