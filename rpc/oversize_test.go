package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Methods of the oversize tests' servers.
const (
	mOvBlock  = 801 // waits for release, then echoes
	sOvRecv   = 802 // stream: reports the error its Recv ends with
	ovMaxSize = 4 << 10
)

// ovServer is a server whose maximum frame size is ovMaxSize, with the
// echo, mOvBlock and sOvRecv handlers.
func ovServer(t *testing.T, opts ...ServerOption) (s *Server, addr string, logs *syncBuf, started chan struct{}, release func(), recvErr chan error) {
	t.Helper()
	s, addr, logs = testServer(t, append([]ServerOption{WithFrameOptions(frame.WithMaxFrameSize(ovMaxSize))}, opts...)...)
	started, recvErr = make(chan struct{}, 4), make(chan error, 4)
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(release)
	s.Handle(mOvBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-released
		return append(resp, req...), nil
	})
	s.HandleStream(sOvRecv, func(ctx context.Context, init []byte, st *Stream) error {
		started <- struct{}{}
		for {
			if _, err := st.Recv(nil); err != nil {
				recvErr <- err
				return nil
			}
		}
	})
	return s, addr, logs, started, release, recvErr
}

// An oversized request on a connection with other calls in flight: that
// call alone is answered 413, not run, with words that say what to
// change; the call running beside it and the calls after it are
// answered, and the connection stays (it was dropped, failing every call
// on it with ErrClosed).
func TestOversizedRequestFailsAlone(t *testing.T) {
	s, addr, logs, started, release, _ := ovServer(t)
	c := dial(t, addr)
	blocked := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mOvBlock, []byte("beside"), nil)
		if err == nil && string(out) != "beside" {
			err = errors.New("answer " + string(out))
		}
		blocked <- err
	}()
	receive(t, "the blocked call's start", started)
	stop := keepCalling(c, 4, []byte("while the big one passes"))
	_, err := c.Call(context.Background(), mEcho, make([]byte, 64<<10), nil)
	se := StatusOf(err)
	if se == nil || se.Code != StatusTooLarge || !se.refused || Code(err) != StatusTooLarge || IsRetryable(err) ||
		!strings.Contains(se.Message, "request too large for the server's maximum frame size (len:65581 max:4096)") {
		t.Fatalf("the oversized call: %v (status %+v), want 413 not run", err, se)
	}
	if err := stop(); err != nil {
		t.Fatalf("a call beside it: %v", err)
	}
	release()
	if err := receive(t, "the blocked call's answer", blocked); err != nil {
		t.Fatalf("the call running beside it: %v", err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" || c.Closed() {
		t.Fatalf("a call after it: %q %v (closed %v)", out, err, c.Closed())
	}
	st := s.Stats()
	if st.Dropped != 0 || st.Active != 1 {
		t.Fatalf("Stats: %d dropped, %d active; want 0 and 1 (log %q)", st.Dropped, st.Active, logs.String())
	}
}

// An oversized stream open is refused 413 not run, and an oversized
// message on an open stream ends that stream 413 (its handler's Recv
// too); the connection goes on.
func TestOversizedStreamFailsAlone(t *testing.T) {
	_, addr, _, started, _, recvErr := ovServer(t)
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sOvRecv, make([]byte, 8<<10))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv(nil)
	if se := StatusOf(err); se == nil || se.Code != StatusTooLarge || !se.refused || Code(err) != StatusTooLarge ||
		!strings.Contains(se.Message, "stream open too large") {
		t.Fatalf("oversized open: Recv %v, want 413 not run", err)
	}

	st, err = c.OpenStream(context.Background(), sOvRecv, []byte("small"))
	if err != nil {
		t.Fatal(err)
	}
	receive(t, "the handler's start", started)
	if err := st.Send([]byte("fits")); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(make([]byte, 8<<10)); err != nil {
		t.Fatal(err)
	}
	herr := receive(t, "the handler's Recv error", recvErr)
	if se := StatusOf(herr); se == nil || se.Code != StatusTooLarge {
		t.Fatalf("the handler's Recv: %v, want 413", herr)
	}
	_, err = st.Recv(nil)
	if se := StatusOf(err); se == nil || se.Code != StatusTooLarge || !strings.Contains(se.Message, "stream message too large") {
		t.Fatalf("oversized message: Recv %v, want the stream ended 413", err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("a call after them: %q %v", out, err)
	}
}

