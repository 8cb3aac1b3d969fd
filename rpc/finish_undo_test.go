package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// warmAnswer is the size of the answer of a test's first call on a
// connection with one job: the job's answer buffer grows above
// keptJobBuffer, so that the read loop keeps the job while it waits
// (releaseSpare) and every call after runs on it; the first call also
// grows its request buffer, which sends it down finish's long path.
const warmAnswer = keptJobBuffer + 1

func warm(resp []byte) []byte { return append(resp, make([]byte, warmAnswer)...) }

// TestInlineCallLeavesNothingBehind: what one call gives its job (a
// deadline, a cap, metadata, a request buffer above maxKeptBuffer) is
// gone when the job's next call runs. With one call in flight every call
// runs inline on the same job, and finish takes its short path for a
// call that set none of these (job.undo): a path that sets one without
// telling finish would leave it to the next call.
func TestInlineCallLeavesNothingBehind(t *testing.T) {
	type seen struct {
		cap, md  string
		deadline bool
		reqCap   int
	}
	got := make(chan seen, 1)
	s, addr, _ := testServer(t, WithMaxInFlight(1))
	s.Handle(2, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if string(req) == "warm" {
			return warm(resp), nil
		}
		_, dl := ctx.Deadline()
		got <- seen{string(CapFrom(ctx)), string(MetadataFrom(ctx).Get("k")), dl, cap(req)}
		return append(resp, "ok"...), nil
	})
	c := dial(t, addr)
	call := func(ctx context.Context, req []byte) seen {
		t.Helper()
		out, err := c.Call(ctx, 2, req, nil)
		if err != nil || string(out) != "ok" {
			t.Fatalf("call: %q, %v", out, err)
		}
		return <-got
	}
	plain := func(after string) {
		t.Helper()
		if sn := call(context.Background(), []byte("x")); sn.cap != "" || sn.md != "" || sn.deadline || sn.reqCap > maxKeptBuffer {
			t.Fatalf("a plain call after %s sees cap %q, metadata %q, deadline %v, a request buffer of %d bytes",
				after, sn.cap, sn.md, sn.deadline, sn.reqCap)
		}
	}
	if out, err := c.Call(context.Background(), 2, []byte("warm"), nil); err != nil || len(out) != warmAnswer {
		t.Fatalf("warm-up call: %d bytes, %v", len(out), err)
	}
	plain("none")

	ctx := WithMetadata(WithCap(context.Background(), []byte("token")), "k", "value")
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if sn := call(ctx, []byte("x")); sn.cap != "token" || sn.md != "value" || !sn.deadline {
		t.Fatalf("the call with cap, metadata and deadline sees %+v", sn)
	}
	plain("a call with cap, metadata and a deadline")

	big := bytes.Repeat([]byte{'b'}, maxKeptBuffer+1)
	if sn := call(context.Background(), big); sn.reqCap <= maxKeptBuffer {
		t.Fatalf("a request of %d bytes arrived in a buffer of %d", len(big), sn.reqCap)
	}
	plain(fmt.Sprintf("a request of %d bytes", len(big)))
}

// TestInlineInflatedRequestBufferDropped: a compressed request that
// inflates past maxKeptBuffer (sent without the accept bit, so that
// nothing but the inflation tells finish about the call) leaves no
// buffer that large to the job's next call.
func TestInlineInflatedRequestBufferDropped(t *testing.T) {
	reqCap := make(chan int, 1)
	s, addr, _ := testServer(t, WithMaxInFlight(1), WithCompression(0))
	s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
		reqCap <- cap(req)
		return append(resp, "ok"...), nil
	})
	var zb bytes.Buffer
	zw, _ := flate.NewWriter(&zb, flate.BestSpeed)
	zw.Write(bytes.Repeat([]byte{'b'}, maxKeptBuffer+1))
	zw.Close()
	peer := rawDial(t, addr)
	for i, r := range []wire.Request{
		{Method: 2, PromiseID: 1, Payload: zb.Bytes(), PayloadDeflated: true},
		{Method: 2, PromiseID: 2, Payload: []byte("x")},
	} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &r))
		if a := peer.recvResponse(); a.Status != StatusOK || string(a.Body) != "ok" {
			t.Fatalf("call %d: status %d, %q", i+1, a.Status, a.Body)
		}
		n := <-reqCap
		if i == 0 && n <= maxKeptBuffer {
			t.Fatalf("the compressed request inflated into a buffer of %d bytes", n)
		}
		if i == 1 && n > maxKeptBuffer {
			t.Fatalf("the call after the compressed one has a request buffer of %d bytes, above maxKeptBuffer (%d)", n, maxKeptBuffer)
		}
	}
}

