package rpc

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// outboxFull reports whether o's queue is full (a frame must wait for room).
func outboxFull(o *outbox) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued() >= outboxLimit
}

// A handler's CloseSend whose ctx ended while the connection's queue was
// full queued no end; the end is still sent when the handler returns, so
// the peer learns that the stream is over (it used to get none, and a
// peer without a deadline waited for it for ever).
func TestStreamHandlerCloseSendNotQueuedStillEnds(t *testing.T) {
	s, addr, _ := testServer(t)
	stop := make(chan struct{})
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		// Fills the connection's queue with its like: the peer does not read.
		msg := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			if err := st.Send(msg); err != nil {
				return err
			}
		}
	})
	closeErr := make(chan error, 1)
	s.HandleStream(2, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done() // the open's deadline
		for !outboxFull(st.set.out) {
			time.Sleep(time.Millisecond)
		}
		closeErr <- st.CloseSend()
		return nil
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<30))
	// The stream whose CloseSend is tested opens first: once the senders
	// filled the queue, the read loop may be the one writing (its own
	// frames leave first), blocked on the peer that does not read, and
	// would read no open after theirs until the write timeout.
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: 7, Timeout: 100000}))
	// Several senders: while one writes (blocked), the others fill the queue.
	for id := uint32(1); id <= 5; id += 2 {
		rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: id}))
	}
	if err := <-closeErr; err != context.DeadlineExceeded {
		t.Fatalf("CloseSend: %v, want the ctx's error (its end not queued)", err)
	}
	close(stop)
	// Generous: only keeps a broken build from reading for ever.
	rc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		kind, env, ok := rc.recv()
		if !ok {
			t.Fatal("no end for the stream whose CloseSend failed")
		}
		if kind != wire.KindStreamEnd {
			continue
		}
		if e, err := wire.ParseStreamEnd(env); err != nil || e.ID != 7 {
			continue
		} else if e.Status != 0 {
			t.Fatalf("end %d %q, want a clean end (the handler returned nil)", e.Status, e.Message)
		}
		return
	}
}

// grantTestSet returns a server-side stream set writing to a pipe, and a
// stream of it; the grants written are summed per stream on the returned
// channel once the pipe closes.
func grantTestSet(t *testing.T) (*streamSet, *Stream, net.Conn, <-chan map[uint32]uint64) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	o := new(outbox)
	o.setup(a, time.Hour, 0)
	set := new(streamSet)
	set.setup(o, 0, 0)
	set.sc = &serverConn{}
	s := newStream(set, 7, 1)
	s.ctx = context.Background()
	sums := make(chan map[uint32]uint64, 1)
	go func() {
		m := map[uint32]uint64{}
		defer func() { sums <- m }()
		r := frame.NewReader(b)
		for {
			kind, body, err := r.Next()
			if err != nil {
				return
			}
			if id, n, ok := wire.ParseStreamWindow(body); ok && kind == wire.KindStreamWindow {
				m[id] += uint64(n)
			}
		}
	}()
	return set, s, a, sums
}

// A grant of more than one window frame carries (a message over 2 GiB,
// under a maximum frame size above it) goes out whole, in several
// frames: the part above 2 GiB was dropped, and the sender, which never
// got it back, was left with that much less window for good (with the
// default window, a stream that never moved again).
func TestStreamGrantOverMaxGrantSentWhole(t *testing.T) {
	set, s, a, sums := grantTestSet(t)
	const n = 3*maxGrant + 12345
	set.grant(context.Background(), s, n)
	set.grant(context.Background(), s, 10)
	a.Close()
	if got := (<-sums)[7]; got != n+10 {
		t.Fatalf("granted %d bytes, want %d", got, uint64(n+10))
	}
}

// A grant queued more than 2 GiB into the queue (behind a frame over 2
// GiB) is not taken for one a later grant may be added to: its offset
// does not fit Stream.grantAt, which wrapped, and the next grant of the
// stream indexed the queue at a negative offset (a panic) or, past 4
// GiB, wrote its count into another frame.
func TestStreamGrantFarIntoQueue(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("a queue over 2 GiB needs 64-bit ints")
	}
	set, s, _, _ := grantTestSet(t)
	o := set.out
	shift := 31
	far := 1 << shift
	// Mapped address space outside the heap (bigbuf): only the grants'
	// page is touched. A make of 2 GiB was zeroed by the runtime when it
	// reused heap pages other tests had freed (5 s, 2 GiB resident, in a
	// run of the whole package; 0 s alone).
	space := bigbuf.New(t, uint64(far)+64)
	o.mu.Lock()
	// Nobody writes the queue (flushing is set), so the grants stay in it.
	o.cur = &outBuf{B: space[: far : far+64]}
	o.flushing = true
	o.mu.Unlock()
	set.grant(context.Background(), s, 10)
	set.grant(context.Background(), s, 20)
	o.mu.Lock()
	tail := o.cur.B[far:]
	o.cur = nil
	o.mu.Unlock()
	want := append(frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 7, 10)),
		frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 7, 20))...)
	if !bytes.Equal(tail, want) {
		t.Fatalf("queued % x, want % x", tail, want)
	}
}

