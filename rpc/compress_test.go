package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mLogs answers a body of the size its request names (a decimal number
// of bytes, getLogs-like records), mNoise as many random bytes.
const (
	mLogs  = 70
	mNoise = 71
)

// logRecords returns n bytes of records like an eth_getLogs answer's:
// an address from a few, two topics, a block number and index, data.
func logRecords(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var addrs [4][20]byte
	for i := range addrs {
		for j := range addrs[i] {
			addrs[i][j] = byte(r.Uint32())
		}
	}
	b := make([]byte, 0, n+200)
	for blk := uint64(18_000_000); len(b) < n; blk++ {
		b = append(b, addrs[r.IntN(len(addrs))][:]...)
		b = append(b, addrs[0][:12]...) // topic 0: the event's signature, the same in most
		b = binary.LittleEndian.AppendUint64(b, blk/4)
		b = binary.LittleEndian.AppendUint32(b, uint32(blk%4))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.IntN(1_000_000))) // an amount
		b = append(b, make([]byte, 24)...)                                 // zero-padded words
	}
	return b[:n]
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}

// compressServer is a server with WithCompression(0) and opts, with mLogs
// and mNoise.
func compressServer(t testing.TB, opts ...ServerOption) (*Server, string) {
	t.Helper()
	s, addr, _ := testServer(t, append([]ServerOption{WithCompression(0)}, opts...)...)
	s.Handle(mLogs, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, logRecords(atoi(req))...), nil
	})
	s.Handle(mNoise, func(_ context.Context, req, resp []byte) ([]byte, error) {
		r := rand.New(rand.NewPCG(3, 4))
		for range atoi(req) {
			resp = append(resp, byte(r.Uint32()))
		}
		return resp, nil
	})
	return s, addr
}

func deflateBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestSpeed)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func inflateBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Both sides with WithCompression: answers of every size come back as
// the handler wrote them (with a deadline on the call too), and on the
// wire a large compressible answer is compressed, a small one (below the
// threshold) and an incompressible one are not.
func TestCompressionRoundTrip(t *testing.T) {
	_, addr := compressServer(t)
	c := dial(t, addr, WithCompression(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range []int{0, 10, 1023, 1024, 5000, 100 << 10, 1 << 20, 4 << 20} {
		for _, m := range []uint32{mLogs, mNoise} {
			if m == mNoise && n > 100<<10 {
				continue
			}
			req := []byte(strconv.Itoa(n))
			out, err := c.Call(ctx, m, req, []byte("prefix"))
			if err != nil {
				t.Fatalf("method %d, %d bytes: %v", m, n, err)
			}
			want := logRecords(n)
			if m == mNoise {
				r := rand.New(rand.NewPCG(3, 4))
				want = want[:0]
				for range n {
					want = append(want, byte(r.Uint32()))
				}
			}
			if !bytes.Equal(out, append([]byte("prefix"), want...)) {
				t.Fatalf("method %d, %d bytes: got %d bytes, want %d", m, n, len(out), len(want)+6)
			}
		}
	}

	// On the wire: a peer that sets the accept bit by hand.
	peer := rawDial(t, addr)
	for i, tc := range []struct {
		m        uint32
		n        int
		deflated bool
	}{{mLogs, 1 << 20, true}, {mLogs, 100 << 10, true}, {mLogs, 2000, true}, {mLogs, 1023, false}, {mNoise, 5000, false}} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: tc.m, PromiseID: uint32(i + 1), Payload: []byte(strconv.Itoa(tc.n)), AcceptDeflate: true}))
		a := peer.recvResponse()
		if a.Status != StatusOK || a.Deflated != tc.deflated || a.NotRun {
			t.Fatalf("%+v: status %d, deflated %v, not run %v", tc, a.Status, a.Deflated, a.NotRun)
		}
		body := a.Body
		if a.Deflated {
			t.Logf("%d bytes of records compressed to %d", tc.n, len(body))
			body = inflateBytes(t, body)
		}
		if len(body) != tc.n {
			t.Fatalf("%+v: %d bytes", tc, len(body))
		}
	}
}