// oversizedHead returns the first bytes of a request frame whose
// envelope declares a payload of n bytes (the canonical layout), which
// the caller sends after it.
func oversizedHead(pid uint32, n int) []byte {
	var h [wire.RequestOverhead]byte
	wire.PutPlainRequestHeader(&h, mEcho, pid, 0, n)
	var fh [5]byte
	binary.LittleEndian.PutUint32(fh[:], uint32(1+len(h)+n))
	fh[4] = wire.KindRequest
	return append(fh[:], h[:]...)
}

// A hostile peer declares a request of 60 MiB (over the 4 KiB maximum,
// within frame.DiscardLimit) and sends it a few bytes at a time, slowly:
// its 413 comes as soon as the envelope's head is in, and the read timeout
// still closes the connection, as for any frame that does not finish in
// time; memory stays that of the bytes received. A declared 4 GiB closes
// it at once.
func TestOversizedHostileSlowPeer(t *testing.T) {
	_, addr, logs, _, _, _ := ovServer(t, WithReadTimeout(300*time.Millisecond))
	rc := rawDial(t, addr)
	// The 64 bytes of the envelope the server looks at (oversizeHead).
	if _, err := rc.Write(append(oversizedHead(7, 60<<20), make([]byte, oversizeHead-wire.RequestOverhead)...)); err != nil {
		t.Fatal(err)
	}
	if a := rc.recvResponse(); a.PromiseID != 7 || a.Status != StatusTooLarge || !a.NotRun {
		t.Fatalf("answer %+v, want 413 not run for promise 7", a)
	}
	go func(rc *rawConn) {
		// A few bytes every 20 ms: about 250 B/s, far under the
		// minimum rate (16 KiB/s).
		for {
			if _, err := rc.Write(make([]byte, 5)); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}(rc)
	rc.expectClosed()
	await(t, "the log of the read timeout", func() bool { return contains(logs.String(), "read timeout: frame not finished") })

	huge := rawDial(t, addr)
	var h [5]byte
	binary.LittleEndian.PutUint32(h[:], 0xFFFFFFF0)
	h[4] = wire.KindRequest
	huge.Write(h[:])
	huge.expectClosed()
	await(t, "the log of the huge frame", func() bool { return contains(logs.String(), "len:4294967280 max:4096") })
}

// Frames over the maximum that name no call to fail: a ping, or a
// request whose envelope's head does not read, close the connection as
// before, with a log line that says why; a kind the server does not
// know is read past and ignored.
func TestOversizedOtherKinds(t *testing.T) {
	_, addr, logs, _, _, _ := ovServer(t)
	for _, tc := range []struct {
		name   string
		kind   byte
		head   []byte
		closed bool
	}{
		{"ping", wire.KindPing, nil, true},
		{"cancel", wire.KindCancel, nil, true},
		{"request, no envelope", wire.KindRequest, []byte("not an envelope at all, and long enough to be read"), true},
		{"unknown kind", 200, nil, false},
		{"answer", wire.KindResponse, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := rawDial(t, addr)
			body := append(tc.head, make([]byte, 2*ovMaxSize)...)
			rc.send(tc.kind, body)
			if tc.closed {
				rc.expectClosed()
				why := fmt.Sprintf("read: frame: frame too large (len:%d max:%d), of kind %d, which names no call or stream the server could fail alone",
					1+len(body), ovMaxSize, tc.kind)
				await(t, "the log of the close", func() bool { return contains(logs.String(), why) })
				return
			}
			env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 3, Payload: []byte("next")})
			rc.send(wire.KindRequest, env)
			if a := rc.recvResponse(); a.PromiseID != 3 || a.Status != StatusOK || string(a.Body) != "next" {
				t.Fatalf("the call after it: %+v", a)
			}
		})
	}
}

// zeros writes n zero bytes to w from a buffer of 64 KiB.
func zeros(w io.Writer, n int) error {
	buf := make([]byte, 64<<10)
	for n > 0 {
		k, err := w.Write(buf[:min(n, len(buf))])
		if err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// heapAllocated is the bytes allocated so far (runtime.MemStats.TotalAlloc).
func heapAllocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// A 60 MiB request (the default maximum of 16 MiB) is read past, not
// held: the server allocates a small part of it while it answers 413 and
// the call after it, on the same connection.
func TestOversizedRequestMemory(t *testing.T) {
	_, addr, _ := testServer(t)
	rc := rawDial(t, addr)
	const n = 60 << 20
	runtime.GC()
	before := heapAllocated()
	if _, err := rc.Write(oversizedHead(9, n)); err != nil {
		t.Fatal(err)
	}
	if err := zeros(rc, n); err != nil {
		t.Fatal(err)
	}
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 10, Payload: []byte("next")}))
	if a := rc.recvResponse(); a.PromiseID != 9 || a.Status != StatusTooLarge {
		t.Fatalf("answer %+v, want 413 for promise 9", a)
	}
	if a := rc.recvResponse(); a.PromiseID != 10 || a.Status != StatusOK || string(a.Body) != "next" {
		t.Fatalf("answer %+v, want the echo of promise 10", a)
	}
	// The test's own 64 KiB of zeros, the server's read-ahead buffer,
	// the connection's jobs: a few hundred KiB, against 60 MiB.
	got := heapAllocated() - before
	t.Logf("allocated %d bytes", got)
	if got > 4<<20 {
		t.Fatalf("allocated %d bytes while a 60 MiB request was read past; want at most 4 MiB", got)
	}
}

