package rpc

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A hostile server that answers each of a client's pending calls with a
// small compressed frame that inflates to nearly the largest answer: the
// answers the callers hold (promises waited for, their results kept)
// take memory that follows the bytes received, at most
// DefaultMaxInflateRatio times them, not the calls times the largest
// answer (16 calls, 4 MiB frames: 64 MiB held for 82 KB received,
// before). Each such call fails alone, with an error matching
// ErrDecompress that names the bound, and the connection goes on.
func TestCompressionAnswerBombsBounded(t *testing.T) {
	const (
		maxFrame = 4 << 20
		calls    = 16
	)
	c, raw := pipeClient(t, WithCompression(0), WithFrameOptions(frame.WithMaxFrameSize(maxFrame)))
	// The largest body a frame can carry (so within the client's frame
	// bound), all zeros: some 4 KiB compressed.
	bomb := deflateBytes(t, make([]byte, maxFrame-1-wire.ResponseOverhead-wire.DeflatedOverhead))
	ctx := context.Background()
	// The requests are read as they are sent (a net.Pipe's write waits
	// for its read).
	pidc := make(chan []uint32, 1)
	go func() {
		var pids []uint32
		for range calls {
			kind, env, ok := raw.recv()
			r, err := wire.ParseRequest(env)
			if !ok || kind != wire.KindRequest || err != nil {
				break
			}
			pids = append(pids, r.PromiseID)
		}
		pidc <- pids
	}()
	promises := make([]Promise, calls)
	for i := range promises {
		p, err := c.Send(ctx, mEcho, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		promises[i] = p
	}
	pids := receive(t, "the requests", pidc)
	if len(pids) != calls {
		t.Fatalf("%d requests read, want %d", len(pids), calls)
	}
	answers := make([][]byte, calls)
	received := 0
	for i, pid := range pids {
		answers[i] = wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid, Body: bomb, Deflated: true})
		received += 5 + len(answers[i]) // the frame's header too
	}
	before := heapInUse()
	for _, a := range answers {
		raw.send(wire.KindResponse, a)
	}
	outs := make([][]byte, calls)
	errs := make([]error, calls)
	for i, p := range promises {
		outs[i], errs[i] = p.Wait(ctx)
	}
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(outs)
	held := 0
	for _, out := range outs {
		held += len(out)
	}
	t.Logf("%d answers of %d bytes (%d received): the callers hold %d KiB of answers, the heap grew %d KiB",
		calls, len(bomb), received, held>>10, grown>>10)
	if limit := int64(DefaultMaxInflateRatio*received + 1<<20); grown > limit {
		t.Errorf("the heap grew %d KiB for %d compressed answers, %d bytes received: want at most %d KiB (100 times the bytes received, and 1 MiB)",
			grown>>10, calls, received, limit>>10)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrDecompress) || !strings.Contains(err.Error(), "WithMaxInflateRatio") {
			t.Fatalf("call %d: %d bytes, err %v: want ErrDecompress naming WithMaxInflateRatio", i, len(outs[i]), err)
		}
	}
	// The connection goes on.
	good := logRecords(1 << 20)
	out, err := callAnswered(t, c, raw, nil, wire.Response{Status: StatusOK, Body: deflateBytes(t, good), Deflated: true})
	if err != nil || !bytes.Equal(out, good) {
		t.Fatalf("next call: %d bytes, %v", len(out), err)
	}
}

// Compressed answers within the bound inflate, and those past it fail
// alone: an answer that compresses as real payloads do, whatever its
// size up to the frame's bound; one that compresses 800 times (1 MiB of
// zeros) only into a call's buffer with room for it, or on a client that
// takes a larger ratio; past the room by a byte, it fails.
func TestCompressionAnswerRatio(t *testing.T) {
	zeros := make([]byte, 1<<20)
	for _, tc := range []struct {
		name  string
		opts  []ClientOption
		body  []byte
		resp  []byte
		fails bool
	}{
		{"records", nil, logRecords(8 << 20), nil, false},
		{"small zeros", nil, zeros[:4<<10], nil, false},
		{"zeros", nil, zeros, nil, true},
		{"zeros, ratio 0 is the default", []ClientOption{WithMaxInflateRatio(0)}, zeros, nil, true},
		{"zeros, ratio 10 is the default", []ClientOption{WithMaxInflateRatio(10)}, zeros, nil, true},
		{"records, ratio 2 is the default", []ClientOption{WithMaxInflateRatio(2)}, logRecords(1 << 20), nil, false},
		{"zeros into room", nil, zeros, make([]byte, 3, 3+len(zeros)), false},
		{"zeros into room a byte short", nil, zeros, make([]byte, 3, 2+len(zeros)), true},
		{"zeros, ratio 2000", []ClientOption{WithMaxInflateRatio(2000)}, zeros, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, raw := pipeClient(t, append([]ClientOption{WithCompression(0)}, tc.opts...)...)
			out, err := callAnswered(t, c, raw, tc.resp, wire.Response{Status: StatusOK, Body: deflateBytes(t, tc.body), Deflated: true})
			switch {
			case tc.fails && (!errors.Is(err, ErrDecompress) || !strings.Contains(err.Error(), "WithMaxInflateRatio")):
				t.Fatalf("%d bytes, err %v: want ErrDecompress naming WithMaxInflateRatio", len(out), err)
			case tc.fails && len(out) != len(tc.resp):
				t.Fatalf("the failed call returned %d bytes, want the %d of its buffer", len(out), len(tc.resp))
			case !tc.fails && (err != nil || !bytes.Equal(out[len(tc.resp):], tc.body)):
				t.Fatalf("%d bytes, err %v: want the %d bytes answered", len(out), err, len(tc.body))
			}
			// The connection goes on.
			good := logRecords(100 << 10)
			out, err = callAnswered(t, c, raw, nil, wire.Response{Status: StatusOK, Body: deflateBytes(t, good), Deflated: true})
			if err != nil || !bytes.Equal(out, good) {
				t.Fatalf("next call: %d bytes, %v", len(out), err)
			}
		})
	}
}

