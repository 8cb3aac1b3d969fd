package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/codec"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Offsets of the canonical request fields in the root object (docs/wire.md
// §6), written out here rather than taken from package wire so that the
// tests check its encoding against the specification.
const (
	reqMethod  = 0
	reqPromise = 4
	reqTarget  = 8
	reqCap     = 12
	reqPayload = 20
)

// canonicalView reads a request envelope the way the canonical runtime
// does: its five fields at their canonical offsets of the root object.
func canonicalView(t *testing.T, env []byte) wire.Request {
	t.Helper()
	m, err := codec.Parse(env)
	if err != nil {
		t.Fatalf("canonical parse: %v", err)
	}
	r := m.Root()
	return wire.Request{Method: r.Uint32(reqMethod), PromiseID: r.Uint32(reqPromise), Target: r.Uint32(reqTarget),
		Cap: r.Bytes(reqCap), Payload: r.Bytes(reqPayload)}
}

func sameCanonical(a, b wire.Request) bool {
	return a.Method == b.Method && a.PromiseID == b.PromiseID && a.Target == b.Target &&
		bytes.Equal(a.Cap, b.Cap) && bytes.Equal(a.Payload, b.Payload)
}

// Without a deadline or metadata the client's request is the canonical
// envelope byte for byte (WithCap sets the canonical cap field); with
// them, the canonical fields still read the same at canonical offsets and
// the extensions round-trip.
func TestWireExtensionsFixtures(t *testing.T) {
	f := loadFixtures(t)
	dlCtx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, e := range f.Envelopes {
		if e.Kind != "request" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			want := unhex(t, e.Hex)
			capTok, payload := unhex(t, e.In.Cap), unhex(t, e.In.Payload)
			ctx := context.Background()
			if len(capTok) > 0 {
				ctx = WithCap(ctx, capTok)
			}
			got := appendCall(nil, ctx, e.In.Method, e.In.PromiseID, e.In.Target, payload)
			if !bytes.Equal(got, want) {
				t.Fatalf("no extension used:\n got %x\nwant %x", got, want)
			}
			p, err := wire.ParseRequest(want)
			if err != nil || p.Timeout != 0 || p.Metadata != nil {
				t.Fatalf("canonical request read with extensions: %+v %v", p, err)
			}
			canon := canonicalView(t, want)
			dctx := dlCtx
			if len(capTok) > 0 {
				dctx = WithCap(dlCtx, capTok)
			}
			for name, c := range map[string]context.Context{
				"deadline":          dctx,
				"metadata":          WithMetadata(ctx, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
				"deadline+metadata": WithMetadata(WithCap(dlCtx, capTok), "k", "", "", "v"),
			} {
				ext := appendCall(nil, c, e.In.Method, e.In.PromiseID, e.In.Target, payload)
				if cv := canonicalView(t, ext); !sameCanonical(cv, canon) {
					t.Fatalf("%s: canonical view %+v, want %+v", name, cv, canon)
				}
				r, err := wire.ParseRequest(ext)
				if err != nil || !sameCanonical(r, canon) {
					t.Fatalf("%s: wire.ParseRequest %+v %v", name, r, err)
				}
				if _, ok := c.Deadline(); ok != (r.Timeout != 0) ||
					(ok && (r.Timeout > uint64(time.Hour/time.Microsecond) || r.Timeout < uint64(59*time.Minute/time.Microsecond))) {
					t.Fatalf("%s: timeout %d µs", name, r.Timeout)
				}
				if w := wireFrom(c); !bytes.Equal(r.Metadata, w.mdOrNil()) {
					t.Fatalf("%s: metadata %x, want %x", name, r.Metadata, w.mdOrNil())
				}
			}
		})
	}
}

func (w *wireOpts) mdOrNil() []byte {
	if w == nil {
		return nil
	}
	return w.md
}

func encodeMD(kv ...string) []byte {
	return wireFrom(WithMetadata(context.Background(), kv...)).md
}

