package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// silentListener accepts connections, reads and discards everything and
// never answers. It returns the address and a counter of the frames it
// received (whole or not: the bytes / 1).
func silentListener(t *testing.T) string {
	t.Helper()
	return fakeServer(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
}

// fakeServer serves each connection it accepts on a loopback listener
// with serve, in a goroutine of its own, and closes the connection when
// serve returns; the listener closes when t ends. It returns the
// listener's address.
func fakeServer(t *testing.T, serve func(nc net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				serve(nc)
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// Against a server that never answers, calls abandoned by their 1 ms
// contexts fill the table of pending calls. Before, the client then failed
// every call with ErrTooManyPending forever while Closed stayed false, so
// nothing replaced it. Now a full table that is mostly abandoned calls
// closes the connection (the answer check is off here, to test this path
// alone).
func TestAbandonedCallsCloseFullClient(t *testing.T) {
	addr := silentListener(t)
	c := dial(t, addr, WithMaxPending(64), WithAnswerTimeout(0))
	var tooMany int
	await(t, "the client with a table full of abandoned calls to report Closed", func() bool {
		for range 16 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			_, err := c.Call(ctx, mEcho, []byte("x"), nil)
			cancel()
			switch {
			case errors.Is(err, context.DeadlineExceeded):
			case errors.Is(err, ErrTooManyPending):
				tooMany++
			case errors.Is(err, ErrClosed):
			default:
				t.Fatalf("call: %v", err)
			}
		}
		return c.Closed()
	})
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on the closed client: %v, want ErrClosed", err)
	}
	if !strings.Contains(c.err.Error(), "abandoned") {
		t.Fatalf("closed for %v, want the abandoned-table reason", c.err)
	}
}

// A server that reads but stops answering: a call without a deadline fails
// with ErrClosed once the answer timeout passes with nothing received, and
// the client reports Closed.
func TestAnswerTimeoutClosesHungClient(t *testing.T) {
	addr := silentListener(t)
	c := dial(t, addr, WithAnswerTimeout(200*time.Millisecond))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "no answer") {
			t.Fatalf("call to a hung server: %v, want ErrClosed (no answer)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("call to a hung server still waiting after 30 s")
	}
	if !c.Closed() {
		t.Fatal("client not Closed after the answer timeout")
	}
}

// An idle client (nothing outstanding) is never closed by the answer
// check, and a slow answer that comes within the timeout is taken.
func TestAnswerTimeoutSparesIdleAndSlow(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		time.Sleep(50 * time.Millisecond)
		return append(resp, req...), nil
	})
	c := dial(t, addr, WithAnswerTimeout(400*time.Millisecond))
	time.Sleep(time.Second) // several check periods with nothing outstanding
	if c.Closed() {
		t.Fatal("idle client closed by the answer check")
	}
	for range 5 {
		if out, err := c.Call(context.Background(), mSlow, []byte("z"), nil); err != nil || string(out) != "z" {
			t.Fatalf("slow call: %q, %v", out, err)
		}
	}
}

// A 2 MiB error body: the error string keeps MaxErrorMessage bytes, the
// whole body comes back appended to resp.
func TestBigErrorBodyIsCut(t *testing.T) {
	s, addr, _ := testServer(t)
	body := strings.Repeat("é", 1<<20) // 2 MiB, two bytes a rune
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(StatusInternal, "%s", body)
	})
	c := dial(t, addr)
	resp := []byte("pre:")
	out, err := c.Call(context.Background(), mFail, nil, resp)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusInternal {
		t.Fatalf("Call: %v", err)
	}
	if len(se.Message) > MaxErrorMessage || len(se.Message) < MaxErrorMessage-4 {
		t.Fatalf("Message holds %d bytes, want at most %d", len(se.Message), MaxErrorMessage)
	}
	if !strings.HasPrefix(body, se.Message) || !utf8.ValidString(se.Message) {
		t.Fatal("Message is not a whole-rune prefix of the body")
	}
	if se.BodyLen != len(body) {
		t.Fatalf("BodyLen %d, want %d", se.BodyLen, len(body))
	}
	if n := len(err.Error()); n > MaxErrorMessage+100 {
		t.Fatalf("error string of %d bytes", n)
	}
	if !bytes.Equal(out[:4], []byte("pre:")) || string(out[4:]) != body {
		t.Fatalf("the body is not returned appended to resp (%d bytes)", len(out))
	}
	// A short body is kept whole.
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(StatusInternal, "short")
	})
	_, err = c.Call(context.Background(), mFail, nil, nil)
	if !errors.As(err, &se) || se.Message != "short" || se.BodyLen != 0 || err.Error() != "rpc: status 500: short" {
		t.Fatalf("short error: %v (%+v)", err, se)
	}
}