// An answer over the client's maximum frame size fails its call alone,
// with an error that matches frame.ErrFrameTooLarge (Code 413, gRPC's
// ResourceExhausted), not ErrClosed; the call beside it is answered, and
// so is the next; the client reads the 60 MiB answer past, holding a
// small part of it.
func TestOversizedAnswerFailsAlone(t *testing.T) {
	const n = 60 << 20
	served := make(chan error, 1)
	addr := rawPeer(t, func(nc net.Conn) {
		r := &rawConn{t, nc}
		big, ok1 := readRequest(nc)
		beside, ok2 := readRequest(nc)
		if !ok1 || !ok2 {
			served <- errors.New("no requests")
			return
		}
		var h [wire.ResponseOverhead]byte
		wire.PutResponseHeader(&h, StatusOK, big, n)
		var fh [5]byte
		binary.LittleEndian.PutUint32(fh[:], uint32(1+len(h)+n))
		fh[4] = wire.KindResponse
		if _, err := nc.Write(append(fh[:], h[:]...)); err != nil {
			served <- err
			return
		}
		if err := zeros(nc, n); err != nil {
			served <- err
			return
		}
		r.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: beside, Body: []byte("beside")}))
		next, ok := readRequest(nc)
		if !ok {
			served <- errors.New("no third request")
			return
		}
		r.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: next, Body: []byte("next")}))
		served <- nil
	})
	c := dial(t, addr)
	bigErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("big"), nil)
		bigErr <- err
	}()
	// The second call goes once the first is sent, so that the peer reads
	// them in order.
	await(t, "the first call sent", func() bool { return c.busySlots() == 1 })
	runtime.GC()
	before := heapAllocated()
	out, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
	if err != nil || string(out) != "beside" {
		t.Fatalf("the call beside it: %q %v", out, err)
	}
	err = receive(t, "the big call's error", bigErr)
	got := heapAllocated() - before
	t.Logf("allocated %d bytes", got)
	if got > 4<<20 {
		t.Errorf("allocated %d bytes while a 60 MiB answer was read past; want at most 4 MiB", got)
	}
	if !errors.Is(err, frame.ErrFrameTooLarge) || errors.Is(err, ErrClosed) || Code(err) != StatusTooLarge || StatusOf(err) != nil ||
		!strings.Contains(err.Error(), "answer over the client's maximum frame size") {
		t.Fatalf("the big call: %v (Code %d), want frame.ErrFrameTooLarge alone, 413", err, Code(err))
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "next" || c.Closed() {
		t.Fatalf("the next call: %q %v", out, err)
	}
	if err := receive(t, "the peer's end", served); err != nil {
		t.Fatal(err)
	}
}

// A stream message over the client's maximum frame size cancels that
// stream alone: the caller's Recv returns an error matching
// frame.ErrFrameTooLarge (Code 413), the server's handler sees its ctx
// canceled, and the connection goes on.
func TestOversizedStreamMessageToClient(t *testing.T) {
	s, addr, _ := testServer(t)
	handlerErr := make(chan error, 1)
	s.HandleStream(sOvRecv, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send(make([]byte, 2*ovMaxSize)); err != nil {
			handlerErr <- err
			return err
		}
		<-ctx.Done()
		handlerErr <- ctx.Err()
		return ctx.Err()
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(ovMaxSize)))
	st, err := c.OpenStream(context.Background(), sOvRecv, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv(nil)
	if !errors.Is(err, frame.ErrFrameTooLarge) || errors.Is(err, ErrClosed) || Code(err) != StatusTooLarge ||
		!strings.Contains(err.Error(), "stream message over the client's maximum frame size") {
		t.Fatalf("Recv: %v (Code %d), want frame.ErrFrameTooLarge alone", err, Code(err))
	}
	if err := receive(t, "the handler's end", handlerErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler: %v, want its ctx canceled", err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("a call after it: %q %v", out, err)
	}
}