func TestMetadataAPI(t *testing.T) {
	md := Metadata{encodeMD("traceparent", "tp", "empty", "", "dup", "1", "dup", "2")}
	if md.Len() != 4 || md.Size() != len(md.b) {
		t.Fatalf("Len %d", md.Len())
	}
	if g := md.Get("traceparent"); string(g) != "tp" {
		t.Fatalf("Get traceparent = %q", g)
	}
	if g := md.Get("empty"); g == nil || len(g) != 0 {
		t.Fatalf("Get empty = %#v, want non-nil empty", g)
	}
	if g := md.Get("dup"); string(g) != "1" {
		t.Fatalf("Get dup = %q, want the first", g)
	}
	if md.Get("missing") != nil || (Metadata{}).Get("x") != nil || (Metadata{}).Len() != 0 {
		t.Fatal("missing key or empty metadata")
	}
	var keys []string
	md.Range(func(k, v []byte) bool { keys = append(keys, string(k)+"="+string(v)); return len(keys) < 3 })
	if strings.Join(keys, ",") != "traceparent=tp,empty=,dup=1" {
		t.Fatalf("Range: %v", keys)
	}
	// WithMetadata appends to an outer one; WithCap keeps it.
	ctx := WithCap(WithMetadata(WithMetadata(context.Background(), "a", "1"), "b", "2"), []byte("tok"))
	w := wireFrom(ctx)
	if m := (Metadata{w.md}); m.Len() != 2 || string(m.Get("a")) != "1" || string(m.Get("b")) != "2" || string(w.cap) != "tok" {
		t.Fatalf("nested: %x %q", w.md, w.cap)
	}
	if w := wireFrom(WithCap(ctx, nil)); w.cap != nil || len(w.md) == 0 {
		t.Fatal("WithCap(nil) must clear the token and keep the metadata")
	}
	for _, bad := range [][]byte{{1}, {1, 0, 0, 0}, {1, 0, 0, 0, 'k'}, {0, 0, 0, 0, 5, 0, 0, 0, 'v'}, {0xFF, 0xFF, 0xFF, 0xFF}} {
		if validMetadata(bad) {
			t.Fatalf("%x accepted", bad)
		}
	}
	if !validMetadata(nil) || !validMetadata(encodeMD("", "")) {
		t.Fatal("valid metadata refused")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("odd WithMetadata did not panic")
		}
	}()
	//lint:ignore SA5012 the odd count is what this test checks
	WithMetadata(context.Background(), "lonely")
}

// wireFirstEnv names, in TestWireInUseFirst's child process, the case it
// runs.
const wireFirstEnv = "ZAPCODEC_WIRE_FIRST"

// The first WithCap or WithMetadata of a process turns wireFrom's lookup
// on (wireInUse): the first ctx made by either carries its token or
// metadata into the request. Each case runs in a child process of its
// own, where no other test has made such a ctx before; there Client.Call
// first makes a plain call and one with a deadline (its own ways, while
// wireInUse is unset), then both kinds with the new ctx.
func TestWireInUseFirst(t *testing.T) {
	cases := map[string]struct {
		ctx  func() context.Context
		want wire.Request
	}{
		"cap": {
			ctx:  func() context.Context { return WithCap(context.Background(), []byte("tok")) },
			want: wire.Request{Cap: []byte("tok")},
		},
		"metadata": {
			ctx: func() context.Context { return WithMetadata(context.Background(), "k", "v") },
			// encodeMD would make a ctx with WithMetadata: by hand.
			want: wire.Request{Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}},
		},
	}
	if name := os.Getenv(wireFirstEnv); name != "" {
		if wireInUse.Load() {
			t.Fatal("wireInUse set before any WithCap or WithMetadata")
		}
		// Call's own ways (the plain call, the call with a deadline)
		// run while wireInUse is unset, then meet the first ctx that
		// carries something: that one's request carries it.
		c, peer := pipeClient(t)
		call := func(ctx context.Context) wire.Request {
			t.Helper()
			done := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mEcho, []byte("x"), nil)
				done <- err
			}()
			r := peer.recvRequest()
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
			if err := receive(t, "the call's answer", done); err != nil {
				t.Fatal(err)
			}
			return r
		}
		timed := func(ctx context.Context) context.Context {
			ctx, cancel := context.WithTimeout(ctx, time.Hour)
			t.Cleanup(cancel)
			return ctx
		}
		for _, ctx := range []context.Context{context.Background(), timed(context.Background())} {
			if r := call(ctx); r.Cap != nil || r.Metadata != nil {
				t.Fatalf("a call without cap or metadata carries cap %q, metadata %x", r.Cap, r.Metadata)
			}
		}
		tc := cases[name]
		ctx := tc.ctx()
		var r wire.Request
		callRequest(&r, ctx, ctx.Done(), mEcho, 0, nil)
		if !bytes.Equal(r.Cap, tc.want.Cap) || !bytes.Equal(r.Metadata, tc.want.Metadata) {
			t.Fatalf("request carries cap %q, metadata %x; want %q, %x", r.Cap, r.Metadata, tc.want.Cap, tc.want.Metadata)
		}
		for _, ctx := range []context.Context{ctx, timed(ctx)} {
			if r := call(ctx); !bytes.Equal(r.Cap, tc.want.Cap) || !bytes.Equal(r.Metadata, tc.want.Metadata) {
				t.Fatalf("Call's request carries cap %q, metadata %x; want %q, %x", r.Cap, r.Metadata, tc.want.Cap, tc.want.Metadata)
			}
		}
		return
	}
	for name := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestWireInUseFirst$", "-test.count=1")
			cmd.Env = append(os.Environ(), wireFirstEnv+"="+name)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
		})
	}
}