// pongListener reads requests and never answers them, but answers each
// wire.KindPing with a wire.KindPong: a zapcodec server whose handlers are slow.
func pongListener(t *testing.T, pings *atomic.Int32) string {
	t.Helper()
	return fakeServer(t, func(nc net.Conn) {
		rc := &rawConn{t: t, Conn: nc}
		for {
			kind, env, ok := rc.recv()
			if !ok {
				return
			}
			if kind == wire.KindPing {
				pings.Add(1)
				if _, err := nc.Write(frameBytes(wire.KindPong, env)); err != nil {
					return
				}
			}
		}
	})
}

// A server that answers pings is not taken for hung while a call waits
// longer than the answer timeout; a ctx still ends the call. The ctx is
// canceled once the server has had a second ping, which the client sends
// only after the pong to the first, at the answer check that would have
// closed the connection without it, however slow the machine. (A pong has
// three answer-check periods, three quarters of the answer timeout, to
// come back: 1.5 s here. With 500 ms, so some 375 ms, the client closed
// now and then under load.)
func TestPingKeepsSlowServer(t *testing.T) {
	var pings atomic.Int32
	addr := pongListener(t, &pings)
	c := dial(t, addr, WithAnswerTimeout(2*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mEcho, []byte("x"), nil)
		errc <- err
	}()
	await(t, "a second ping", func() bool { return pings.Load() >= 2 || c.Closed() })
	cancel()
	if err := receive(t, "the call", errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want the ctx's cancel", err)
	}
	if c.Closed() {
		t.Fatalf("client closed although the server answered %d pings", pings.Load())
	}
}

// The client answers a server's ping with a pong carrying the same bytes.
func TestClientAnswersPing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan []byte, 1)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		rc := &rawConn{t: t, Conn: nc}
		nc.Write(frameBytes(wire.KindPing, []byte("12345678")))
		for {
			kind, env, ok := rc.recv()
			if !ok {
				got <- nil
				return
			}
			if kind == wire.KindPong {
				got <- env
				return
			}
		}
	}()
	dial(t, l.Addr().String())
	select {
	case p := <-got:
		if string(p) != "12345678" {
			t.Fatalf("pong %q, want the ping's payload", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no pong within 30 s")
	}
}

// The reproduction, with the default options: 64 goroutines
// making calls with a 1 ms ctx against a server that never answers.
// Before, the client ended up failing every call with ErrTooManyPending
// while Closed stayed false. Now it closes itself once its table is full
// of abandoned calls, and the calls after that fail with ErrClosed. The
// goroutines call until the client is closed, up to 4,000 calls each
// (256,000, about four times the table): a call whose 1 ms passed before
// it was sent (a slow machine, -race) is not sent and abandons no slot,
// so a fixed 70,400 calls (1,100 each) did not always fill the table.
// The calls get as long as they keep returning: a loaded machine under
// -race took more than 30 s for them all (the test's first bound), and
// only 30 s without a call returned fails it, with the goroutines.
func TestAbandonedCallsDefaultTable(t *testing.T) {
	if testing.Short() {
		t.Skip("up to 256,000 calls")
	}
	addr := silentListener(t)
	c := dial(t, addr)
	var wg sync.WaitGroup
	var tooMany, closed atomic.Int32
	var returned atomic.Int64
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4000 && !c.Closed(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				_, err := c.Call(ctx, mEcho, nil, nil)
				cancel()
				returned.Add(1)
				switch {
				case errors.Is(err, context.DeadlineExceeded):
				case errors.Is(err, ErrTooManyPending):
					tooMany.Add(1)
				case errors.Is(err, ErrClosed):
					closed.Add(1)
				default:
					t.Errorf("call: %v", err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitProgressing(t, done, &returned, "the calls to return")
	t.Logf("%d calls, %d ErrTooManyPending, %d ErrClosed", returned.Load(), tooMany.Load(), closed.Load())
	if !c.Closed() {
		t.Fatalf("client with %d abandoned calls not Closed", c.abandoned.Load())
	}
}

// waitProgressing waits for done for as long as n grows: it fails the
// test, with every goroutine's stack, when n has not grown for 30 s.
func waitProgressing(t *testing.T, done <-chan struct{}, n *atomic.Int64, what string) {
	t.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := n.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if now := n.Load(); now != last {
			last, since = now, time.Now()
		} else if time.Since(since) > 30*time.Second {
			buf := make([]byte, 1<<20)
			t.Fatalf("gave up waiting for %s: none in 30 s (%d in all)\n%s", what, now, buf[:runtime.Stack(buf, true)])
		}
	}
}

// A server of this package answers pings, so a handler that runs longer
// than the client's answer timeout does not get its connection closed: the
// call still gets its answer. Without the server's pongs the client would
// close at the answer timeout and the call would fail with ErrClosed.
func TestServerAnswersPing(t *testing.T) {
	s, addr, _ := testServer(t)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	c := dial(t, addr, WithAnswerTimeout(time.Second))
	done := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mSlow, []byte("late"), nil)
		if err == nil && string(out) != "late" {
			err = fmt.Errorf("answer %q", out)
		}
		done <- err
	}()
	time.Sleep(3 * time.Second) // three answer timeouts with nothing but pongs
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("slow call: %v (closed %v)", err, c.Closed())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("slow call never returned")
	}
}

