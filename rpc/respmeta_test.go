package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mdPairs returns md's pairs as "k=v" strings, in order.
func mdPairs(md Metadata) []string {
	var out []string
	md.Range(func(k, v []byte) bool {
		out = append(out, string(k)+"="+string(v))
		return true
	})
	return out
}

// Response metadata set by a handler and a server interceptor reaches a
// caller that asks for it, with a result, with a *StatusError and with a
// plain error (500), on the inline and the worker answer paths and with a
// body large enough for the writev path; a later answer without
// metadata empties the receiver; a call that does not ask gets its
// result as before.
func TestResponseMetadataRoundTrip(t *testing.T) {
	ic := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		if string(req) != "none" {
			if err := SetResponseMetadata(ctx, "ic", "before"); err != nil {
				t.Error(err)
			}
		}
		return next(ctx, req, resp)
	}
	s, addr, _ := testServer(t, WithInterceptors(ic))
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		switch string(req) {
		case "none":
			return append(resp, "plain"...), nil
		case "forbidden":
			SetResponseMetadata(ctx, "retry-after", "30")
			return resp, Errorf(StatusForbidden, "no")
		case "fail":
			SetResponseMetadata(ctx, "why", "disk")
			return resp, errors.New("broken")
		case "big":
			SetResponseMetadata(ctx, "k", "v")
			return append(resp, bytes.Repeat([]byte{1}, 200<<10)...), nil
		}
		// A ctx derived from the handler's sets pairs too.
		type key struct{}
		SetResponseMetadata(context.WithValue(ctx, key{}, 1), "server-timing", "db;dur=53", "k", "")
		return append(resp, "ok"...), nil
	})
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	for range 3 { // the read loop answers some inline, workers others
		out, err := c.Call(ctx, 5, []byte("ok"), nil)
		if err != nil || string(out) != "ok" {
			t.Fatalf("call: %q %v", out, err)
		}
		if got := strings.Join(mdPairs(md), ","); got != "ic=before,server-timing=db;dur=53,k=" {
			t.Fatalf("response metadata %q", got)
		}
		if v := md.Get("k"); v == nil || len(v) != 0 {
			t.Fatalf("Get(k) = %q", v)
		}
	}
	_, err := c.Call(ctx, 5, []byte("forbidden"), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusForbidden || string(md.Get("retry-after")) != "30" || string(md.Get("ic")) != "before" {
		t.Fatalf("403: %v, metadata %q", err, mdPairs(md))
	}
	_, err = c.Call(ctx, 5, []byte("fail"), nil)
	if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != "broken" || string(md.Get("why")) != "disk" {
		t.Fatalf("500: %v, metadata %q", err, mdPairs(md))
	}
	out, err := c.Call(ctx, 5, []byte("big"), nil)
	if err != nil || len(out) != 200<<10 || string(md.Get("k")) != "v" {
		t.Fatalf("big answer: %d bytes %v, metadata %q", len(out), err, mdPairs(md))
	}
	out, err = c.Call(ctx, 5, []byte("none"), nil)
	if err != nil || string(out) != "plain" || md.Len() != 0 || md.Size() != 0 {
		t.Fatalf("answer without metadata: %q %v, metadata %q", out, err, mdPairs(md))
	}
	// A call that does not ask reads the answer as before, and its
	// answer's metadata reaches no receiver of an earlier call (the slot
	// is the same one, the last freed).
	if out, err := c.Call(context.Background(), 5, []byte("ok"), nil); err != nil || string(out) != "ok" || md.Len() != 0 {
		t.Fatalf("call without receiver: %q %v, the earlier call's receiver %q", out, err, mdPairs(md))
	}
	// A promise delivers it too, by Wait's return.
	p, err := c.Send(ctx, 5, []byte("ok"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Wait(context.Background()); err != nil || string(out) != "ok" || string(md.Get("server-timing")) != "db;dur=53" {
		t.Fatalf("promise: %q %v, metadata %q", out, err, mdPairs(md))
	}
	// The metadata is the caller's copy: it outlives the call's buffers.
	kept := md
	c.Call(ctx, 5, []byte("none"), nil)
	if string(kept.Get("server-timing")) != "db;dur=53" {
		t.Fatalf("kept metadata changed: %q", mdPairs(kept))
	}
}

// SetResponseMetadata refuses a ctx that is not a handler's: one no
// server made, the ctx a client's stream was opened with. (A stream
// handler's sets its trailer: TestStreamTrailerRoundTrip.)
func TestSetResponseMetadataNotHandler(t *testing.T) {
	if err := SetResponseMetadata(context.Background(), "k", "v"); !errors.Is(err, ErrNoResponseMetadata) {
		t.Fatalf("background ctx: %v", err)
	}
	s, addr, _ := testServer(t)
	s.HandleStream(7, func(ctx context.Context, _ []byte, st *Stream) error { return nil })
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	if _, err := c.OpenStream(ctx, 7, nil); err != nil {
		t.Fatal(err)
	}
	if err := SetResponseMetadata(ctx, "k", "v"); !errors.Is(err, ErrNoResponseMetadata) {
		t.Fatalf("a client stream's ctx: %v", err)
	}
}

// Without response metadata the server's answer is the canonical fixture
// frame byte for byte (also for a handler that calls SetResponseMetadata
// with no pairs); with it, a canonical client's reading of the frame (the
// status, promise and body at their offsets, WIRE.md §5) is the
// fixture's.
func TestResponseMetadataGoldenFrame(t *testing.T) {
	f := loadFixtures(t)
	reqFrame := fixtureFrame(t, f, "request_frame")
	respFrame := fixtureFrame(t, f, "response_frame")
	wantResp, err := wire.ParseResponse(respFrame[5:])
	if err != nil {
		t.Fatal(err)
	}
	wantReq, err := wire.ParseRequest(reqFrame[5:])
	if err != nil {
		t.Fatal(err)
	}
	set := make(chan []string, 1)
	s, addr, _ := testServer(t)
	s.Handle(wantReq.Method, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := SetResponseMetadata(ctx, <-set...); err != nil {
			t.Error(err)
		}
		return append(resp, wantResp.Body...), nil
	})
	rc := rawDial(t, addr)
	read := func(kv ...string) []byte {
		set <- kv
		rc.send(wire.KindRequest, reqFrame[5:])
		kind, env, ok := rc.recv()
		if !ok || kind != wire.KindResponse {
			t.Fatalf("frame kind %d ok %v", kind, ok)
		}
		return frameBytes(kind, env)
	}
	for _, kv := range [][]string{nil, {}} {
		if got := read(kv...); !bytes.Equal(got, respFrame) {
			t.Fatalf("no response metadata (%v): frame\n got %x\nwant %x", kv, got, respFrame)
		}
	}
	got := read("server-timing", "app;dur=1")
	if bytes.Equal(got, respFrame) {
		t.Fatal("metadata not in the answer")
	}
	if a, b := canonicalRead(t, got[5:]), canonicalRead(t, respFrame[5:]); a != b {
		t.Fatalf("canonical reading with metadata %+v, fixture %+v", a, b)
	}
	r, err := wire.ParseResponse(got[5:])
	if err != nil || r.NotRun || string(Metadata{r.Metadata}.Get("server-timing")) != "app;dur=1" {
		t.Fatalf("zapcodec reading: %+v %v", r, err)
	}
}

// canonicalRead is what a canonical client reads of an answer envelope
// (WIRE.md §5): status, promise and body at their offsets, with codec's
// generic reader.
func canonicalRead(t *testing.T, env []byte) [3]string {
	t.Helper()
	m, err := codec.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	root := m.Root()
	return [3]string{string(binary.LittleEndian.AppendUint32(nil, root.Uint32(0))),
		string(binary.LittleEndian.AppendUint32(nil, root.Uint32(4))), string(root.Bytes(12))}
}

// A handler's response metadata over the server's limit turns its answer
// into a 500 that says so, without the metadata, logged; under the limit
// it goes out. A handler that sets metadata and panics gets its 500.
func TestResponseMetadataTooLargeServer(t *testing.T) {
	s, addr, logs := testServer(t, WithMaxMetadata(64))
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		SetResponseMetadata(ctx, "k", strings.Repeat("v", len(req)))
		if string(req) == "panic" {
			SetResponseMetadata(ctx, "k", strings.Repeat("v", 100))
			panic("after metadata")
		}
		return append(resp, "ok"...), nil
	})
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	if out, err := c.Call(ctx, 5, bytes.Repeat([]byte{'x'}, 50), nil); err != nil || string(out) != "ok" || md.Size() != 59 {
		t.Fatalf("under the limit: %q %v, %d bytes of metadata", out, err, md.Size())
	}
	_, err := c.Call(ctx, 5, bytes.Repeat([]byte{'x'}, 60), nil)
	var se *StatusError
	want := "rpc: response metadata too large: 69 bytes encoded, over the server's limit of 64 bytes"
	if !errors.As(err, &se) || se.Code != StatusInternal || !strings.HasPrefix(se.Message, want) || md.Len() != 0 {
		t.Fatalf("over the limit: %v, metadata %q", err, mdPairs(md))
	}
	if !strings.Contains(logs.String(), "response metadata too large") {
		t.Fatalf("not logged: %s", logs.String())
	}
	_, err = c.Call(ctx, 5, []byte("panic"), nil)
	if !errors.As(err, &se) || se.Code != StatusInternal || md.Len() != 0 {
		t.Fatalf("panic after oversized metadata: %v, metadata %q", err, mdPairs(md))
	}
	// The connection is fine afterwards.
	if _, err := c.Call(ctx, 5, []byte("x"), nil); err != nil || string(md.Get("k")) != "v" {
		t.Fatalf("after: %v %q", err, mdPairs(md))
	}
}