// Cap, metadata and deadline reach the handler over TCP.
func TestWireExtensionsReachHandler(t *testing.T) {
	s, addr, _ := testServer(t)
	type seen struct {
		cap      string
		tp, dup  string
		n        int
		deadline time.Time
		hasDL    bool
	}
	got := make(chan seen, 1)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		var v seen
		v.cap = string(CapFrom(ctx))
		type key struct{}
		md := MetadataFrom(context.WithValue(ctx, key{}, 1)) // through a derived ctx
		v.tp, v.dup, v.n = string(md.Get("traceparent")), string(md.Get("dup")), md.Len()
		v.deadline, v.hasDL = ctx.Deadline()
		got <- v
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	// No extension: the handler sees none.
	if _, err := c.Call(context.Background(), 5, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != (seen{}) {
		t.Fatalf("plain call: %+v", v)
	}
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientDL, _ := dctx.Deadline()
	ctx := WithMetadata(WithCap(dctx, []byte("secret")), "traceparent", "00-abc-def-01", "dup", "first", "dup", "second")
	out, err := c.Call(ctx, 5, []byte("payload"), nil)
	if err != nil || string(out) != "payload" {
		t.Fatalf("call: %q %v", out, err)
	}
	v := <-got
	if v.cap != "secret" || v.tp != "00-abc-def-01" || v.dup != "first" || v.n != 3 || !v.hasDL {
		t.Fatalf("handler saw %+v", v)
	}
	// The server's deadline is the caller's, shifted by the time the
	// request took to arrive (never earlier than the caller's minus the
	// microsecond the wire rounds away).
	if v.deadline.Before(clientDL.Add(-time.Microsecond)) || v.deadline.After(clientDL.Add(time.Minute)) {
		t.Fatalf("handler deadline %v, caller's %v", v.deadline, clientDL)
	}
	// The next call on the same job carries nothing again.
	if _, err := c.Call(context.Background(), 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != (seen{}) {
		t.Fatalf("plain call after extensions: %+v", v)
	}
	if CapFrom(context.Background()) != nil || MetadataFrom(context.Background()).Len() != 0 {
		t.Fatal("a non-handler ctx has a cap or metadata")
	}
}

// The handler's ctx is done when the call's deadline passes (Err says
// DeadlineExceeded), and the caller gets DeadlineExceeded; the job's
// timer and channel are reused by later calls.
func TestDeadlineCancelsHandler(t *testing.T) {
	s, addr, _ := testServer(t)
	errs := make(chan error, 1)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
			errs <- ctx.Err()
		case <-time.After(30 * time.Second):
			errs <- errors.New("ctx not done 30 s after a 20 ms deadline")
		}
		return resp, ctx.Err()
	})
	s.Handle(6, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		// Done is armed but the call ends first.
		if ctx.Done() == nil || ctx.Err() != nil {
			return resp, Errorf(StatusBadRequest, "bad ctx")
		}
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := c.Call(ctx, 5, nil, nil)
		cancel()
		// The caller's own timer usually ends the call first; the
		// handler's answer (its ctx error once the deadline passed, a
		// 504) may win the race.
		if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "504: context deadline exceeded") {
			t.Fatalf("call %d: %v", i, err)
		}
		if err := <-errs; err != context.DeadlineExceeded {
			t.Fatalf("handler %d: ctx.Err() = %v", i, err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		if out, err := c.Call(ctx, 6, []byte("ok"), nil); err != nil || string(out) != "ok" {
			t.Fatalf("armed call %d: %q %v", i, out, err)
		}
		cancel()
	}
}

