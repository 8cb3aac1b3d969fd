//go:build !race

package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A warm unary call allocates nothing: client and server run in this
// process over a real loopback TCP connection, so the count covers both
// sides (client Call, server read loop, worker, handler, answer write,
// client read loop).
func TestAllocsUnaryCall(t *testing.T) {
	for _, size := range []int{0, 64, 4096, 200 << 10} { // 200 KiB: writev answer
		_, addr, _ := testServer(t)
		c := dial(t, addr)
		req := bytes.Repeat([]byte{7}, size)
		resp := make([]byte, 0, size)
		ctx := context.Background()
		call := func() {
			out, err := c.Call(ctx, mEcho, req, resp[:0])
			if err != nil || len(out) != size {
				t.Fatalf("call: %d bytes, %v", len(out), err)
			}
		}
		for i := 0; i < 100; i++ {
			call()
		}
		if n := testing.AllocsPerRun(2000, call); n != 0 {
			t.Errorf("%d-byte unary call: %v allocs, want 0", size, n)
		}
	}
}

// The same on a server with a connection age (WithMaxConnectionAge): the
// age is one more bound on the read loop's deadline, and costs a call
// nothing.
func TestAllocsUnaryCallMaxAge(t *testing.T) {
	_, addr, _ := testServer(t, WithMaxConnectionAge(time.Hour, time.Minute))
	c := dial(t, addr)
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	call := func() {
		if _, err := c.Call(context.Background(), mEcho, req, resp[:0]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		call()
	}
	if n := testing.AllocsPerRun(2000, call); n != 0 {
		t.Errorf("unary call on a connection with an age: %v allocs, want 0", n)
	}
	if c.Draining() {
		t.Fatal("a connection an hour from its age was sent a go-away")
	}
}

// The same with a cancelable context carrying a deadline (the caller's
// context is allocated by the caller, outside the measured call), which
// every call shares.
func TestAllocsUnaryCallWithDeadline(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 1<<40)
	defer cancel()
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	call := func() {
		if _, err := c.Call(ctx, mEcho, req, resp[:0]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		call()
	}
	// The calls share ctx: they wait under the client's watch of it
	// (ctxwatch.go), made during the warm-up.
	if w := c.watch.Load(); w == nil || w.done != ctx.Done() {
		t.Fatal("no watch of the ctx the calls share")
	}
	if n := testing.AllocsPerRun(2000, call); n != 0 {
		t.Errorf("unary call with deadline ctx: %v allocs, want 0", n)
	}
}

// A handler that uses its ctx as a real context (a base context's value,
// CallInfo, Done, Err, Deadline) still costs no allocation per call.
func TestAllocsHandlerContext(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	s, addr, _ := testServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		m, _, ok := CallInfo(ctx)
		if !ok || m != 5 || ctx.Value(key{}) != "v" || ctx.Err() != nil || ctx.Done() == nil {
			return resp, Errorf(StatusBadRequest, "bad ctx")
		}
		if _, ok := ctx.Deadline(); ok {
			return resp, Errorf(StatusBadRequest, "deadline")
		}
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	call := func() {
		if out, err := c.Call(context.Background(), 5, req, resp[:0]); err != nil || len(out) != len(req) {
			t.Fatalf("call: %q %v", out, err)
		}
	}
	for i := 0; i < 100; i++ {
		call()
	}
	if n := testing.AllocsPerRun(2000, call); n != 0 {
		t.Errorf("call whose handler reads its ctx: %v allocs, want 0", n)
	}
}

// With a trivial interceptor on both sides and an observer on both sides,
// a warm call still allocates nothing (the chains are built once).
func TestAllocsUnaryCallInterceptedObserved(t *testing.T) {
	trivial := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		return next(ctx, req, resp)
	}
	trivialC := func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		return invoke(ctx, method, req, resp)
	}
	var n atomic.Int64
	obs := func(ev CallEvent) { n.Add(int64(ev.BytesIn)) }
	for _, tc := range []struct {
		name string
		so   []ServerOption
		co   []ClientOption
	}{
		{"interceptors", []ServerOption{WithInterceptors(trivial, trivial)}, []ClientOption{WithClientInterceptors(trivialC, trivialC)}},
		{"observer", []ServerOption{WithObserver(obs)}, []ClientOption{WithObserver(obs)}},
		{"both", []ServerOption{WithInterceptors(trivial), WithObserver(obs)}, []ClientOption{WithClientInterceptors(trivialC), WithObserver(obs)}},
		// Several observers are made one at construction: each call
		// hands its event to each in turn, allocating nothing.
		{"three observers", []ServerOption{WithObserver(obs), WithObserver(obs), WithObserver(obs)}, []ClientOption{WithObserver(obs), WithObserver(obs), WithObserver(obs)}},
	} {
		_, addr, _ := testServer(t, tc.so...)
		c := dial(t, addr, tc.co...)
		req := []byte("0123456789abcdef")
		resp := make([]byte, 0, 64)
		ctx := context.Background()
		for _, cl := range []Caller{c} {
			call := func() {
				if out, err := cl.Call(ctx, mEcho, req, resp[:0]); err != nil || len(out) != len(req) {
					t.Fatal(err)
				}
			}
			for i := 0; i < 100; i++ {
				call()
			}
			if a := testing.AllocsPerRun(2000, call); a != 0 {
				t.Errorf("%s, %T: %v allocs per call, want 0", tc.name, cl, a)
			}
		}
	}
	if n.Load() == 0 {
		t.Error("observer never ran")
	}
}

