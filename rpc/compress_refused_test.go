package rpc

import (
	"bytes"
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A client told once that the server takes compressed requests, whose
// compressed request is then refused 400 with the not-run flag (a proxy
// that sent it to a server without the option): the call goes again,
// plain, once, and succeeds; the next large payloads go plain until an
// answer says again that the server takes them. A 400 without the
// not-run flag (a handler's) is the call's answer, not sent again.
func TestCompressionRefusedSentPlain(t *testing.T) {
	payload := logRecords(100 << 10)
	c, raw := pipeClient(t, WithCompression(0))
	type result struct {
		out []byte
		err error
	}
	start := func(req []byte) chan result {
		done := make(chan result, 1)
		go func() {
			out, err := c.Call(context.Background(), mEcho, req, nil)
			done <- result{out, err}
		}()
		return done
	}
	// The requests the client sends, read as they come: a call that
	// ends without sending its request again must fail the test, not
	// leave it waiting for that request.
	reqs := make(chan wire.Request, 4)
	go func() {
		defer close(reqs)
		for {
			kind, env, ok := raw.recv()
			if !ok || kind != wire.KindRequest {
				return
			}
			r, err := wire.ParseRequest(env)
			if err != nil {
				return
			}
			reqs <- r
		}
	}()
	next := func() wire.Request {
		t.Helper()
		var r wire.Request
		await(t, "a request", func() bool {
			select {
			case req, ok := <-reqs:
				if !ok {
					t.Fatal("the connection ended, want a request")
				}
				r = req
				return true
			default:
				return false
			}
		})
		return r
	}
	answer := func(r wire.Request, status uint32, body string, notRun, takes bool) {
		raw.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: status, PromiseID: r.PromiseID, Body: []byte(body), NotRun: notRun, TakesDeflate: takes}))
	}
	ok := func(done chan result) {
		t.Helper()
		if res := receive(t, "the call", done); res.err != nil || string(res.out) != "ok" {
			t.Fatalf("call: %q, %v", res.out, res.err)
		}
	}
	zipped := func(r wire.Request) bool {
		t.Helper()
		if !r.PayloadDeflated {
			if !bytes.Equal(r.Payload, payload) {
				t.Fatalf("a plain request of %d bytes, want the payload's %d", len(r.Payload), len(payload))
			}
			return false
		}
		if !bytes.Equal(inflateBytes(t, r.Payload), payload) {
			t.Fatal("a compressed request that does not inflate to the payload")
		}
		return true
	}

	// The server says it takes compressed requests.
	done := start([]byte("x"))
	answer(next(), StatusOK, "ok", false, true)
	ok(done)

	// A compressed request refused unrun: sent again plain.
	done = start(payload)
	first := next()
	if !zipped(first) {
		t.Fatal("after the announcement, the payload went plain")
	}
	answer(first, StatusBadRequest, errNoDeflate.Error(), true, false)
	var again wire.Request
	await(t, "the call sent again, or its end", func() bool {
		select {
		case again = <-reqs:
			return true
		case res := <-done:
			t.Fatalf("the refused call ended (%q, %v), not sent again plain", res.out, res.err)
		default:
		}
		return false
	})
	if zipped(again) {
		t.Fatal("the refused call went again compressed")
	}
	answer(again, StatusOK, "ok", false, false)
	ok(done)

	// The next large payload goes plain.
	done = start(payload)
	if r := next(); zipped(r) {
		t.Fatal("after the refusal, a payload went compressed")
	} else {
		answer(r, StatusOK, "ok", false, true) // told again
	}
	ok(done)

	// Told again: compressed; a 400 without the not-run flag is the
	// call's answer, and the call does not go again.
	done = start(payload)
	r := next()
	if !zipped(r) {
		t.Fatal("after a new announcement, the payload went plain")
	}
	answer(r, StatusBadRequest, "bad record", false, false)
	res := receive(t, "the call", done)
	if se := StatusOf(res.err); se == nil || se.Code != StatusBadRequest || se.Message != "bad record" {
		t.Fatalf("a handler's 400: %v", res.err)
	}

	// A promise refused so fails with the refusal (its payload is not
	// kept), and the next payload goes plain.
	waited := make(chan error, 1)
	go func() {
		// Send writes on the caller's goroutine: net.Pipe waits for
		// the read.
		p, err := c.Send(context.Background(), mEcho, payload, nil)
		if err == nil {
			_, err = p.Wait(context.Background())
		}
		waited <- err
	}()
	r = next()
	if !zipped(r) {
		t.Fatal("the promise's payload went plain")
	}
	answer(r, StatusBadRequest, errNoDeflate.Error(), true, false)
	if err := receive(t, "the promise", waited); StatusOf(err) == nil || StatusOf(err).Code != StatusBadRequest {
		t.Fatalf("the promise: %v", err)
	}
	done = start(payload)
	if r := next(); zipped(r) {
		t.Fatal("after a promise's refusal, a payload went compressed")
	} else {
		answer(r, StatusOK, "ok", false, false)
	}
	ok(done)
}