// A handler's armed Done closes, with Canceled, when the base context is
// canceled or the server closes the connection.
func TestDeadlineDoneOnConnEnd(t *testing.T) {
	for _, how := range []string{"base context", "server close"} {
		t.Run(how, func(t *testing.T) {
			base, cancelBase := context.WithCancel(context.Background())
			defer cancelBase()
			s, addr, _ := testServer(t, WithBaseContext(func(net.Listener) context.Context { return base }))
			started := make(chan struct{})
			errs := make(chan error, 1)
			s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				done := ctx.Done()
				close(started)
				select {
				case <-done:
					errs <- ctx.Err()
				case <-time.After(30 * time.Second):
					errs <- errors.New("ctx not done 30 s after the connection's end")
				}
				return resp, nil
			})
			c := dial(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			go c.Call(ctx, 5, nil, nil)
			<-started
			if how == "base context" {
				cancelBase()
			} else {
				s.Close()
			}
			if err := <-errs; err != context.Canceled {
				t.Fatalf("ctx.Err() = %v, want Canceled", err)
			}
		})
	}
}

// A call whose deadline passed before it could run (here: while it waited
// for a free job behind a blocked call) is answered 504 with the not-run
// flag, without running; the client reads it as DeadlineExceeded, not
// retryable.
func TestDeadlineExpiredNotRun(t *testing.T) {
	s, addr, _ := testServer(t, WithMaxInFlight(1))
	release := make(chan struct{})
	var ran atomic.Int32
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return resp, nil
	})
	s.Handle(6, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		return resp, nil
	})
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: 1}))
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 6, PromiseID: 2, Timeout: 1000})) // 1 ms
	// The read loop parsed call 2 and waits for a job: it published its
	// count of calls read before waiting.
	for start := time.Now(); s.Stats().Calls < 2; time.Sleep(time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("call 2 not read after 30 s")
		}
	}
	time.Sleep(5 * time.Millisecond) // call 2's 1 ms is over
	close(release)
	a, b := rc.recvResponse(), rc.recvResponse()
	if a.PromiseID != 1 || a.Status != StatusOK {
		t.Fatalf("call 1 answer %+v", a)
	}
	if b.PromiseID != 2 || b.Status != StatusDeadlineExceeded || !b.NotRun {
		t.Fatalf("call 2 answer %+v", b)
	}
	if ran.Load() != 0 {
		t.Fatal("the expired call ran")
	}
	err := newStatusError(b.Status, b.Body, b.NotRun)
	if !errors.Is(err, context.DeadlineExceeded) || IsRetryable(err) || errors.Is(err, ErrGoAway) {
		t.Fatalf("%v: Is DeadlineExceeded %v, retryable %v", err, errors.Is(err, context.DeadlineExceeded), IsRetryable(err))
	}
	// A handler's own 504 is neither.
	if err := newStatusError(StatusDeadlineExceeded, nil, false); errors.Is(err, context.DeadlineExceeded) || IsRetryable(err) {
		t.Fatal("a handler's 504 reads as a refusal")
	}
	// The go-away refusal is still retryable.
	if err := newStatusError(StatusUnavailable, nil, true); !IsRetryable(err) {
		t.Fatal("go-away refusal not retryable")
	}
}