// With an observer, a promise's calls allocate nothing either: the
// promise carries what its event at Wait needs. Send then Wait, and a
// pipelined pair (Send, Promise.Call, Wait), each seen once a call.
// The same with two observers, each of which sees each call.
func TestAllocsPromiseObserved(t *testing.T) {
	for _, observers := range []int64{1, 2} {
		t.Run(fmt.Sprint(observers, " observers"), func(t *testing.T) { allocsPromiseObserved(t, observers) })
	}
}

func allocsPromiseObserved(t *testing.T, observers int64) {
	var n atomic.Int64
	cl, _ := pipelineServer(t, func() error { return nil })
	var opts []ClientOption
	for range observers {
		opts = append(opts, WithObserver(func(ev CallEvent) { n.Add(1) }))
	}
	c := dial(t, cl.Addr().String(), opts...)
	ctx := context.Background()
	req := []byte("k")
	a, b := make([]byte, 0, 64), make([]byte, 0, 64)
	for _, tc := range []struct {
		name  string
		calls int64
		run   func()
	}{{
		name: "Send, Wait", calls: 1,
		run: func() {
			p, err := c.Send(ctx, mLookup, req, a[:0])
			if err != nil {
				t.Fatal(err)
			}
			if out, err := p.Wait(ctx); err != nil || string(out) != "id:k" {
				t.Fatalf("%q %v", out, err)
			}
		},
	}, {
		name: "Send, Promise.Call, Wait", calls: 2,
		run: func() {
			p, err := c.Send(ctx, mLookup, req, a[:0])
			if err != nil {
				t.Fatal(err)
			}
			if out, err := p.Call(ctx, mFetch, b[:0]); err != nil || string(out) != "fetched(id:k)" {
				t.Fatalf("%q %v", out, err)
			}
			if out, err := p.Wait(ctx); err != nil || string(out) != "id:k" {
				t.Fatalf("%q %v", out, err)
			}
		},
	}} {
		for range 100 {
			tc.run()
		}
		n.Store(0)
		const runs = 2000
		if allocs := testing.AllocsPerRun(runs, tc.run); allocs != 0 {
			t.Errorf("%s, observed: %v allocs, want 0", tc.name, allocs)
		}
		if got, want := n.Load(), (runs+1)*tc.calls*observers; got != want { // AllocsPerRun runs once more to warm up
			t.Errorf("%s: %d events, want %d", tc.name, got, want)
		}
	}
}