// A frame over the client's maximum that names no call or stream (a
// ping, here) fails the connection, with an error that says so: its
// calls get ErrClosed, matching frame.ErrFrameTooLarge, with the
// frame's length and kind.
func TestOversizedPingToClient(t *testing.T) {
	addr := rawPeer(t, func(nc net.Conn) {
		if _, ok := readRequest(nc); !ok {
			return
		}
		(&rawConn{nil, nc}).Write(frameBytes(wire.KindPing, make([]byte, 2*ovMaxSize)))
		io.Copy(io.Discard, nc) // until the client closes
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(ovMaxSize)))
	_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
	want := fmt.Sprintf("frame too large (len:%d max:%d), of kind %d, which names no call or stream the client could fail alone", 1+2*ovMaxSize, ovMaxSize, wire.KindPing)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, frame.ErrFrameTooLarge) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the call: %v; want ErrClosed, frame.ErrFrameTooLarge, %q", err, want)
	}
}

// The frame after one read past gets a frame clock of its own: a request
// that begins well after an oversized one ended, and takes less than the
// read timeout to arrive, is answered (its clock was the oversized
// frame's, and the read timeout closed the connection while it came).
// The pauses leave 3 s of margin on the side of the answer.
func TestOversizedNextFrameOwnClock(t *testing.T) {
	t.Parallel()
	_, addr, logs, _, _, _ := ovServer(t, WithReadTimeout(4*time.Second), WithMinReadRate(1<<30))
	rc := rawDial(t, addr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log: %s", logs.String())
		}
	})
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: make([]byte, 2*ovMaxSize)}))
	if a := rc.recvResponse(); a.PromiseID != 1 || a.Status != StatusTooLarge {
		t.Fatalf("answer %+v, want 413 for promise 1", a)
	}
	next := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("next")}))
	time.Sleep(3500 * time.Millisecond) // most of the read timeout after the oversized frame
	if _, err := rc.Write(next[:10]); err != nil {
		t.Fatal(err)
	}
	// A second into the frame: past the oversized frame's bound, and
	// with three seconds to spare within this frame's own (a loaded
	// machine may stall the writes).
	time.Sleep(time.Second)
	if _, err := rc.Write(next[10:]); err != nil {
		t.Fatal(err)
	}
	if a := rc.recvResponse(); a.PromiseID != 2 || a.Status != StatusOK || string(a.Body) != "next" {
		t.Fatalf("answer %+v, want the echo of promise 2", a)
	}
}

// TestOversizedWholeNextFrameOwnClock: an oversized frame whose first
// bytes came alone, and whose rest came in one read with the start of
// the next frame (so the Reader had nothing left of it to read past),
// leaves the next frame a clock of its own: it kept the oversized
// frame's, and the read timeout closed the healthy connection a second
// into the next frame ("read timeout: frame not finished").
func TestOversizedWholeNextFrameOwnClock(t *testing.T) {
	t.Parallel()
	const max = 256 // the whole oversized frame fits the Reader's inline buffer
	_, addr, logs := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(max)),
		WithReadTimeout(8*time.Second), WithMinReadRate(1<<30))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log: %s", logs.String())
		}
	})
	rc := rawDial(t, addr)
	over := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: make([]byte, max)}))
	next := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("next")}))
	if _, err := rc.Write(over[:3]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4500 * time.Millisecond) // over half the read timeout, inside the oversized frame (3.5 s to spare)
	if _, err := rc.Write(append(over[3:len(over):len(over)], next[:10]...)); err != nil {
		t.Fatal(err)
	}
	if a := rc.recvResponse(); a.PromiseID != 1 || a.Status != StatusTooLarge {
		t.Fatalf("answer %+v, want 413 for promise 1", a)
	}
	// 4.5 s into the next frame: past the oversized frame's bound, with
	// 3.5 s to spare within the next frame's own (a loaded machine may
	// stall the writes).
	time.Sleep(4500 * time.Millisecond)
	if _, err := rc.Write(next[10:]); err != nil {
		t.Fatal(err)
	}
	if a := rc.recvResponse(); a.PromiseID != 2 || a.Status != StatusOK || string(a.Body) != "next" {
		t.Fatalf("answer %+v, want the echo of promise 2", a)
	}
}