// A client refuses, with an error and no panic, answers whose metadata
// does not decode, declares lengths past its end, exceeds its limit, or
// whose metadata slot points outside the message; the call fails, the
// connection goes on. A call that did not ask ignores the metadata.
func TestResponseMetadataHostileAnswers(t *testing.T) {
	c, peer := pipeClient(t, WithMaxResponseMetadata(32))
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	call := func(ctx context.Context, a wire.Response, patch func([]byte)) ([]byte, error) {
		t.Helper()
		type result struct {
			out []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			out, err := c.Call(ctx, mEcho, []byte("ping"), nil)
			done <- result{out, err}
		}()
		a.PromiseID = peer.recvRequest().PromiseID
		env := wire.AppendResponse(nil, &a)
		if patch != nil {
			patch(env)
		}
		peer.send(wire.KindResponse, env)
		r := receive(t, "the call's result", done)
		return r.out, r.err
	}
	huge := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
	for _, tc := range []struct {
		name string
		md   []byte
		want string
	}{
		{"odd items", encodeMD("k", "v")[:9], "not a whole number"},
		{"one item", binary.LittleEndian.AppendUint32(nil, 0), "not a whole number"},
		{"truncated length", []byte{1, 0}, "not a whole number"},
		{"huge declared key", append(huge, 'k', 'v'), "not a whole number"},
		{"huge declared value", append(binary.LittleEndian.AppendUint32([]byte{1, 0, 0, 0, 'k'}, 0x7FFFFFFF), 'v'), "not a whole number"},
		{"over the limit", encodeMD("k", strings.Repeat("v", 30)), "39 bytes encoded, over the client's limit of 32 bytes"},
	} {
		md = Metadata{[]byte("stale")}
		out, err := call(ctx, wire.Response{Status: StatusOK, Body: []byte("b"), Metadata: tc.md}, nil)
		if !errors.Is(err, ErrResponseMetadata) || !strings.Contains(err.Error(), tc.want) || len(out) != 0 || md.Size() != 0 {
			t.Fatalf("%s: %q %v (want %q), metadata %d bytes", tc.name, out, err, tc.want, md.Size())
		}
		// A call that does not ask reads the answer.
		if out, err := call(context.Background(), wire.Response{Status: StatusOK, Body: []byte("b"), Metadata: tc.md}, nil); err != nil || string(out) != "b" {
			t.Fatalf("%s, not asked: %q %v", tc.name, out, err)
		}
	}
	// A metadata slot whose length passes the message end: a malformed
	// envelope, which fails that call alone (its promise id is readable).
	for _, asked := range []context.Context{ctx, context.Background()} {
		_, err := call(asked, wire.Response{Status: StatusOK, Body: []byte("b"), Metadata: encodeMD("k", "v")}, func(env []byte) {
			binary.LittleEndian.PutUint32(env[16+24+4:], 0xFFFFFFF0)
		})
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "metadata") {
			t.Fatalf("metadata slot outside the message: %v", err)
		}
	}
	if c.Closed() {
		t.Fatal("client closed")
	}
	if out, err := call(ctx, wire.Response{Status: StatusOK, Body: []byte("b"), Metadata: encodeMD("k", "v")}, nil); err != nil || string(out) != "b" || string(md.Get("k")) != "v" {
		t.Fatalf("a good answer after: %q %v %q", out, err, mdPairs(md))
	}
}