// A peer may send requests to a client (the connection is symmetric), but
// a client serves nothing: it answers 404 "no such method", as a Server
// and the canonical runtime do, or 400 for an envelope whose promise id
// is readable but that does not decode, and stays up.
func TestClientAnswersRequests(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan wire.Response, 2)
	checked := make(chan struct{}) // the connection stays open until the client is checked
	defer close(checked)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		defer func() { <-checked }()
		rc := &rawConn{t: t, Conn: nc}
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 77}))
		bad := wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 78})
		binary.LittleEndian.PutUint32(bad[12:], uint32(len(bad)-4)) // the size cuts the fixed section
		rc.send(wire.KindRequest, bad)
		for range 2 {
			got <- rc.recvResponse()
		}
	}()
	c := dial(t, l.Addr().String())
	want := map[uint32]uint32{77: StatusNotFound, 78: StatusBadRequest}
	// The bodies are a Server's: the canonical runtime's "no such method"
	// for 404 (reply_not_found in rpc.json), and what is wrong for 400.
	// The client answered both with an empty body.
	body := map[uint32]string{77: NoSuchMethod, 78: "request fixed section truncated"}
	for range 2 {
		select {
		case r := <-got:
			if want[r.PromiseID] != r.Status || string(r.Body) != body[r.PromiseID] {
				t.Fatalf("answer %+v (body %q), want status %d, body %q", r, r.Body, want[r.PromiseID], body[r.PromiseID])
			}
			delete(want, r.PromiseID)
		case <-time.After(30 * time.Second):
			t.Fatal("no answer within 30 s")
		}
	}
	if c.Closed() {
		t.Fatal("the client closed after answering")
	}
}

// trickleListener answers each request it reads with an answer of size
// body bytes, sent chunk bytes every pause, until the client closes the
// connection (or the answer is all sent). It ignores pings, as a
// canonical server does.
func trickleListener(t *testing.T, size, chunk int, pause time.Duration) string {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return fakeServer(t, func(nc net.Conn) {
		rc := &rawConn{t: t, Conn: nc}
		for {
			kind, env, ok := rc.recv()
			if !ok {
				return
			}
			if kind != wire.KindRequest {
				continue
			}
			req, err := wire.ParseRequest(env)
			if err != nil {
				return
			}
			body := bytes.Repeat([]byte("t"), size)
			b := frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: req.PromiseID, Body: body}))
			for len(b) > 0 {
				n := min(chunk, len(b))
				if _, err := nc.Write(b[:n]); err != nil {
					return
				}
				b = b[n:]
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
			}
		}
	})
}

// A server that trickles its answer, a byte now and then, no longer keeps
// a call without a deadline waiting for ever: a byte is not a sign of
// life, a whole frame is (or bytes at the least rate a healthy transfer
// keeps, 16 KiB/s), so the answer timeout closes the connection. Before,
// any byte received counted, and the call waited as long as the trickle
// went on (here some three hours). An answer whose transfer takes longer
// than the answer timeout, at a healthy rate, is still taken.
func TestAnswerTimeoutTrickle(t *testing.T) {
	t.Run("trickle", func(t *testing.T) {
		addr := trickleListener(t, 1<<20, 1, 10*time.Millisecond)
		c := dial(t, addr, WithAnswerTimeout(200*time.Millisecond))
		errc := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
			errc <- err
		}()
		if err := receive(t, "the call to a trickling server", errc); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "no answer") {
			t.Fatalf("call to a trickling server: %v, want ErrClosed (no answer)", err)
		}
	})
	t.Run("slow large answer", func(t *testing.T) {
		// 256 KiB at 4 KiB every 16 ms: about a second, five answer
		// timeouts, at some 15 times the least rate.
		addr := trickleListener(t, 256<<10, 4<<10, 16*time.Millisecond)
		c := dial(t, addr, WithAnswerTimeout(200*time.Millisecond))
		out, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
		if err != nil || len(out) != 256<<10 {
			t.Fatalf("slow large answer: %d bytes, %v", len(out), err)
		}
	})
}

