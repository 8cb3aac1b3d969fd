package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The tests of this file: a stream's Send cut off by its ctx's deadline
// while the peer reads slowly never puts a torn frame on the wire that
// the connection then goes on after, and a message Send reported unsent
// (and took off the counts) never reaches the peer.

// tornMsg is the size of the messages of these tests: several of them
// fill the socket buffers and the outbox's queue.
const tornMsg = 64 << 10

// tornCall is the payload of the calls of the client test: larger than
// the socket's buffers take, so that a call whose deadline ends during
// its write is cut off mid-frame and hands the rest over.
var tornCall = bytes.Repeat([]byte("call"), 2<<20)

// tornPattern holds byte(j) at each j, one period longer than a message.
var tornPattern = func() []byte {
	b := make([]byte, tornMsg+256)
	for j := range b {
		b[j] = byte(j)
	}
	return b
}()

// tornPayload returns message i: its index, then byte(i+k) at each k. It
// is a copy, not a loop over the bytes, so that making a message stays
// cheap under the race detector: the handlers must spend their time
// waiting in Send, not making messages, for the deadline to cut a Send
// off (it failed once in CI, every handler's deadline passing between
// two Sends).
func tornPayload(i int) []byte {
	b := make([]byte, tornMsg)
	copy(b, tornPattern[i%256:])
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// slowFrames reads frames from nc, slowly (4 KiB at a time, with pauses)
// until slowFor has passed, then at full speed, and checks each frame as
// it completes: the k-th stream message of a stream must be message k
// (tornPayload), whole. It returns the messages read per stream once the
// end frames of the streams ids have all been read, or fails the test on
// a frame that is not whole (a torn frame followed by more bytes), on a
// read error, or after 30 s.
func slowFrames(t *testing.T, nc net.Conn, ids []uint32, slowFor time.Duration) (msgs map[uint32]int, ends map[uint32]wire.StreamEnd) {
	t.Helper()
	msgs, ends = make(map[uint32]int), make(map[uint32]wire.StreamEnd)
	for _, id := range ids {
		msgs[id] = 0
	}
	var buf []byte
	chunk := make([]byte, 4<<10)
	slowUntil := time.Now().Add(slowFor)
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	whole := 0
	for {
		if time.Now().Before(slowUntil) {
			time.Sleep(2 * time.Millisecond)
		} else if len(chunk) < 256<<10 {
			chunk = make([]byte, 256<<10)
		}
		n, err := nc.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for len(buf) >= 5 {
			size := int(binary.LittleEndian.Uint32(buf))
			if size < 1 || size > 1+wire.RequestOverhead+len(tornCall)+64 {
				t.Fatalf("after %d whole frames: a frame of length %d (kind %d): the frame before it was torn", whole, size, buf[4])
			}
			if len(buf) < 4+size {
				break
			}
			kind, p := buf[4], buf[5:4+size]
			switch kind {
			case wire.KindStreamMsg:
				id, msg, perr := wire.ParseStreamMsg(p)
				k, ok := msgs[id]
				if perr != nil || !ok || !bytes.Equal(msg, tornPayload(k)) {
					t.Fatalf("after %d whole frames: a message of %d bytes for stream %d (%v) is not its message %d, whole", whole, len(msg), id, perr, k)
				}
				if _, ended := ends[id]; ended {
					t.Fatalf("a message for stream %d after its end", id)
				}
				msgs[id] = k + 1
			case wire.KindStreamEnd:
				e, perr := wire.ParseStreamEnd(p)
				if perr != nil {
					t.Fatalf("after %d whole frames: a malformed end frame: %v", whole, perr)
				}
				ends[e.ID] = e
				if len(ends) == len(ids) {
					return msgs, ends
				}
			case wire.KindRequest:
				// A call sent beside the streams (the client test's).
				if r, perr := wire.ParseRequest(p); perr != nil || !bytes.Equal(r.Payload, tornCall) {
					t.Fatalf("after %d whole frames: a request of %d bytes (%v) that is not whole", whole, len(p), perr)
				}
			case wire.KindStreamOpen:
				// A client's open (the client test's): the messages of a
				// stream opened earlier may come before it.
				if _, perr := wire.ParseRequest(p); perr != nil {
					t.Fatalf("after %d whole frames: a malformed open frame: %v", whole, perr)
				}
			case wire.KindStreamWindow, wire.KindResponse:
			default:
				t.Fatalf("after %d whole frames: a frame of kind %d: the frame before it was torn", whole, kind)
			}
			whole++
			buf = buf[4+size:]
		}
		if err != nil {
			t.Fatalf("after %d whole frames: read: %v", whole, err)
		}
	}
}

// tornStreams is the number of streams each test sends on at once: while
// one sender writes (the peer taking its bytes slowly), the others fill
// the queue and wait for room, which the deadline cuts off.
const tornStreams = 4

// Server handlers send 64 KiB messages until Send fails or their ctx
// ends, under the deadline their client's open carried; the client (a
// raw peer that does no flow control, as a canonical one) reads slowly,
// so sends wait for the socket and the queue and the deadline cuts them
// off. Every message the peer reads is whole, and it reads exactly the
// messages Send reported sent, as many as the stream observer counted.
func TestStreamSendDeadlineSlowReaderServer(t *testing.T) {
	var mu sync.Mutex
	obsOut := make(map[uint32]int64)
	s := NewServer(WithLogger(discardLogger()), WithStreamObserver(func(ev StreamEvent) {
		if ev.End {
			mu.Lock()
			obsOut[ev.ID] = ev.MsgsOut
			mu.Unlock()
		}
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(smallSendBuffers{l}) }()
	defer func() { s.Close(); <-served }()
	addr := l.Addr().String()
	type result struct {
		id   uint32
		sent int
		err  error
		// during: the deadline came during the last Send, which returned
		// nil (its write interrupted and handed over, its message sent).
		during bool
	}
	done := make(chan result, tornStreams)
	s.HandleStream(sCount, func(ctx context.Context, init []byte, st *Stream) error {
		sent := 0
		var err error
		during := false
		// Until a Send fails or the ctx has ended during one: an ended
		// ctx is looked at after each Send, not before, since the Send
		// the deadline interrupts may return nil (see Send), and is cut
		// off by the deadline as much as one that returns its error.
		for {
			if err = st.Send(tornPayload(sent)); err != nil {
				break
			}
			sent++
			if ctx.Err() != nil {
				during = true
				break
			}
		}
		done <- result{st.ID(), sent, err, during}
		return ctx.Err()
	})
	nc := rawDial(t, addr)
	// Small socket buffers (the server's too, see smallSendBuffers): the
	// handlers fill the connection's queue of 4 MiB well before their
	// deadline, and wait for room.
	nc.Conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	var ids []uint32
	for i := range tornStreams {
		// An open, with 600 ms left until its deadline.
		id := uint32(2*i + 1)
		ids = append(ids, id)
		nc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sCount, PromiseID: id, Timeout: 600_000}))
	}
	msgs, _ := slowFrames(t, nc, ids, 1500*time.Millisecond)
	cut := 0
	for range tornStreams {
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a handler did not end within 30 s")
		}
		if msgs[r.id] != r.sent {
			t.Errorf("stream %d: the peer read %d messages, Send reported %d sent", r.id, msgs[r.id], r.sent)
		}
		if errors.Is(r.err, context.DeadlineExceeded) || r.during {
			cut++
		}
		await := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			n, ok := obsOut[r.id]
			mu.Unlock()
			if ok {
				if n != int64(r.sent) {
					t.Errorf("stream %d: the observer counted %d messages out, Send reported %d sent", r.id, n, r.sent)
				}
				break
			}
			if time.Now().After(await) {
				t.Fatalf("stream %d: no end event within 30 s", r.id)
			}
			time.Sleep(time.Millisecond)
		}
		if r.during {
			t.Logf("stream %d: %d messages sent, the deadline came during the last", r.id, r.sent)
		} else {
			t.Logf("stream %d: %d messages sent, then %v", r.id, r.sent, r.err)
		}
	}
	if cut == 0 {
		t.Errorf("no Send was cut off by the deadline: the test did not test it")
	}
}