// FuzzResponseMetadata: whatever answer envelope a server sends, the
// client's reading of its metadata (wire.ParseResponse, then
// takeMetadata for a call that asked) never panics, refuses what is over
// its limit or does not decode, and otherwise gives the caller a copy
// whose pairs Len, Range and Get agree on.
func FuzzResponseMetadata(f *testing.F) {
	f.Add(wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Body: []byte("b"), Metadata: encodeMD("k", "v")}))
	f.Add(wire.AppendResponse(nil, &wire.Response{Status: 500, PromiseID: 1, Metadata: encodeMD("traceparent", "00-abc-01", "k", "")}))
	f.Add(wire.AppendResponse(nil, &wire.Response{Status: 503, PromiseID: 1, NotRun: true, Metadata: []byte{1, 0, 0, 0}}))
	f.Add(wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Metadata: append([]byte{0xFF, 0xFF, 0xFF, 0xFF}, 'x')}))
	f.Add(wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Body: []byte("b")}))
	const lim = 48
	c := &Client{}
	c.opts.maxRespMD = lim
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wire.ParseResponse(b)
		if err != nil || len(r.Metadata) == 0 {
			return
		}
		var md Metadata
		s := &slot{}
		s.rmd = &md
		c.takeMetadata(s, r.Metadata)
		ok := len(r.Metadata) <= lim && validMetadata(r.Metadata)
		if (s.err == nil) != ok {
			t.Fatalf("%x: err %v, want ok %v", r.Metadata, s.err, ok)
		}
		if !ok {
			if !errors.Is(*s.err, ErrResponseMetadata) || md.Size() != 0 {
				t.Fatalf("refused with %v, metadata %d bytes", *s.err, md.Size())
			}
			return
		}
		if !bytes.Equal(md.b, r.Metadata) || (len(md.b) > 0 && &md.b[0] == &r.Metadata[0]) {
			t.Fatal("the caller's metadata is not a copy of the answer's")
		}
		n, size := 0, 0
		md.Range(func(k, v []byte) bool {
			n++
			size += 8 + len(k) + len(v)
			if md.Get(string(k)) == nil {
				t.Fatalf("Get(%q) = nil for a present key", k)
			}
			return true
		})
		if n != md.Len() || size != md.Size() {
			t.Fatalf("Range: %d pairs of %d bytes; Len %d, Size %d", n, size, md.Len(), md.Size())
		}
	})
}