// serveCanonical serves rc as a canonical server does: it answers each
// request at once, echoing its payload, except those for method silent,
// which it never answers (a handler that hangs), and ignores pings
// (counted in pings when it is not nil) and every other extension frame.
// It returns when a read or write fails.
func serveCanonical(rc *rawConn, silent uint32, pings *atomic.Int32) {
	for {
		kind, env, ok := rc.recv()
		if !ok {
			return
		}
		if kind == wire.KindPing && pings != nil {
			pings.Add(1)
		}
		if kind != wire.KindRequest {
			continue
		}
		req, err := wire.ParseRequest(env)
		if err != nil {
			return
		}
		if req.Method == silent {
			continue
		}
		a := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: req.PromiseID, Body: req.Payload})
		if _, err := rc.Write(frameBytes(wire.KindResponse, a)); err != nil {
			return
		}
	}
}

// A canonical server, which ignores pings, is not taken for dead while it
// answers calls, though a call abandoned on it is never answered: answers
// to other calls are signs of life (the answer check counts frames), so
// the ping the client sends when answers are sparse needs no pong. Here
// the answers are as sparse as the client lets them be: the server holds
// each until a ping comes, which the client sends when two checks in a
// row found none (half the answer timeout), and answers it then, the
// ping itself unanswered; 11 answers so paced span some 8 answer
// timeouts.
//
// The pace is the client's own. It was the test's, a call every 130 ms
// with an answer timeout of 200 ms: a test goroutine stalled some 120 ms
// more (under load) left the client five checks without an answer, and
// the client closed the connection, as it should. Now the client's
// callers may stall (two of them: one call waits at the server while
// the other's answer is read); the server has three checks, 300 ms,
// from the ping to answer.
func TestCanonicalServerAnsweringKeepsConn(t *testing.T) {
	var pings atomic.Int32
	addr := fakeServer(t, func(nc net.Conn) { serveOnPing(&rawConn{t: t, Conn: nc}, &pings) })
	c := dial(t, addr, WithAnswerTimeout(400*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	if _, err := c.Call(ctx, mSlow, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the call never answered: %v, want the deadline", err)
	}
	cancel()
	// Two callers: when a ping comes, a call waits at the server for it.
	const answers = 11
	var calls atomic.Int32
	errc := make(chan error, 2)
	for range 2 {
		go func() {
			for calls.Add(1) <= answers {
				if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
					errc <- fmt.Errorf("call: %q %v (pings %d)", out, err, pings.Load())
					return
				}
			}
			errc <- nil
		}()
	}
	for range 2 {
		if err := receive(t, "the calls to end", errc); err != nil {
			t.Fatal(err)
		}
	}
	if c.Closed() {
		t.Fatalf("closed: %v", c.err)
	}
	t.Logf("%d pings ignored", pings.Load())
}

// serveOnPing serves rc as a canonical server whose answers are slow:
// it never answers a request for mSlow (a handler that hangs), and holds
// every other, answering the oldest held (echoing its payload) when a
// ping comes; a ping that finds none held has the next request answered
// at once. It sends nothing else (a canonical server ignores pings);
// pings counts the pings. It returns when a read or write fails.
func serveOnPing(rc *rawConn, pings *atomic.Int32) {
	var held []wire.Request
	owed := 0 // pings that found no request held
	for {
		kind, env, ok := rc.recv()
		if !ok {
			return
		}
		switch kind {
		case wire.KindPing:
			pings.Add(1)
			owed++
		case wire.KindRequest:
			req, err := wire.ParseRequest(env)
			if err != nil {
				return
			}
			if req.Method != mSlow {
				held = append(held, req)
			}
		}
		for ; owed > 0 && len(held) > 0; owed-- {
			a := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: held[0].PromiseID, Body: held[0].Payload})
			held = held[1:]
			if _, err := rc.Write(frameBytes(wire.KindResponse, a)); err != nil {
				return
			}
		}
	}
}
