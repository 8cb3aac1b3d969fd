package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Attacks on the server's fast paths (session 28): the job's undo word,
// runInline's own finish and inlineAnswer, the fixed-layout parses.

// TestInlineUndoThenPlainCall: after each call that gives its job
// something to undo (response metadata, a reserved answer budget, a
// compressed answer, a deadline refused, a deadline with cap and
// metadata, a grown request buffer, a handler's panic after it set
// response metadata), the job's next call, a plain one, is answered with
// exactly the canonical bytes (no metadata, no flags, not compressed),
// and the budget reserved before is free again. One call in flight, so
// that every call runs inline on the same job.
func TestInlineUndoThenPlainCall(t *testing.T) {
	const budget = 1000
	s, addr, _ := testServer(t, WithMaxInFlight(1), WithCompression(0), WithAnswerBudget(budget, budget), WithLogger(discardLogger()))
	big := string(logRecords(4096)) // compresses well, within DefaultMaxInflateRatio
	s.Handle(2, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		switch string(req) {
		case "warm":
			return warm(resp), nil
		case "md":
			if err := SetResponseMetadata(ctx, "k", "v"); err != nil {
				return nil, err
			}
		case "md-error":
			SetResponseMetadata(ctx, "k", "v")
			return nil, errors.New("failed with metadata")
		case "md-panic":
			SetResponseMetadata(ctx, "k", "v")
			panic("after metadata")
		case "reserve":
			if err := ReserveAnswer(ctx, budget); err != nil {
				return nil, err
			}
		case "big":
			return append(resp, big...), nil
		}
		if strings.HasPrefix(string(req), "grown") {
			return append(resp, "grown"...), nil
		}
		return append(resp, req...), nil
	})
	peer := rawDial(t, addr)
	pid := uint32(0)
	call := func(r wire.Request) wire.Response {
		t.Helper()
		pid++
		r.Method, r.PromiseID = 2, pid
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &r))
		a := peer.recvResponse()
		if a.PromiseID != pid {
			t.Fatalf("answer for promise %d, want %d", a.PromiseID, pid)
		}
		return a
	}
	// plain makes a plain call and checks its answer's bytes.
	plain := func(after string) {
		t.Helper()
		pid++
		peer.send(wire.KindRequest, wire.AppendPlainRequest(nil, 2, pid, 0, []byte("plain")))
		kind, env, ok := peer.recv()
		if !ok || kind != wire.KindResponse {
			t.Fatalf("after %s: frame kind %d (ok %v), want an answer", after, kind, ok)
		}
		want := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid, Body: []byte("plain")})
		if !bytes.Equal(env, want) {
			r, err := wire.ParseResponse(env)
			t.Fatalf("after %s: the plain call's answer is %x (%+v, %v), want the canonical %x", after, env, r, err, want)
		}
	}
	if a := call(wire.Request{Payload: []byte("warm")}); a.Status != StatusOK {
		t.Fatalf("warm-up: status %d", a.Status)
	}
	plain("the warm-up")
	for _, tc := range []struct {
		name string
		r    wire.Request
		want func(wire.Response) error
	}{
		{"response metadata", wire.Request{Payload: []byte("md")}, func(a wire.Response) error {
			if len(a.Metadata) == 0 {
				return errors.New("no metadata")
			}
			return nil
		}},
		{"response metadata and an error", wire.Request{Payload: []byte("md-error")}, func(a wire.Response) error {
			if a.Status != StatusInternal || len(a.Metadata) == 0 {
				return fmt.Errorf("status %d, %d bytes of metadata", a.Status, len(a.Metadata))
			}
			return nil
		}},
		{"response metadata and a panic", wire.Request{Payload: []byte("md-panic")}, func(a wire.Response) error {
			if a.Status != StatusInternal {
				return fmt.Errorf("status %d", a.Status)
			}
			return nil
		}},
		{"the whole answer budget reserved", wire.Request{Payload: []byte("reserve")}, nil},
		{"a compressed answer", wire.Request{Payload: []byte("big"), AcceptDeflate: true}, func(a wire.Response) error {
			if !a.Deflated {
				return errors.New("not compressed")
			}
			return nil
		}},
		{"a deadline refused", wire.Request{Payload: []byte("refused"), Timeout: 1}, func(a wire.Response) error {
			// 1 µs: passed when the handler would start (on a machine
			// fast enough to run it first, answered OK).
			if a.Status != StatusDeadlineExceeded && a.Status != StatusOK {
				return fmt.Errorf("status %d %q", a.Status, a.Body)
			}
			return nil
		}},
		{"a deadline, cap and metadata", wire.Request{Payload: []byte("ext"), Timeout: 3600e6, Cap: []byte("cap"), Metadata: appendPairs(nil, []string{"k", "v"})}, nil},
		{"a grown request buffer", wire.Request{Payload: []byte("grown" + strings.Repeat("g", maxKeptBuffer))}, nil},
	} {
		a := call(tc.r)
		if tc.want != nil {
			if err := tc.want(a); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		} else if a.Status != StatusOK {
			t.Fatalf("%s: status %d %q", tc.name, a.Status, a.Body)
		}
		plain(tc.name)
		if got := s.Stats().AnswerBytes; got != 0 {
			t.Fatalf("after %s: %d bytes of answer budget still reserved", tc.name, got)
		}
	}
	// The budget is whole: a second reservation of all of it does not wait.
	if a := call(wire.Request{Payload: []byte("reserve")}); a.Status != StatusOK {
		t.Fatalf("second reservation: status %d %q", a.Status, a.Body)
	}
}