// A server without the option refuses a compressed request 400 with the
// not-run flag, and a client that took it for one with the option (a
// proxy in between) gets its call answered, sent again plain: through
// Call, an interceptor's invoker and the observer's call alike.
func TestCompressionRefusedByServerWithout(t *testing.T) {
	_, addr, _ := testServer(t)
	payload := logRecords(100 << 10)
	peer := rawDial(t, addr)
	peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: deflateBytes(t, payload), PayloadDeflated: true}))
	if a := peer.recvResponse(); a.Status != StatusBadRequest || !a.NotRun || string(a.Body) != errNoDeflate.Error() {
		t.Fatalf("answer %d not-run %v %q, want 400 not run %q", a.Status, a.NotRun, a.Body, errNoDeflate)
	}

	events := 0
	for _, tc := range []struct {
		name string
		opts []ClientOption
	}{
		{"Call", nil},
		{"interceptor", []ClientOption{WithClientInterceptors(func(ctx context.Context, method uint32, req, resp []byte, next Invoker) ([]byte, error) {
			return next(ctx, method, req, resp)
		})}},
		{"observer", []ClientOption{WithObserver(func(e CallEvent) {
			if e.Err != nil {
				t.Errorf("observed %v", e.Err)
			}
			events++
		})}},
	} {
		c := dial(t, addr, append([]ClientOption{WithCompression(0)}, tc.opts...)...)
		c.zipReq.Store(true) // as a proxy's other server would have told it
		out, err := c.Call(context.Background(), mEcho, payload, make([]byte, 0, 10))
		if err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("%s: %d bytes, %v", tc.name, len(out), err)
		}
		if c.zipReq.Load() {
			t.Fatalf("%s: the client still compresses its requests", tc.name)
		}
	}
	if events != 1 {
		t.Fatalf("the observer saw %d events, want 1", events)
	}
}

// Decompressors at work are not bounded (compress.go, inflaters) because
// none is held while its read loop waits: connections whose compressed
// requests wait for the server's answer budget hold no decompressor
// meanwhile (no read loop waits inside inflateCharged), and are served
// once the budget is back.
func TestCompressionBudgetWaitHoldsNoDecompressor(t *testing.T) {
	const (
		maxFrame = 1 << 20
		conns    = 8
		budget   = 2 << 20
	)
	s, addr := compressServer(t, WithFrameOptions(frame.WithMaxFrameSize(maxFrame)), WithAnswerBudget(maxFrame, budget))
	entered, release := handleZerosHeld(s)
	size := maxFrame - 1 - wire.RequestOverhead - 64
	bomb := deflateBytes(t, make([]byte, size))
	peers := make([]*rawConn, conns)
	for i := range peers {
		peers[i] = rawDial(t, addr)
	}
	for _, p := range peers {
		p.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 74, PromiseID: 1, Payload: bomb, PayloadDeflated: true}))
	}
	var waiting int
	await(t, "the calls the budget holds to run, the others to wait for it", func() bool {
		n := int(entered.Load())
		waiting = goroutinesIn("rpc.(*serverConn).waitBudget", "(*serverConn).inflateRequest")
		return n > 0 && waiting > 0 && n+waiting == conns
	})
	if n := goroutinesIn("rpc.inflateCharged", "(*serverConn).inflateRequest"); n != 0 {
		t.Errorf("%d read loops hold a decompressor while %d wait for the answer budget", n, waiting)
	}
	close(release)
	for _, p := range peers {
		if a := p.recvResponse(); a.Status != StatusOK || atoi(a.Body) != size {
			t.Fatalf("answer %d %q", a.Status, a.Body)
		}
	}
}