// A call the server answers without a handler (here 404 and a target
// without pipelining) allocates nothing on the server, with an observer
// too (or two): its event is passed by value like a handler's call's. The
// peer is raw, with its frames made before the count.
func TestAllocsUnrunCallObserved(t *testing.T) {
	var n atomic.Int64
	obs := func(ev CallEvent) { n.Add(int64(ev.BytesOut)) }
	for _, tc := range []struct {
		name string
		req  wire.Request
		body string
	}{
		{"404", wire.Request{Method: 77, PromiseID: 1, Payload: []byte("abc")}, NoSuchMethod},
		{"target without pipelining", wire.Request{Method: mEcho, PromiseID: 2, Target: 1}, pipeliningOff},
	} {
		for _, opts := range [][]ServerOption{{WithObserver(obs)}, {WithObserver(obs), WithObserver(obs)}} {
			allocsUnrunCall(t, tc.name, tc.req, tc.body, opts)
		}
	}
	if n.Load() == 0 {
		t.Error("observer never ran")
	}
}

// allocsUnrunCall checks that a call the server answers without a
// handler, with the observers of opts, allocates nothing on the server.
func allocsUnrunCall(t *testing.T, name string, r wire.Request, body string, opts []ServerOption) {
	_, addr, _ := testServer(t, opts...)
	rc := rawDial(t, addr)
	req := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &r))
	answer := make([]byte, frameHeader+wire.ResponseOverhead+len(body))
	call := func() {
		if _, err := rc.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, answer); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		call()
	}
	if a := testing.AllocsPerRun(2000, call); a != 0 {
		t.Errorf("%s, %d observers: %v allocs per call, want 0", name, len(opts), a)
	}
}

// An open the server refuses without a handler allocates nothing on the
// server with a stream observer (or two) either: its start and end events are
// passed by value. Here one refused for its metadata, and one for an
// unknown method from a peer that sent its hello (a zapcodec one, which
// is sent the 404). The peer is raw, with its frames made before the
// count. The first is marked not run (a frame before its end), the
// second is not.
func TestAllocsRefusedStreamObserved(t *testing.T) {
	var n atomic.Int64
	obs := func(ev StreamEvent) { n.Add(int64(ev.Status)) }
	md := metadataPair("k", "0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name   string
		hello  bool
		marked bool
		req    wire.Request
		text   string
	}{
		{"metadata too large", false, true, wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("abc"), Metadata: md}, tooLargeText(len(md), 16)},
		{"unknown method", true, false, wire.Request{Method: 99, PromiseID: 1, Payload: []byte("abc")}, streamNoHandler},
	} {
		for observers := 1; observers <= 2; observers++ {
			opts := []ServerOption{WithMaxMetadata(16)}
			for range observers {
				opts = append(opts, WithStreamObserver(obs))
			}
			allocsRefusedStream(t, tc.name, tc.hello, tc.marked, tc.req, tc.text, opts)
		}
	}
	if n.Load() == 0 {
		t.Error("observer never ran")
	}
}

// allocsRefusedStream checks that an open of req the server refuses
// without a handler (with text; after the peer's hello if hello; its end
// after the not-run mark if marked), with the stream observers of opts,
// allocates nothing on the server.
func allocsRefusedStream(t *testing.T, name string, hello, marked bool, req wire.Request, text string, opts []ServerOption) {
	_, addr, _ := streamServer(t, opts...)
	rc := rawDial(t, addr)
	if hello {
		rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow))
		if kind, _, ok := rc.recv(); !ok || kind != wire.KindStreamWindow {
			t.Fatalf("frame kind %d ok %v, want the server's hello", kind, ok)
		}
	}
	open := frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &req))
	mark := 0
	if marked {
		mark = frameHeader + len(wire.AppendStreamNotRun(nil, 1))
	}
	got := make([]byte, mark+frameHeader+len(wire.AppendStreamEndError(nil, 1, 400, text)))
	refusal := func() {
		if _, err := rc.Write(open); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, got); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		refusal()
	}
	if a := testing.AllocsPerRun(2000, refusal); a != 0 {
		t.Errorf("%s, %d stream observers: %v allocs per refused open, want 0", name, len(opts)-1, a)
	}
	if marked && got[4] != wire.KindStreamNotRun {
		t.Fatalf("frame kind %d, want the not-run mark", got[4])
	}
	if got[mark+4] != wire.KindStreamEnd {
		t.Fatalf("frame kind %d, want a stream end", got[mark+4])
	}
}