// A peer that does not say it takes compressed answers (a canonical
// client, or a zapcodec one without the option) gets from a server with
// compression on the canonical envelope, byte for byte; a client without
// the option writes the canonical request.
func TestCompressionCanonicalPeer(t *testing.T) {
	_, addr := compressServer(t)
	peer := rawDial(t, addr)
	peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mLogs, PromiseID: 9, Payload: []byte("300000")}))
	kind, env, ok := peer.recv()
	if !ok || kind != wire.KindResponse {
		t.Fatalf("kind %d, ok %v", kind, ok)
	}
	want := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: 9, Body: logRecords(300000)})
	if !bytes.Equal(env, want) {
		t.Fatalf("answer to a canonical request is not the canonical envelope (%d bytes, want %d)", len(env), len(want))
	}

	// The client's side: without the option, the canonical request.
	c, raw := pipeClient(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("ping"), nil)
		done <- err
	}()
	kind, env, ok = raw.recv()
	if !ok || kind != wire.KindRequest {
		t.Fatalf("kind %d, ok %v", kind, ok)
	}
	r, err := wire.ParseRequest(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: r.PromiseID, Payload: []byte("ping")}); !bytes.Equal(env, want) {
		t.Fatalf("request without the option:\n%x\nwant\n%x", env, want)
	}
	raw.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("ping")}))
	if err := receive(t, "the call", done); err != nil {
		t.Fatal(err)
	}
}

// A client with the option says so in each request (the flags word), and
// reads a plain answer (a server without the option, or a canonical one)
// as before; a server without the option answers such a request plainly.
func TestCompressionServerOff(t *testing.T) {
	c, raw := pipeClient(t, WithCompression(0))
	body := logRecords(50000)
	done := make(chan []byte, 1)
	go func() {
		out, err := c.Call(context.Background(), mEcho, []byte("ping"), nil)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	r := raw.recvRequest()
	if !r.AcceptDeflate || string(r.Payload) != "ping" {
		t.Fatalf("request %+v: want AcceptDeflate", r)
	}
	raw.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: body}))
	if out := receive(t, "the call", done); !bytes.Equal(out, body) {
		t.Fatalf("got %d bytes", len(out))
	}

	// A server without the option, asked by hand: a plain answer.
	_, addr, _ := testServer(t)
	peer := rawDial(t, addr)
	peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: body, AcceptDeflate: true}))
	kind, env, ok := peer.recv()
	if !ok || kind != wire.KindResponse {
		t.Fatalf("kind %d ok %v", kind, ok)
	}
	if want := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: 1, Body: body}); !bytes.Equal(env, want) {
		t.Fatal("a server without WithCompression did not answer the canonical envelope")
	}
	// And through a client with the option: the same result.
	c2 := dial(t, addr, WithCompression(0))
	if out, err := c2.Call(context.Background(), mEcho, body, nil); err != nil || !bytes.Equal(out, body) {
		t.Fatalf("echo through a server without compression: %d bytes, %v", len(out), err)
	}
}

// Hostile compressed answers fail their call with ErrDecompress, never
// taking more memory than the largest answer, and the connection's next
// call goes on: a bomb (a small frame that inflates past the maximum
// frame size), malformed data, bytes after the stream; and a compressed
// answer to a client that did not accept one fails with ErrProtocol.
func TestCompressionHostileAnswers(t *testing.T) {
	const maxFrame = 256 << 10
	bomb := deflateBytes(t, make([]byte, 4<<20)) // 4 MiB of zeros
	if len(bomb) > 8<<10 {
		t.Fatalf("bomb of %d bytes", len(bomb))
	}
	good := logRecords(20000)
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"bomb", bomb, "inflates past"},
		{"malformed", []byte("this is not deflate data at all"), "did not inflate"},
		{"truncated", deflateBytes(t, good)[:100], "unexpected EOF"},
		{"trailing bytes", append(deflateBytes(t, good), "junk"...), "4 bytes after the compressed stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, raw := pipeClient(t, WithCompression(0), WithFrameOptions(frame.WithMaxFrameSize(maxFrame)))
			out, err := callAnswered(t, c, raw, []byte("keep"), wire.Response{Status: StatusOK, Body: tc.body, Deflated: true})
			if !errors.Is(err, ErrDecompress) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrDecompress and %q", err, tc.want)
			}
			if string(out) != "keep" {
				t.Fatalf("the call returned %q", out)
			}
			// The connection goes on.
			out, err = callAnswered(t, c, raw, nil, wire.Response{Status: StatusOK, Body: deflateBytes(t, good), Deflated: true})
			if err != nil || !bytes.Equal(out, good) {
				t.Fatalf("next call: %d bytes, %v", len(out), err)
			}
		})
	}
	t.Run("not accepted", func(t *testing.T) {
		c, raw := pipeClient(t)
		_, err := callAnswered(t, c, raw, nil, wire.Response{Status: StatusOK, Body: deflateBytes(t, good), Deflated: true})
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("err %v, want ErrProtocol", err)
		}
		if out, err := callAnswered(t, c, raw, nil, wire.Response{Status: StatusOK, Body: good}); err != nil || !bytes.Equal(out, good) {
			t.Fatalf("next call: %d bytes, %v", len(out), err)
		}
	})
}