// TestTakeOverKeepsInlineRequest: a handler blocked inline while the
// frames behind it are buffered (the read loop takes each with TryNext):
// the watchdog hands the read loop to a worker, which reads and answers
// those frames, reusing the reader's buffers (poisoned once released,
// with -tags zapdebug); the blocked handler's request is its own copy and
// reads the same when it goes on, and its answer and the others' are
// whole.
func TestTakeOverKeepsInlineRequest(t *testing.T) {
	s, addr, _ := testServer(t)
	started, release := make(chan struct{}), make(chan struct{})
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	const blockedLen = 3000 // above the reader's inline buffer
	s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-release
		if !bytes.Equal(req, pattern(blockedLen, 1)) {
			return nil, errors.New("the blocked handler's request changed while it waited")
		}
		return append(resp, req...), nil
	})
	s.Handle(3, echo)
	peer := rawDial(t, addr)
	// One write: the blocked call, then the calls behind it, buffered
	// whole (or nearly) when the read loop takes the first.
	var batch []byte
	batch = append(batch, frameBytes(wire.KindRequest, wire.AppendPlainRequest(nil, 2, 1, 0, pattern(blockedLen, 1)))...)
	const behind = 40
	for i := 0; i < behind; i++ {
		var env []byte
		if i%2 == 0 {
			env = wire.AppendPlainRequest(nil, 3, uint32(100+i), 0, pattern(200+50*i, byte(i)))
		} else {
			env = wire.AppendRequest(nil, &wire.Request{Method: 3, PromiseID: uint32(100 + i), Timeout: 3600e6, Payload: pattern(200+50*i, byte(i))})
		}
		batch = append(batch, frameBytes(wire.KindRequest, env)...)
	}
	if _, err := peer.Write(batch); err != nil {
		t.Fatal(err)
	}
	receive(t, "the blocked handler to start", started)
	// The calls behind it are answered once the watchdog has taken the
	// read loop over.
	for n := 0; n < behind; n++ {
		a := peer.recvResponse()
		i := int(a.PromiseID) - 100
		if a.Status != StatusOK || i < 0 || i >= behind || !bytes.Equal(a.Body, pattern(200+50*i, byte(i))) {
			t.Fatalf("answer %d: promise %d status %d, %d body bytes", n, a.PromiseID, a.Status, len(a.Body))
		}
	}
	close(release)
	if a := peer.recvResponse(); a.PromiseID != 1 || a.Status != StatusOK || !bytes.Equal(a.Body, pattern(blockedLen, 1)) {
		t.Fatalf("the blocked call's answer: promise %d status %d %q", a.PromiseID, a.Status, a.Body[:min(len(a.Body), 80)])
	}
}

// TestFastParsesAtFrameLimit: requests whose frames are exactly the
// server's largest, in the layouts the read loop parses by hand (the
// plain request, the request with a deadline), buffered whole behind
// another frame (TryNext takes them) or alone, are run and answered.
// (A frame one byte over is s29-oversize's: not asserted here.)
func TestFastParsesAtFrameLimit(t *testing.T) {
	const max = 2000
	s, addr, _ := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(max)))
	s.Handle(2, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, fmt.Sprint(len(req), req[0], req[len(req)-1])...), nil
	})
	peer := rawDial(t, addr)
	plainEnv := func(pid uint32) []byte {
		p := bytes.Repeat([]byte{byte(pid)}, max-1-wire.RequestOverhead)
		return wire.AppendPlainRequest(nil, 2, pid, 0, p)
	}
	deadlineEnv := func(pid uint32) []byte {
		p := bytes.Repeat([]byte{byte(pid)}, max-1-wire.DeadlineRequestOverhead)
		env := wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: pid, Timeout: 3600e6, Payload: p})
		if len(env) != wire.DeadlineRequestOverhead+len(p) {
			t.Fatalf("AppendRequest wrote %d bytes for a request with a deadline, want %d", len(env), wire.DeadlineRequestOverhead+len(p))
		}
		return env
	}
	var batch []byte
	for pid := uint32(1); pid <= 6; pid++ {
		env := plainEnv(pid)
		if pid%2 == 0 {
			env = deadlineEnv(pid)
		}
		if f := frameBytes(wire.KindRequest, env); len(f) != 4+max {
			t.Fatalf("frame of %d bytes, want %d", len(f), 4+max)
		} else {
			batch = append(batch, f...)
		}
	}
	if _, err := peer.Write(batch); err != nil {
		t.Fatal(err)
	}
	for pid := uint32(1); pid <= 6; pid++ {
		n := max - 1 - wire.RequestOverhead
		if pid%2 == 0 {
			n = max - 1 - wire.DeadlineRequestOverhead
		}
		want := fmt.Sprint(n, pid, pid)
		if a := peer.recvResponse(); a.PromiseID != pid || a.Status != StatusOK || string(a.Body) != want {
			t.Fatalf("answer: promise %d status %d %q, want %d 200 %q", a.PromiseID, a.Status, a.Body, pid, want)
		}
	}
}