// Response metadata that does not fit in a frame with the answer (each
// under the server's limits) turns a result into the 500 that says the
// answer is too large, without the metadata, as a result too large alone
// does; an error answer keeps its text and loses the metadata. Both were
// an empty 500: the metadata stayed with the 500, which then did not fit
// either.
func TestResponseMetadataAnswerTooLargeSaysSo(t *testing.T) {
	events := make(chan CallEvent, 2)
	s, addr, _ := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(4096)), WithObserver(func(ev CallEvent) { events <- ev }))
	big := strings.Repeat("v", 4100)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		SetResponseMetadata(ctx, "k", big)
		if string(req) == "fail" {
			return nil, Errorf(StatusUnavailable, "handler says no")
		}
		return append(resp, "ok"...), nil
	})
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	var se *StatusError
	_, err := c.Call(ctx, 5, []byte("x"), nil)
	if !errors.As(err, &se) || se.Code != StatusInternal || !strings.Contains(se.Message, "answer too large for a frame") || md.Len() != 0 {
		t.Fatalf("result with metadata over a frame: %v, metadata %d bytes", err, md.Size())
	}
	_, err = c.Call(ctx, 5, []byte("fail"), nil)
	if !errors.As(err, &se) || se.Code != StatusUnavailable || se.Message != "handler says no" || md.Len() != 0 {
		t.Fatalf("error with metadata over a frame: %v, metadata %d bytes", err, md.Size())
	}
	// The server's events say what the caller got.
	for i, want := range []uint32{StatusInternal, StatusUnavailable} {
		if ev := receive(t, "the call's event", events); ev.Status != want {
			t.Fatalf("event %d: status %d, want %d", i, ev.Status, want)
		}
	}
}