// smallSendBuffers is a listener whose connections have a small socket
// send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return nc, err
}

// The same on a client: streams' Sends under a deadline to a raw server
// that reads slowly (their ends are the client's cancels at the
// deadline).
func TestStreamSendDeadlineSlowReaderClient(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	obsOut := make(map[uint32]int64)
	c := dial(t, l.Addr().String(), WithStreamObserver(func(ev StreamEvent) {
		if ev.End {
			mu.Lock()
			obsOut[ev.ID] = ev.MsgsOut
			mu.Unlock()
		}
	}))
	srv, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Our hello, with a window that never holds the client's Send back.
	if _, err := srv.Write(frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<30))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	type result struct {
		id   uint32
		sent int
		err  error
	}
	done := make(chan result, tornStreams)
	// Every stream is opened before any Send: an open whose write finds
	// the socket filled by earlier streams' Sends would wait for the
	// peer, which reads only once all are open.
	var streams []*Stream
	var ids []uint32
	for range tornStreams {
		st, err := c.OpenStream(ctx, sCount, nil)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
		ids = append(ids, st.ID())
	}
	for _, st := range streams {
		go func() {
			sent := 0
			for {
				if err := st.Send(tornPayload(sent)); err != nil {
					done <- result{st.ID(), sent, err}
					return
				}
				sent++
			}
		}()
	}
	// Beside them, calls of 8 MiB whose deadlines end while their
	// request is queued or being written (a caller that writes hands the
	// rest of its write over when its deadline passes); they are never
	// answered.
	handed := handOffs.Load()
	var calls sync.WaitGroup
	for range 2 {
		calls.Add(1)
		go func() {
			defer calls.Done()
			for ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 20*time.Millisecond)
				c.Call(cctx, mEcho, tornCall, nil)
				ccancel()
			}
		}()
	}
	// The raw server: the hello first, then the opens and the messages,
	// slowly, up to the client's cancels (error ends).
	msgs, ends := slowFrames(t, &rawSkip{Conn: srv, skip: 1}, ids, 1500*time.Millisecond)
	for range tornStreams {
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a Send did not fail within 30 s")
		}
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("stream %d: Send failed with %v, want the deadline", r.id, r.err)
		}
		if msgs[r.id] != r.sent {
			t.Errorf("stream %d: the peer read %d messages, Send reported %d sent", r.id, msgs[r.id], r.sent)
		}
		if e := ends[r.id]; e.Status != StatusCanceled {
			t.Errorf("stream %d: end status %d, want %d", r.id, e.Status, StatusCanceled)
		}
		mu.Lock()
		n := obsOut[r.id]
		mu.Unlock()
		if n != int64(r.sent) {
			t.Errorf("stream %d: the observer counted %d messages out, Send reported %d sent", r.id, n, r.sent)
		}
		t.Logf("stream %d: %d messages sent, then %v", r.id, r.sent, r.err)
	}
	calls.Wait()
	t.Logf("%d writes handed over", handOffs.Load()-handed)
}