// An open the server refuses without answering it allocates nothing
// either, with a stream observer (which sees it). Each row returns one
// refusal: over a socket no end follows, so the open is followed by a
// ping, whose pong says the read loop is past the open; on a closed
// connection the read loop's step is driven directly.
func TestAllocsUnansweredStreamObserved(t *testing.T) {
	var n atomic.Int64
	obs := WithStreamObserver(func(ev StreamEvent) { n.Add(int64(ev.Status)) })
	// overSocket returns the refusal of req on a server's connection
	// whose peer sent its hello, where a stream of id 1 runs first if
	// running.
	overSocket := func(t *testing.T, running bool, req wire.Request) func() {
		_, addr, _ := streamServer(t, obs)
		rc := rawDial(t, addr)
		rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow))
		if kind, _, ok := rc.recv(); !ok || kind != wire.KindStreamWindow {
			t.Fatalf("frame kind %d ok %v, want the server's hello", kind, ok)
		}
		if running {
			rc.open(sBlock, 1, "x", nil)
			if kind, _, ok := rc.recv(); !ok || kind != wire.KindStreamMsg {
				t.Fatalf("frame kind %d ok %v, want the running stream's message", kind, ok)
			}
		}
		ping := []byte("12345678")
		open := append(frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &req)), frameBytes(wire.KindPing, ping)...)
		pong := make([]byte, frameHeader+len(ping))
		return func() {
			if _, err := rc.Write(open); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(rc, pong); err != nil {
				t.Fatal(err)
			}
			if pong[4] != wire.KindPong {
				t.Fatalf("frame kind %d, want a pong", pong[4])
			}
		}
	}
	for _, tc := range []struct {
		name  string
		drive func(t *testing.T) (refusal func())
	}{{
		name: "stream id 0",
		drive: func(t *testing.T) func() {
			return overSocket(t, false, wire.Request{Method: sEcho, PromiseID: 0, Payload: []byte("abc")})
		},
	}, {
		name: "id of a running stream",
		drive: func(t *testing.T) func() {
			return overSocket(t, true, wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("abc")})
		},
	}, {
		name: "read as the connection closes",
		drive: func(t *testing.T) func() {
			c, _ := closedConn(t, obs)
			open := wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("abc")})
			return func() {
				if c.streamFrame(wire.KindStreamOpen, open) {
					t.Fatal("the read loop goes on after an open read on a closed connection")
				}
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			n.Store(0)
			refusal := tc.drive(t)
			for range 100 {
				refusal()
			}
			if a := testing.AllocsPerRun(2000, refusal); a != 0 {
				t.Errorf("%v allocs per refused open, want 0", a)
			}
			if n.Load() == 0 {
				t.Error("observer never ran")
			}
		})
	}
}

// A call whose ctx no other call shares (a request's) waits in a select
// and allocates nothing either. The ctxs are made before the count, and
// so are their Done channels (a cancelCtx makes its channel at the first
// Done: the ctx's allocation, whoever asks first).
func TestAllocsUnaryCallOwnCtx(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	const runs = 2000
	ctxs := make([]context.Context, 0, runs+200)
	for range cap(ctxs) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx.Done()
		ctxs = append(ctxs, ctx)
	}
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	next := 0
	call := func() {
		if _, err := c.Call(ctxs[next], mEcho, req, resp[:0]); err != nil {
			t.Fatal(err)
		}
		next++
	}
	for range 100 {
		call()
	}
	if n := testing.AllocsPerRun(runs, call); n != 0 {
		t.Errorf("unary call with a ctx of its own: %v allocs, want 0", n)
	}
	if c.watch.Load() != nil {
		t.Error("a watch of a ctx that made one call")
	}
}

// TestSlotIsOneCacheLine: a slot is handed between a caller and the read
// loop once per call; what they hand each other is its first 64 bytes, a
// cache line of its own in a 128-byte slot (see slot).
func TestSlotIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 128 {
		t.Fatalf("slot is %d bytes, want 128", n)
	}
	if off := unsafe.Offsetof(slot{}.doneID); off != 64 {
		t.Fatalf("slot.doneID at %d, want 64 (the second line)", off)
	}
}