// Oversized metadata is refused 431 not run (not retryable); malformed
// metadata 400; a limit set by WithMaxMetadata is honoured.
func TestMetadataLimit(t *testing.T) {
	s, addr, _ := testServer(t, WithMaxMetadata(64))
	var ran atomic.Int32
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		return append(resp, MetadataFrom(ctx).Get("k")...), nil
	})
	c := dial(t, addr)
	out, err := c.Call(WithMetadata(context.Background(), "k", strings.Repeat("v", 50)), 5, nil, nil)
	if err != nil || len(out) != 50 {
		t.Fatalf("metadata under the limit: %q %v", out, err)
	}
	_, err = c.Call(WithMetadata(context.Background(), "k", strings.Repeat("v", 60)), 5, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusMetadataTooLarge || IsRetryable(err) {
		t.Fatalf("oversized metadata: %v", err)
	}
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: 3, Metadata: []byte{9, 0, 0, 0, 'x'}}))
	if r := rc.recvResponse(); r.Status != StatusBadRequest || r.PromiseID != 3 {
		t.Fatalf("malformed metadata: %+v", r)
	}
	if ran.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", ran.Load())
	}
	// The connection is fine afterwards.
	if _, err := c.Call(context.Background(), 5, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A canonical server, which reads the request's fields at their canonical
// offsets and knows nothing of the extensions, answers a zapcodec call
// that carries a deadline, a cap and metadata.
func TestCanonicalServerIgnoresExtensions(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seen := make(chan wire.Request, 1)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		rc := &rawConn{t, nc}
		_, env, ok := rc.recv()
		if !ok {
			return
		}
		m, err := codec.Parse(env)
		if err != nil {
			return
		}
		r := m.Root()
		req := wire.Request{Method: r.Uint32(reqMethod), PromiseID: r.Uint32(reqPromise), Cap: r.Bytes(reqCap), Payload: r.Bytes(reqPayload)}
		seen <- req
		body := append(append([]byte(nil), req.Cap...), req.Payload...)
		nc.Write(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: req.PromiseID, Body: body})))
	}()
	c := dial(t, l.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = WithMetadata(WithCap(ctx, []byte("tok:")), "traceparent", "00-x-y-01")
	out, err := c.Call(ctx, 3, []byte("payload"), nil)
	if err != nil || string(out) != "tok:payload" {
		t.Fatalf("Call = %q, %v", out, err)
	}
	if r := <-seen; r.Method != 3 || r.PromiseID != 1 {
		t.Fatalf("canonical server read %+v", r)
	}
}

// The request frames a client writes over TCP: canonical bytes when no
// extension is used (the call_plain fixture), extensions otherwise.
func TestClientWireBytesTCP(t *testing.T) {
	f := loadFixtures(t)
	var plain wire.Request
	for _, e := range f.Envelopes {
		if e.Name == "call_plain" {
			plain = wire.Request{Method: e.In.Method, PromiseID: e.In.PromiseID, Payload: unhex(t, e.In.Payload)}
			if want := unhex(t, e.Hex); !bytes.Equal(wire.AppendRequest(nil, &plain), want) {
				t.Fatal("fixture")
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	envs := make(chan []byte, 4)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		rc := &rawConn{t, nc}
		for {
			_, env, ok := rc.recv()
			if !ok {
				return
			}
			envs <- env
			r, _ := wire.ParseRequest(env)
			nc.Write(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID})))
		}
	}()
	c := dial(t, l.Addr().String())
	if _, err := c.Call(context.Background(), plain.Method, plain.Payload, nil); err != nil {
		t.Fatal(err)
	}
	if got := <-envs; !bytes.Equal(got, unhexFixture(t, f, "call_plain")) {
		t.Fatalf("plain call\n got %x\nwant fixture call_plain", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Call(ctx, plain.Method, plain.Payload, nil); err != nil {
		t.Fatal(err)
	}
	got := <-envs
	r, err := wire.ParseRequest(got)
	if err != nil || r.Timeout == 0 || len(got) != len(unhexFixture(t, f, "call_plain"))+8 {
		t.Fatalf("call with deadline: %x %+v %v", got, r, err)
	}
	if cv := canonicalView(t, got); cv.Method != plain.Method || !bytes.Equal(cv.Payload, plain.Payload) {
		t.Fatalf("canonical view %+v", cv)
	}
}

func unhexFixture(t *testing.T, f *rpcFixtures, name string) []byte {
	for _, e := range f.Envelopes {
		if e.Name == name {
			return unhex(t, e.Hex)
		}
	}
	t.Fatalf("no fixture %s", name)
	return nil
}

// countConn counts the bytes read and written through a connection and
// records how many had been written when the first byte was read.
type countConn struct {
	net.Conn
	read, written      atomic.Int64
	writtenAtFirstRead atomic.Int64
	writes             atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.read.Add(int64(n)) == int64(n) {
		c.writtenAtFirstRead.Store(c.written.Load())
	}
	return n, err
}

// Write counts p before it writes it (and takes back what was not
// written): counted after, a peer could answer the bytes, and the read
// loop read that answer, before the writing goroutine got to count them.
func (c *countConn) Write(p []byte) (int, error) {
	c.written.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.written.Add(int64(n - len(p)))
	}
	c.writes.Add(1)
	return n, err
}

type countListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countConn
}

func (l *countListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

func (l *countListener) conn(i int) *countConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < len(l.conns) {
		return l.conns[i]
	}
	return nil
}

// serveOn runs s on l until the test ends.
func serveOn(t *testing.T, s *Server, l net.Listener) {
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
}

// FuzzMetadata: any bytes either fail validMetadata or decode into pairs
// that Len, Range and Get agree on; nothing panics.
func FuzzMetadata(f *testing.F) {
	f.Add(encodeMD("traceparent", "00-abc-01", "k", ""))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !validMetadata(b) {
			return
		}
		md := Metadata{b}
		n, size := 0, 0
		md.Range(func(k, v []byte) bool {
			n++
			size += 8 + len(k) + len(v)
			if md.Get(string(k)) == nil {
				t.Fatalf("Get(%q) = nil for a present key", k)
			}
			return true
		})
		if n != md.Len() || size != len(b) {
			t.Fatalf("Range: %d pairs of %d bytes; Len %d, size %d", n, size, md.Len(), len(b))
		}
	})
}

// Regression (found by FuzzServerStream): a handler whose deadline has
// already passed when it first calls Done gets a closed channel, and the
// end of the call (no timer was armed) must not crash the server.
func TestDeadlinePassedBeforeDone(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		time.Sleep(5 * time.Millisecond) // past the 1 ms deadline
		select {
		case <-ctx.Done():
		default:
			return resp, Errorf(StatusBadRequest, "Done not closed after the deadline")
		}
		if ctx.Err() != context.DeadlineExceeded {
			return resp, Errorf(StatusBadRequest, "Err %v", ctx.Err())
		}
		return append(resp, "late"...), nil
	})
	rc := rawDial(t, addr)
	for pid := uint32(1); pid <= 3; pid++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: pid, Timeout: 1000}))
		r := rc.recvResponse()
		// The handler ran unless the server saw the deadline pass first
		// (then: 504, not run).
		if r.PromiseID != pid || !(r.Status == StatusOK && string(r.Body) == "late" || r.Status == StatusDeadlineExceeded && r.NotRun) {
			t.Fatalf("answer %+v %q", r, r.Body)
		}
	}
}

// The handler's ctx carries its deadline on: a call made with it (or
// with a ctx derived from it) sends the time left to the next server.
func TestDeadlinePropagates(t *testing.T) {
	sb, addrB, _ := testServer(t)
	got := make(chan time.Time, 1)
	sb.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		dl, _ := ctx.Deadline()
		got <- dl
		return resp, nil
	})
	cb := dial(t, addrB)
	sa, addrA, _ := testServer(t)
	sa.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		dctx, cancel := context.WithCancel(ctx) // a ctx derived from the handler's
		defer cancel()
		return cb.Call(dctx, 5, req, resp)
	})
	ca := dial(t, addrA)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ca.Call(ctx, 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	clientDL, _ := ctx.Deadline()
	if dl := <-got; dl.Before(clientDL.Add(-2*time.Microsecond)) || dl.After(clientDL.Add(time.Minute)) {
		t.Fatalf("second hop's deadline %v, caller's %v", dl, clientDL)
	}
}