// TestInlineDoneDisarmedForNextCall: a call without a deadline whose
// handler takes its ctx's Done arms the job's done channel (armedAny);
// finish disarms it, so that the job's next call, with a deadline, gets
// a Done that its deadline closes. Left armed, the next call's Done was
// the first call's channel, which no timer closes.
func TestInlineDoneDisarmedForNextCall(t *testing.T) {
	closed := make(chan bool, 1)
	s, addr, _ := testServer(t, WithMaxInFlight(1))
	s.Handle(2, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		switch string(req) {
		case "warm":
			_ = ctx.Done()
			return warm(resp), nil
		case "first":
			_ = ctx.Done()
			return append(resp, "ok"...), nil
		}
		guard := time.NewTimer(30 * time.Second) // a hang guard, not a time limit
		defer guard.Stop()
		select {
		case <-ctx.Done():
			closed <- true
		case <-guard.C:
			closed <- false
		}
		return resp, ctx.Err()
	})
	// A peer by hand: a zapcodec client would also cancel the second
	// call at its deadline, and the cancel closes any armed channel.
	peer := rawDial(t, addr)
	for i, p := range []string{"warm", "first"} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: uint32(i + 1), Payload: []byte(p)}))
		if a := peer.recvResponse(); a.Status != StatusOK {
			t.Fatalf("%s call: status %d, %q", p, a.Status, a.Body)
		}
	}
	peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 2, Payload: []byte("second"), Timeout: 20000, PromiseID: 3}))
	if !<-closed {
		t.Fatal("the second call's deadline passed, and its handler's Done was still open 30 s later")
	}
	if a := peer.recvResponse(); a.Status != StatusDeadlineExceeded {
		t.Fatalf("second call: status %d, %q", a.Status, a.Body)
	}
}

// TestInlineAnswerInItsBufferTooLarge: a result written into the
// handler's resp buffer, within its capacity but above the server's
// largest frame, is answered 500 with the text that says so, as one that
// outgrew the buffer is (TestErrorJourney), not as an empty 500.
func TestInlineAnswerInItsBufferTooLarge(t *testing.T) {
	s, addr, _ := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(256)))
	s.Handle(2, func(_ context.Context, _, resp []byte) ([]byte, error) {
		if cap(resp) < 400 {
			return nil, fmt.Errorf("resp has a capacity of %d bytes", cap(resp))
		}
		return append(resp, make([]byte, 400)...), nil
	})
	c := dial(t, addr)
	_, err := c.Call(context.Background(), 2, nil, nil)
	if se := StatusOf(err); se == nil || se.Code != StatusInternal || !strings.HasPrefix(se.Message, "rpc: answer too large for a frame") {
		t.Fatalf("got %v, want a 500 that says the answer is too large", err)
	}
}

// TestInlineResultReslicedKeepsItsCap: a handler that returns its resp
// resliced to a smaller capacity has the job keep that capacity for its
// next call (invokeBody's rule), inline too. (The capacity stays above
// keptJobBuffer, so that the read loop keeps the job while it waits.)
func TestInlineResultReslicedKeepsItsCap(t *testing.T) {
	const cutCap = keptJobBuffer + 1
	s, addr, _ := testServer(t, WithMaxInFlight(1))
	s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
		switch string(req) {
		case "warm":
			return append(warm(resp), make([]byte, 100)...), nil
		case "cut":
			return append(resp, "ok"...)[:2:cutCap], nil
		}
		return append(resp, strconv.Itoa(cap(resp))...), nil
	})
	c := dial(t, addr)
	for _, p := range []string{"warm", "cut"} {
		if _, err := c.Call(context.Background(), 2, []byte(p), nil); err != nil {
			t.Fatalf("%s call: %v", p, err)
		}
	}
	if out, err := c.Call(context.Background(), 2, []byte("cap?"), nil); err != nil || string(out) != strconv.Itoa(cutCap) {
		t.Fatalf("the call after the cut one: %q, %v; want its resp's capacity, %d", out, err, cutCap)
	}
}