// TestServerConnSizeClass: a server connection's struct stays within the
// allocator's 1,024-byte class (the next is 1,152): every connection,
// idle ones included, pays for it (rpc/README.md, "Memory").
func TestServerConnSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(serverConn{}); n > 1024 {
		t.Fatalf("serverConn is %d bytes: past the 1,024-byte size class", n)
	}
}

// Over TLS, a call whose ctx can end allocates no more than one whose ctx
// cannot: its flush is handed to the connection's writer goroutine
// (outbox.handToWriter), which is started once per busy spell (it ends
// when idle, see TestTLSWriterEndsWhenIdle), not per write. What both
// allocate is crypto/tls's: it allocates a reader for each read of the
// socket, one per call on each end here (one caller, one call at a time).
func TestAllocsTLSCallWithDeadline(t *testing.T) {
	tlsServer, tlsClient := tlsOptions(t)
	_, addr, _ := testServer(t, tlsServer)
	c := dial(t, addr, tlsClient)
	dl, cancel := context.WithTimeout(context.Background(), 1<<40)
	defer cancel()
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	allocs := func(ctx context.Context) float64 {
		call := func() {
			if _, err := c.Call(ctx, mEcho, req, resp[:0]); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 100; i++ {
			call()
		}
		return testing.AllocsPerRun(2000, call)
	}
	bg, withDL := allocs(context.Background()), allocs(dl)
	t.Logf("allocs per call over TLS: %v with Background, %v with a deadline", bg, withDL)
	if bg > 2 {
		t.Errorf("TLS call with Background: %v allocs, want at most crypto/tls's 2", bg)
	}
	if withDL != bg {
		t.Errorf("TLS call with a deadline: %v allocs, want %v as with Background", withDL, bg)
	}
	raw := allocsRawTLSRoundTrip(t)
	t.Logf("allocs per bare crypto/tls round trip: %v", raw)
	if bg != raw {
		t.Errorf("TLS call: %v allocs, want crypto/tls's %v of a bare round trip (a write and a read each way)", bg, raw)
	}
}

// allocsRawTLSRoundTrip is what crypto/tls alone allocates for a round trip
// like a call's, one caller at a time: a 16-byte write, read by an echo
// server, written back and read again, over a bare tls.Conn pair and no
// code of ours. A memory profile of TestAllocsTLSCallWithDeadline puts all
// of a call's allocations in crypto/tls's readFromUntil: it passes a
// 24-byte atLeastReader through io.Reader to bytes.Buffer.ReadFrom, which
// makes it escape, on each read of the socket (1 per read, 2 per round
// trip; the same on Go 1.24 and 1.26).
func allocsRawTLSRoundTrip(t *testing.T) float64 {
	t.Helper()
	cert, roots := selfSigned(t)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		sc, err := l.Accept()
		if err != nil {
			return
		}
		defer sc.Close()
		var b [16]byte
		for {
			if _, err := io.ReadFull(sc, b[:]); err != nil {
				return
			}
			if _, err := sc.Write(b[:]); err != nil {
				return
			}
		}
	}()
	cc, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	msg, back := []byte("0123456789abcdef"), make([]byte, 16)
	trip := func() {
		if _, err := cc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cc, back); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		trip()
	}
	return testing.AllocsPerRun(2000, trip)
}