// A job's Done channel is not reused by its next call while an
// AfterFunc registered on it outlives the call (a ctx the handler
// derived and did not cancel): whoever registered would take the next
// call's end for its own.
func TestDeadlineDoneNotReusedUnderAfterFunc(t *testing.T) {
	const mAfter = 9
	dones := make(chan (<-chan struct{}), 1)
	s, addr, _ := testServer(t)
	s.Handle(mAfter, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		dones <- ctx.Done()
		if len(req) > 0 && req[0] == 1 {
			context.AfterFunc(ctx, func() {}) // never stopped
		}
		return resp, nil
	})
	c := dial(t, addr)
	req := make([]byte, 2*keptJobBuffer) // the connection keeps its job (releaseSpare)
	doneOf := func(register bool) <-chan struct{} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		req[0] = 0
		if register {
			req[0] = 1
		}
		if _, err := c.Call(ctx, mAfter, req, nil); err != nil {
			t.Fatal(err)
		}
		return <-dones
	}
	doneOf(false) // a new connection's first request may take another job
	a, b := doneOf(false), doneOf(true)
	if a != b {
		t.Fatalf("precondition: the job's next call did not reuse its Done channel")
	}
	if doneOf(false) == b {
		t.Fatal("a Done channel with a live AfterFunc registration was reused by the next call")
	}
}

// Many concurrent calls with short deadlines whose handlers arm Done,
// derive contexts from it, and race the deadline; then the connections
// close under calls still armed. Run with -race: the arming, firing and
// disarming of reused jobs must not race or leak a call.
func TestDeadlineArmingStress(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		d := time.Duration(req[0]) * 50 * time.Microsecond
		dctx, cancel := context.WithTimeout(ctx, d*2)
		defer cancel()
		select {
		case <-ctx.Done():
			return resp, ctx.Err()
		case <-dctx.Done():
			return resp, nil
		case <-time.After(d):
			return append(resp, 'x'), nil
		}
	})
	for round := 0; round < 2; round++ {
		c := dial(t, addr)
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*200*time.Microsecond+50*time.Microsecond)
					_, err := c.Call(ctx, 5, []byte{byte(g + i)}, nil)
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") {
						t.Errorf("call: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		// Calls armed and still running when the connection closes.
		for i := 0; i < 8; i++ {
			go c.Call(context.Background(), 5, []byte{200}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			go func() { defer cancel(); c.Call(ctx, 5, []byte{200}, nil) }()
		}
		c.Close()
	}
	await(t, "the connections to close", func() bool { return s.Stats().Active == 0 })
}

// FuzzRequestExtensions: whatever extension fields wire.ParseRequest
// accepts, the server's reading of them (metadata, when it passes the
// server's check, and the deadline) never panics, and metadata reads back
// its own pairs.
func FuzzRequestExtensions(f *testing.F) {
	f.Add(wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 2, Timeout: 1500}))
	f.Add(wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 2, Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}}))
	f.Add(wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 2, Timeout: 1, Cap: []byte("c"), Payload: []byte("pp"),
		Metadata: []byte{2, 0, 0, 0, 't', 'p', 0, 0, 0, 0}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wire.ParseRequest(b)
		if err != nil {
			return
		}
		// Metadata the server would accept decodes without panics
		// and reads back its own pairs.
		if validMetadata(r.Metadata) {
			md := Metadata{r.Metadata}
			n := 0
			md.Range(func(k, v []byte) bool {
				if n++; md.Get(string(k)) == nil {
					t.Fatalf("Get(%q) = nil for a present key", k)
				}
				return true
			})
			if n != md.Len() {
				t.Fatalf("Range saw %d pairs, Len %d", n, md.Len())
			}
		}
		_ = deadlineAfter(monoNow(), r.Timeout)
	})
}

// A job goes back to the server-wide pool without a large buffer of its
// cap and metadata, as without large request and answer buffers: it kept
// one of up to 256 KiB (what the call's end keeps), which every
// connection that took the job from the pool then held.
func TestPooledJobDropsLargeExt(t *testing.T) {
	// One P: the job put back is in the pool this test's Get looks at
	// first (a sync.Pool keeps one item per P out of the others' reach).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, addr, _ := testServer(t, WithReadTimeout(50*time.Millisecond))
	c := dial(t, addr)
	ctx := WithCap(context.Background(), make([]byte, 100<<10))
	wakes := s.readWakes.Load()
	if _, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	// The job, its cap buffer large, is kept while the connection waits
	// (releaseSpare) and given back at its wake-up a read timeout later.
	await(t, "the read loop's wake-up to give the job back", func() bool { return s.readWakes.Load() > wakes })
	for {
		j, _ := jobPool.Get().(*job)
		if j == nil {
			break
		}
		if cap(j.ext) > keptJobBuffer {
			t.Fatalf("a pooled job holds a cap and metadata buffer of %d B", cap(j.ext))
		}
	}
}