// rawSkip is a connection whose first skip frames (the client's hello
// and open) are read and dropped before its Reads return bytes.
type rawSkip struct {
	net.Conn
	skip int
}

func (r *rawSkip) Read(p []byte) (int, error) {
	for ; r.skip > 0; r.skip-- {
		var h [5]byte
		if _, err := io.ReadFull(r.Conn, h[:]); err != nil {
			return 0, err
		}
		if _, err := io.CopyN(io.Discard, r.Conn, int64(binary.LittleEndian.Uint32(h[:])-1)); err != nil {
			return 0, err
		}
	}
	return r.Conn.Read(p)
}

// A peer that stops reading: the client's write timeout cuts a write
// midway, which may leave a torn frame on the wire; then the connection
// is closed, so nothing follows it: the peer reads whole frames, at most
// one torn frame, and the end of the connection. Every stream's Send and
// a call on the connection fail with an error matching ErrClosed.
func TestStreamWriteTimeoutClosesConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := dial(t, l.Addr().String(), WithWriteTimeout(100*time.Millisecond))
	srv, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.Write(frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 1<<30))); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, tornStreams)
	// Every stream is open before any sends: a Send that fills the
	// socket would let the write timeout close the connection under a
	// later open.
	streams := make([]*Stream, tornStreams)
	for i := range streams {
		st, err := c.OpenStream(context.Background(), sCount, nil)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	for _, st := range streams {
		go func() {
			for i := 0; ; i++ {
				if err := st.Send(tornPayload(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range tornStreams {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Send failed with %v, want an error matching ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a Send still runs 30 s after the peer stopped reading")
		}
	}
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("a call after the write timeout: %v, want an error matching ErrClosed", err)
	}
	// What the peer gets: whole frames, then at most one torn frame, then
	// the end of the connection.
	srv.SetReadDeadline(time.Now().Add(30 * time.Second))
	wireBytes, err := io.ReadAll(srv)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("reading what the client wrote: %v", err)
	}
	frames := 0
	for len(wireBytes) >= 5 {
		size := int(binary.LittleEndian.Uint32(wireBytes))
		if size < 1 || size > 1+4+tornMsg+64 {
			t.Fatalf("after %d whole frames: a frame of length %d", frames, size)
		}
		if len(wireBytes) < 4+size {
			break // the torn frame: the last bytes on the wire
		}
		if k := wireBytes[4]; k != wire.KindStreamWindow && k != wire.KindStreamOpen && k != wire.KindStreamMsg {
			t.Fatalf("after %d whole frames: a frame of kind %d", frames, k)
		}
		frames++
		wireBytes = wireBytes[4+size:]
	}
	t.Logf("%d whole frames, then %d bytes of a torn one", frames, len(wireBytes))
}

// isReset reports whether err is a connection reset (the client closed
// with unread data).
func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "reset by peer")
}