// Response metadata costs a call that does not ask for it nothing: no
// allocation, whether or not its handler sets some, also once a
// WithResponseMetadata ctx exists in the process (every call then looks
// its ctx up, as for WithMetadata). A call that asks, with a ctx it
// reuses, allocates the caller's copy of the metadata and nothing else:
// one allocation when the answer carries metadata, none when it does not.
// The server side (SetResponseMetadata, the answer's extension field)
// allocates nothing once warm.
func TestAllocsResponseMetadata(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(6, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := SetResponseMetadata(ctx, "server-timing", "app;dur=1"); err != nil {
			t.Error(err)
		}
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	var md Metadata
	asks := WithResponseMetadata(context.Background(), &md)
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		method uint32
		want   float64
	}{
		{"not asked, none set", context.Background(), mEcho, 0},
		{"not asked, handler sets", context.Background(), 6, 0},
		{"asked, none set", asks, mEcho, 0},
		{"asked, handler sets", asks, 6, 1},
	} {
		call := func() {
			out, err := c.Call(tc.ctx, tc.method, req, resp[:0])
			if err != nil || len(out) != len(req) {
				t.Fatalf("%s: %q %v", tc.name, out, err)
			}
		}
		for range 100 {
			call()
		}
		if n := testing.AllocsPerRun(2000, call); n != tc.want {
			t.Errorf("%s: %v allocs, want %v", tc.name, n, tc.want)
		}
	}
	if string(md.Get("server-timing")) != "app;dur=1" {
		t.Fatalf("metadata %q", mdPairs(md))
	}
}

// Stream observers add no allocation to a stream, however many are
// given: a whole stream (open, its end read) allocates as many times with
// one or three stream observers on both sides as with none. (The open's
// own allocations are counted elsewhere; here only the observers' share,
// which must be none.) The observers made one are called with no
// allocation either.
func TestAllocsStreamObserved(t *testing.T) {
	var n atomic.Int64
	obs := func(ev StreamEvent) { n.Add(int64(ev.Status)) }
	stream := func(observers int) float64 {
		var opts []Option
		for range observers {
			opts = append(opts, WithStreamObserver(obs))
		}
		var so []ServerOption
		var co []ClientOption
		for _, o := range opts {
			so, co = append(so, o), append(co, o)
		}
		_, addr, _ := streamServer(t, so...)
		c := dial(t, addr, co...)
		ctx := context.Background()
		run := func() {
			st, err := c.OpenStream(ctx, sStatus, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(nil); Code(err) != 418 {
				t.Fatalf("end: %v", err)
			}
		}
		for range 100 {
			run()
		}
		return testing.AllocsPerRun(2000, run)
	}
	none := stream(0)
	for _, k := range []int{1, 3} {
		if a := stream(k); a != none {
			t.Errorf("%d stream observers on both sides: %v allocs per stream, want %v as with none", k, a, none)
		}
	}
	if n.Load() == 0 {
		t.Error("observer never ran")
	}
	for _, k := range []int{2, 3} {
		fs := make([]StreamObserver, k)
		cs := make([]Observer, k)
		for i := range k {
			fs[i], cs[i] = obs, func(ev CallEvent) { n.Add(int64(ev.Status)) }
		}
		so, co := joinStreamObservers(fs, nil), joinObservers(cs, nil)
		sev := StreamEvent{Client: true, End: true, Status: 418, Err: ErrClosed}
		cev := CallEvent{Client: true, Status: 200, Err: ErrClosed}
		if a := testing.AllocsPerRun(1000, func() { so(sev); co(cev) }); a != 0 {
			t.Errorf("%d observers made one: %v allocs per event, want 0", k, a)
		}
	}
}

// A warm health check that the server answers (the server as a whole, a
// mounted service) allocates nothing, client and server: only the 404 of
// an unknown name builds a message (the names the server knows).
func TestAllocsHealthCheck(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("shop.Shop", 2, At(100))
	c := dial(t, addr)
	ctx := context.Background()
	for _, service := range []string{"", "shop.Shop"} {
		var req []byte
		if service != "" {
			r := HealthCheckRequest{Service: service}
			req = r.AppendZAP(nil)
		}
		resp := make([]byte, 0, 64)
		call := func() {
			out, err := c.Call(ctx, HealthMethod, req, resp[:0])
			var r HealthCheckResponse
			if err != nil || r.DecodeZAP(out) != nil || HealthStatus(r.Status) != HealthServing {
				t.Fatalf("check %q: %v", service, err)
			}
		}
		for i := 0; i < 100; i++ {
			call()
		}
		if n := testing.AllocsPerRun(2000, call); n != 0 {
			t.Errorf("health check of %q: %v allocs, want 0", service, n)
		}
	}
}