// The bomb's memory: inflating stops one byte past the limit, and the
// buffer it grew is no larger than that (a page of rounding aside).
func TestInflateBounded(t *testing.T) {
	const limit = 1 << 20
	bomb := deflateBytes(t, make([]byte, 64<<20))
	out, err := inflate(nil, bomb, limit)
	if !errors.Is(err, ErrDecompress) || len(out) != 0 {
		t.Fatalf("len %d, err %v", len(out), err)
	}
	if cap(out) > limit+1+8<<10 {
		t.Fatalf("grew to %d bytes for a limit of %d", cap(out), limit)
	}
	// Exactly the limit inflates.
	if out, err := inflate([]byte("x"), deflateBytes(t, make([]byte, limit)), limit); err != nil || len(out) != limit+1 {
		t.Fatalf("len %d, err %v", len(out), err)
	}
}

// Response metadata goes beside a compressed body, uncompressed; an
// answer refused unrun may come compressed and keeps its flag; the answer
// budget a handler reserved goes back once its compressed answer left.
func TestCompressionMetadataNotRunBudget(t *testing.T) {
	s, addr := compressServer(t)
	body := logRecords(200 << 10)
	s.Handle(72, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := ReserveAnswer(ctx, len(body)); err != nil {
			return resp, err
		}
		if err := SetResponseMetadata(ctx, "server-timing", "db;dur=53"); err != nil {
			return resp, err
		}
		return append(resp, body...), nil
	})
	c := dial(t, addr, WithCompression(0))
	var md Metadata
	out, err := c.Call(WithResponseMetadata(context.Background(), &md), 72, nil, nil)
	if err != nil || !bytes.Equal(out, body) {
		t.Fatalf("%d bytes, %v", len(out), err)
	}
	if got := string(md.Get("server-timing")); got != "db;dur=53" {
		t.Fatalf("metadata %q", got)
	}
	await(t, "the answer budget back to 0", func() bool { return s.Stats().AnswerBytes == 0 })

	peer := rawDial(t, addr)
	peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 72, PromiseID: 3, AcceptDeflate: true}))
	a := peer.recvResponse()
	if !a.Deflated || len(a.Metadata) == 0 || !bytes.Equal(inflateBytes(t, a.Body), body) {
		t.Fatalf("deflated %v, metadata %q, body %d bytes", a.Deflated, a.Metadata, len(a.Body))
	}

	// A compressed refusal: the not-run flag reaches the caller.
	cl, raw := pipeClient(t, WithCompression(0))
	_, err = callAnswered(t, cl, raw, nil, wire.Response{Status: StatusUnavailable, NotRun: true, Deflated: true, Body: deflateBytes(t, []byte("going away"))})
	if !IsRetryable(err) || !strings.Contains(err.Error(), "going away") {
		t.Fatalf("err %v, want a retryable 503 with the text", err)
	}
}