// OpenStream returns by its ctx's deadline when the peer does not read,
// whether the client's flow-control hello or the open itself is the
// blocked write (net.Pipe: a write waits for the peer's read); the
// connection's write timeout (an hour here) is not what ends it, and the
// connection stays open. An open whose write was under way still goes
// out, followed by its StatusCanceled end. (OpenStream wrote without its
// ctx: it waited for the write timeout, and a test that opened streams
// while others' Sends filled the socket failed after 100 s.)
func TestOpenStreamReturnsByDeadlineWhilePeerNotReading(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readFirst int // frames the peer reads before it stops: 1 takes the hello
	}{
		{"hello-blocked", 0},
		{"open-blocked", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t)
			read := make(chan struct{})
			go func() {
				defer close(read)
				for range tc.readFirst {
					peer.recv()
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			opened := make(chan error, 1)
			go func() {
				_, err := c.OpenStream(ctx, sCount, nil)
				opened <- err
			}()
			err := receive(t, "OpenStream to return", opened)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("OpenStream: %v, want the deadline", err)
			}
			if c.Closed() {
				t.Fatal("the connection closed: the write timeout ended the open, not its ctx")
			}
			<-read
			if tc.readFirst == 0 {
				return
			}
			// The open, then its canceled end.
			kind, env, ok := peer.recv()
			if !ok || kind != wire.KindStreamOpen {
				t.Fatalf("after the hello: kind %d (ok %v), want the open", kind, ok)
			}
			r, perr := wire.ParseRequest(env)
			if perr != nil {
				t.Fatal(perr)
			}
			kind, env, ok = peer.recv()
			if !ok || kind != wire.KindStreamEnd {
				t.Fatalf("after the open: kind %d (ok %v), want its end", kind, ok)
			}
			if e, perr := wire.ParseStreamEnd(env); perr != nil || e.ID != r.PromiseID || e.Status != StatusCanceled {
				t.Fatalf("end %+v (%v), want stream %d canceled", e, perr, r.PromiseID)
			}
		})
	}
}

// A client stream's Send, or CloseSend, whose write waits for a peer
// that stopped reading (net.Pipe) returns by the stream's deadline, not
// the write timeout (an hour here): its frame was queued, so it returns
// nil and the frame goes out, written by another goroutine; the next Send
// returns the deadline (after CloseSend: ErrStreamClosed); the peer then
// reads the frame, and after Send the stream's canceled end (after
// CloseSend the client's direction has ended already: no second end).
// (Both wrote the queue without the stream's ctx: they waited for the
// write timeout.)
func TestStreamSendReturnsByDeadlineWhilePeerNotReading(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(*Stream) error
		// checkFrame checks the frame op wrote, as the peer reads it.
		checkFrame func(kind byte, env []byte) bool
		nextSend   error // what a Send after the deadline returns
		canceled   bool  // a canceled end follows
	}{
		{"Send", func(st *Stream) error { return st.Send([]byte("blocked")) },
			func(kind byte, env []byte) bool { return kind == wire.KindStreamMsg && string(env[4:]) == "blocked" },
			context.DeadlineExceeded, true},
		{"CloseSend", (*Stream).CloseSend,
			func(kind byte, env []byte) bool {
				e, err := wire.ParseStreamEnd(env)
				return kind == wire.KindStreamEnd && err == nil && e.Status == 0
			},
			ErrStreamClosed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t)
			read := make(chan struct{})
			go func() {
				defer close(read)
				peer.recv() // the hello
				peer.recv() // the open
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			st, err := c.OpenStream(ctx, sCount, nil)
			if err != nil {
				t.Fatal(err)
			}
			<-read
			done := make(chan error, 1)
			go func() { done <- tc.op(st) }()
			err = receive(t, tc.name+" to return", done)
			if err != nil {
				t.Fatalf("%s whose write was under way at the deadline: %v, want nil (sent)", tc.name, err)
			}
			if err := st.Send([]byte("late")); !errors.Is(err, tc.nextSend) {
				t.Fatalf("Send after the deadline: %v, want %v", err, tc.nextSend)
			}
			if c.Closed() {
				t.Fatalf("the connection closed: the write timeout ended the %s, not its ctx", tc.name)
			}
			kind, env, ok := peer.recv()
			if !ok || !tc.checkFrame(kind, env) {
				t.Fatalf("kind %d (ok %v) %q, want the frame %s wrote", kind, ok, env, tc.name)
			}
			if !tc.canceled {
				return
			}
			kind, env, ok = peer.recv()
			if !ok || kind != wire.KindStreamEnd {
				t.Fatalf("kind %d (ok %v), want the stream's end", kind, ok)
			}
			if e, err := wire.ParseStreamEnd(env); err != nil || e.ID != st.ID() || e.Status != StatusCanceled {
				t.Fatalf("end %+v (%v), want stream %d canceled", e, err, st.ID())
			}
		})
	}
}