// A handler that returns while a Send of its own goroutine waits for the
// peer's window (a peer that grants nothing more) ends its stream: that
// Send returns, and the end goes out. The end used to wait for the Send,
// which waited for a grant that never came: no end, and the stream held
// its place on the connection (and Shutdown) until the connection closed.
func TestStreamHandlerReturnsDuringSend(t *testing.T) {
	s, addr, _ := testServer(t)
	sendErr := make(chan error, 1)
	s.HandleStream(1, func(ctx context.Context, init []byte, st *Stream) error {
		go func() {
			for {
				if err := st.Send([]byte("0123456789")); err != nil {
					sendErr <- err
					return
				}
			}
		}()
		for st.set.creditWaits.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 16)) // one message, no grant
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1}))
	rc.SetReadDeadline(time.Now().Add(20 * time.Second)) // only keeps a broken build from hanging
	for {
		kind, env, ok := rc.recv()
		if !ok {
			t.Fatal("no end for the stream")
		}
		if kind == wire.KindStreamEnd {
			if e, err := wire.ParseStreamEnd(env); err != nil || e.ID != 1 || e.Status != 0 {
				t.Fatalf("end %+v %v, want a clean end of stream 1", e, err)
			}
			break
		}
	}
	if err := <-sendErr; err == nil {
		t.Fatal("the Send under way returned nil")
	} else {
		t.Logf("the Send under way returned %v", err)
	}
}

// A client whose read loop waits for room in a stream its application
// does not read (a canonical server, which has no window, sent more than
// the stream's buffer) receives nothing meanwhile, through no fault of
// the server's: the answer check does not count that time as the
// server's silence. It used to close the connection as hung after the
// answer timeout, with the stream's messages and the call's answer
// waiting in the socket.
func TestStreamStalledReadLoopNotTakenForHungServer(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := NewClient(a, WithWriteTimeout(0), WithAnswerTimeout(0))
	t.Cleanup(func() { c.Close() })
	if c.beatE != nil {
		t.Fatal("the client is in the beat: the checks below would race with it")
	}
	const msgs = 64
	msg := make([]byte, 4<<10) // 64 of them: four windows
	peer := &rawConn{t, b}
	go func() { // a canonical server: no hello; the stream's messages, then the answer
		var call uint32
		for {
			kind, env, ok := peer.recv()
			if !ok {
				return
			}
			switch kind {
			case wire.KindRequest:
				req, _ := wire.ParseRequest(env)
				call = req.PromiseID
			case wire.KindStreamOpen:
				req, _ := wire.ParseRequest(env)
				go func() {
					for range msgs {
						if _, err := b.Write(frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, req.PromiseID, msg))); err != nil {
							return
						}
					}
					resp := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: call, Body: []byte("x")})
					b.Write(frameBytes(wire.KindResponse, resp))
				}()
			}
		}
	}()
	p, err := c.Send(context.Background(), mEcho, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the call to be sent", func() bool { return c.Pending() == 1 })
	st, err := c.OpenStream(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the read loop to wait for the stream's room", func() bool { return c.streams.stalling.Load() > 0 })
	for range 10 { // two answer timeouts of checks, no byte received
		c.check()
	}
	if c.Closed() {
		t.Fatal("the client closed its connection as hung while its own read loop waited")
	}
	for i := range msgs {
		if _, err := st.Recv(nil); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if out, err := p.Wait(context.Background()); err != nil || string(out) != "x" {
		t.Fatalf("Wait: %q, %v", out, err)
	}
}

// noReadDeadlineConn is a net.Conn whose read deadlines are ignored.
type noReadDeadlineConn struct{ net.Conn }

func (c noReadDeadlineConn) SetReadDeadline(time.Time) error { return nil }
func (c noReadDeadlineConn) SetDeadline(t time.Time) error   { return c.Conn.SetWriteDeadline(t) }

// A peer that ignores the window and overflows a stream whose handler does
// not read (it waits for its ctx, as a server-streaming handler with
// nothing to send does), then closes its socket: the read loop, waiting
// for room, read nothing more and never learned that the peer left, so
// the connection, both goroutines and the buffered messages stayed for
// ever. The wait is now bounded by the idle timeout: the connection
// closes, the handler's ctx ends and the server counts no connection.
//
// The server's socket ignores read deadlines: the idle timeout's go-away
// would refuse the open if the 50 ms passed before the server read it (a
// loaded machine), so it may act only through the stall's bound. The
// stall is looked for on the connection itself, which the bound may have
// closed and the server forgotten by the time the test looks.
func TestStreamStallBoundedByIdleTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noIdle := wrapListener{l, func(nc net.Conn) net.Conn { return noReadDeadlineConn{nc} }}
	s, _ := testServerOn(t, noIdle, WithStreamWindow(8<<10), WithIdleTimeout(50*time.Millisecond), WithLogger(discardLogger()))
	addr := l.Addr().String()
	ended := make(chan struct{})
	s.HandleStream(sSum, func(ctx context.Context, init []byte, st *Stream) error {
		<-ctx.Done()
		close(ended)
		return nil
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc := serverConnOf(t, s)
	var b []byte
	b = append(b, frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sSum, PromiseID: 1}))...)
	pad := make([]byte, 1000)
	for range 64 { // 64 KB into an 8 KiB window (16 KiB before a hello)
		b = append(b, frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, pad))...)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	await(t, "the server's read loop to wait for room", func() bool { return sc.streams.stalls.Load() > 0 })
	nc.Close()
	receive(t, "the handler's ctx to end", ended)
	await(t, "the server to drop the connection", func() bool { return s.Stats().Active == 0 })
}