// inflateLimit: the ratio times the frame, or the room when that is
// more, never past the largest answer; a ratio whose product would
// overflow an int is the largest answer, one below the default the
// default.
func TestInflateLimit(t *testing.T) {
	const maxFrame = 1 << 20
	most := maxFrame - 1 - wire.ResponseOverhead
	for _, tc := range []struct {
		ratio, frame, room int
		want               int
		byRatio            bool
	}{
		{0, 100, 0, 100 * DefaultMaxInflateRatio, true},
		{10, 100, 0, 100 * DefaultMaxInflateRatio, true}, // below the default: the default
		{200, 100, 0, 20000, true},
		{200, 100, 19999, 20000, true},
		{200, 100, 20001, 20001, true},
		{200, 100, most, most, false},
		{200, most / 200, 0, most / 200 * 200, true},
		{200, most/200 + 1, 0, most, false},
		{200, 100, most + 5, most, false},
		{math.MaxInt, 2, 0, most, false},
	} {
		c, _ := pipeClient(t, WithMaxInflateRatio(tc.ratio), WithFrameOptions(frame.WithMaxFrameSize(maxFrame)))
		if got, byRatio := c.inflateLimit(tc.frame, tc.room); got != tc.want || byRatio != tc.byRatio {
			t.Errorf("ratio %d, frame %d, room %d: %d (by ratio %v), want %d (%v)", tc.ratio, tc.frame, tc.room, got, byRatio, tc.want, tc.byRatio)
		}
	}
}

// TestCompressionServerSendsHighRatioPlain: a zapcodec server sends plain
// an answer that would inflate more than DefaultMaxInflateRatio times its
// compressed bytes, so that a zapcodec client with the default ratio
// takes it (1 MiB of zeros, which DEFLATE shrinks some 800 times), and
// compressed the answers within it (records, 8 times). On the wire, to a
// peer that asks for compression.
func TestCompressionServerSendsHighRatioPlain(t *testing.T) {
	t.Parallel()
	s, addr := compressServer(t)
	const mZeros = 72
	s.Handle(mZeros, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, make([]byte, atoi(req))...), nil
	})
	c := dial(t, addr, WithCompression(0))
	out, err := c.Call(context.Background(), mZeros, []byte("1048576"), nil)
	if err != nil || len(out) != 1<<20 || bytes.Count(out, []byte{0}) != 1<<20 {
		t.Fatalf("1 MiB of zeros: %d bytes, %v; want them all", len(out), err)
	}
	peer := rawDial(t, addr)
	for i, tc := range []struct {
		m        uint32
		n        int
		deflated bool
	}{{mZeros, 1 << 20, false}, {mZeros, 4 << 10, false}, {mLogs, 2000, true}, {mLogs, 1 << 20, true}} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: tc.m, PromiseID: uint32(i + 1), Payload: []byte(strconv.Itoa(tc.n)), AcceptDeflate: true}))
		a := peer.recvResponse()
		if a.Status != StatusOK || a.Deflated != tc.deflated {
			t.Fatalf("method %d, %d bytes: status %d, deflated %v; want deflated %v", tc.m, tc.n, a.Status, a.Deflated, tc.deflated)
		}
		if body := a.Body; tc.deflated && len(inflateBytes(t, body)) > DefaultMaxInflateRatio*len(body) {
			t.Fatalf("method %d, %d bytes: compressed to %d bytes, inflating more than %d times", tc.m, tc.n, len(body), DefaultMaxInflateRatio)
		}
	}
}