// Requests: a client with the option compresses a payload of at least
// its threshold only once an answer said the server takes compressed
// requests; a peer that never says so (a canonical server, or one
// without the option) never gets one, and a client without the option
// ignores the announcement.
func TestCompressionRequestsNegotiated(t *testing.T) {
	payload := logRecords(100 << 10)
	c, raw := pipeClient(t, WithCompression(0))
	call := func(req []byte) wire.Request {
		done := make(chan error, 1)
		go func() {
			out, err := c.Call(context.Background(), mEcho, req, nil)
			if err == nil && string(out) != "ok" {
				err = errors.New("wrong answer " + string(out))
			}
			done <- err
		}()
		r := raw.recvRequest()
		if !r.AcceptDeflate {
			t.Fatal("a request without the accept bit")
		}
		raw.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("ok"), TakesDeflate: r.Method == mEcho && len(r.Payload) == 1}))
		if err := receive(t, "the call", done); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 3 { // a peer that does not say it takes them
		if r := call(payload); r.PayloadDeflated || !bytes.Equal(r.Payload, payload) {
			t.Fatalf("a compressed request (%d bytes) to a server that did not say it takes them", len(r.Payload))
		}
	}
	call([]byte("x")) // answered with the announcement
	r := call(payload)
	if !r.PayloadDeflated || len(r.Payload) >= len(payload)/4 || !bytes.Equal(inflateBytes(t, r.Payload), payload) {
		t.Fatalf("after the announcement: deflated %v, %d bytes", r.PayloadDeflated, len(r.Payload))
	}
	if r := call(payload[:1000]); r.PayloadDeflated { // below the threshold
		t.Fatal("a payload below the threshold went compressed")
	}

	// A client without the option: canonical requests, announcement or not.
	c, raw = pipeClient(t)
	for range 2 {
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), mEcho, payload, nil)
			done <- err
		}()
		kind, env, ok := raw.recv()
		if !ok || kind != wire.KindRequest {
			t.Fatalf("kind %d ok %v", kind, ok)
		}
		r, err := wire.ParseRequest(env)
		if err != nil {
			t.Fatal(err)
		}
		if want := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: r.PromiseID, Payload: payload}); !bytes.Equal(env, want) {
			t.Fatal("a client without the option sent a non-canonical request")
		}
		raw.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, TakesDeflate: true}))
		if err := receive(t, "the call", done); err != nil {
			t.Fatal(err)
		}
	}
}

// Both sides zapcodec's with the option: after the first answer, large
// payloads travel compressed and reach the handler as sent.
func TestCompressionRequestsRoundTrip(t *testing.T) {
	s, addr := compressServer(t)
	c := dial(t, addr, WithCompression(0))
	payload := logRecords(300 << 10)
	var in [3]uint64
	for i := range in {
		before := s.Stats().BytesIn
		out, err := c.Call(context.Background(), mEcho, payload, nil)
		if err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("call %d: %d bytes, %v", i, len(out), err)
		}
		in[i] = s.Stats().BytesIn - before
	}
	if in[0] < uint64(len(payload)) || in[1] > uint64(len(payload))/4 || in[2] > uint64(len(payload))/4 {
		t.Fatalf("bytes the server read per call: %v, want the first plain (%d bytes), the others compressed", in, len(payload))
	}
}

// Hostile compressed requests are answered 400, not run, and the
// connection's next call is served: a bomb past the largest frame,
// malformed data, and any compressed request to a server without the
// option (it never said it takes them).
func TestCompressionHostileRequests(t *testing.T) {
	const maxFrame = 256 << 10
	s, addr := compressServer(t, WithFrameOptions(frame.WithMaxFrameSize(maxFrame)))
	ran := make(chan struct{}, 10)
	s.Handle(73, func(_ context.Context, req, resp []byte) ([]byte, error) {
		ran <- struct{}{}
		return resp, nil
	})
	_, plainAddr, _ := testServer(t)
	bomb := deflateBytes(t, make([]byte, 4<<20))
	for _, tc := range []struct {
		addr    string
		method  uint32
		payload []byte
		want    string
	}{
		{addr, 73, bomb, "inflates past"},
		{addr, 73, []byte("not deflate data"), "did not inflate"},
		{addr, 73, append(deflateBytes(t, []byte("abc")), 'x'), "after the compressed stream"},
		{plainAddr, mEcho, deflateBytes(t, []byte("abc")), "does not take"},
	} {
		peer := rawDial(t, tc.addr)
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: tc.method, PromiseID: 1, Payload: tc.payload, PayloadDeflated: true}))
		a := peer.recvResponse()
		if a.Status != StatusBadRequest || !strings.Contains(string(a.Body), tc.want) {
			t.Fatalf("answer %d %q, want 400 with %q", a.Status, a.Body, tc.want)
		}
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("next")}))
		if a := peer.recvResponse(); a.Status != StatusOK || string(a.Body) != "next" || a.PromiseID != 2 {
			t.Fatalf("next call: %d %q", a.Status, a.Body)
		}
	}
	select {
	case <-ran:
		t.Fatal("the handler ran for a request that did not inflate")
	default:
	}
}