// TestOversizedStreamTrailerToClient: a stream's trailer over the
// client's maximum frame size (response metadata within the server's
// limit, 16 KiB by default, past a client's smaller frame limit) fails
// that stream alone, as an answer so fails its call alone: the caller's
// Recv returns an error matching frame.ErrFrameTooLarge (Code 413), and
// the call beside it and the calls after it are answered. It closed the
// connection, failing every call on it ("of kind 10, which names no
// call or stream the client could fail alone").
func TestOversizedStreamTrailerToClient(t *testing.T) {
	const sBigTrailer = 803
	s, addr, _ := testServer(t)
	s.HandleStream(sBigTrailer, func(ctx context.Context, init []byte, st *Stream) error {
		return SetResponseMetadata(ctx, "big", strings.Repeat("x", 2*ovMaxSize))
	})
	started, released := make(chan struct{}, 1), make(chan struct{})
	s.Handle(mOvBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-released
		return append(resp, req...), nil
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(ovMaxSize)))
	beside := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mOvBlock, []byte("beside"), nil)
		if err == nil && string(out) != "beside" {
			err = fmt.Errorf("answer %q", out)
		}
		beside <- err
	}()
	receive(t, "the call beside it running", started)
	var md Metadata
	st, err := c.OpenStream(WithResponseMetadata(context.Background(), &md), sBigTrailer, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv(nil)
	if !errors.Is(err, frame.ErrFrameTooLarge) || errors.Is(err, ErrClosed) || Code(err) != StatusTooLarge {
		t.Fatalf("Recv: %v (Code %d), want frame.ErrFrameTooLarge alone, 413", err, Code(err))
	}
	close(released)
	if err := receive(t, "the call beside it", beside); err != nil {
		t.Fatalf("the call beside it: %v", err)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("a call after it: %q %v", out, err)
	}
	await(t, "the stream uncounted", func() bool { return c.Streams() == 0 })
	// A caller that asked for no response metadata loses nothing: its
	// stream ends cleanly.
	if st, err = c.OpenStream(context.Background(), sBigTrailer, nil); err != nil {
		t.Fatal(err)
	}
	if _, err = st.Recv(nil); err != io.EOF {
		t.Fatalf("Recv without a receiver of metadata: %v, want io.EOF", err)
	}
}

// TestOversizedStreamMessageNextNotDelivered: the message after one over
// the client's maximum frame size is never returned by Recv as if it
// were the next: Recv returns the error of the lost message. The cancel
// that ended the stream ran on a goroutine, and the read loop queued
// the next message first about half the time ("151 of 300 streams
// returned the message after the lost one").
func TestOversizedStreamMessageNextNotDelivered(t *testing.T) {
	s, addr, _ := testServer(t)
	s.HandleStream(sOvRecv, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send(make([]byte, 2*ovMaxSize)); err != nil {
			return err
		}
		st.Send([]byte("after the lost one"))
		<-ctx.Done()
		return ctx.Err()
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(ovMaxSize)))
	const n = 300
	bad := 0
	for i := range n {
		st, err := c.OpenStream(context.Background(), sOvRecv, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.Recv(nil)
		switch {
		case err == nil:
			bad++
			if bad == 1 {
				t.Logf("stream %d: Recv returned %q", i, m)
			}
		case !errors.Is(err, frame.ErrFrameTooLarge) || Code(err) != StatusTooLarge:
			t.Fatalf("stream %d: Recv: %v (Code %d), want frame.ErrFrameTooLarge, 413", i, err, Code(err))
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d streams returned the message after the lost one", bad, n)
	}
	await(t, "the streams uncounted", func() bool { return c.Streams() == 0 })
}

// TestOversizedStreamErrorEndToClient: a stream's error end whose text
// is over the client's maximum frame size ends that stream alone, with
// the end's status and the start of its text, cut between whole
// characters (BodyLen says how long the text was); the connection goes
// on. It closed the connection, failing every call on it.
func TestOversizedStreamErrorEndToClient(t *testing.T) {
	t.Parallel()
	const sLongError = 804
	text := "x" + strings.Repeat("é", 1000) // the server sends its first 1 KiB
	s, addr, _ := testServer(t)
	s.HandleStream(sLongError, func(ctx context.Context, init []byte, st *Stream) error {
		return Errorf(418, "%s", text)
	})
	c := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(512)))
	st, err := c.OpenStream(context.Background(), sLongError, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv(nil)
	se := StatusOf(err)
	if se == nil || se.Code != 418 || errors.Is(err, ErrClosed) || len(se.Message) < 40 ||
		!strings.HasPrefix(text, se.Message) || !utf8.ValidString(se.Message) || se.BodyLen <= len(se.Message) {
		t.Fatalf("Recv: %v (%+v); want status 418 with the start of the text in whole characters, and BodyLen past it", err, se)
	}
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("a call after it: %q %v", out, err)
	}
	await(t, "the stream uncounted", func() bool { return c.Streams() == 0 })
}
