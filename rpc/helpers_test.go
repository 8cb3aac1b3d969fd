package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	mEcho  = 1
	mFail  = 2
	mPanic = 3
	mSlow  = 4
)

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// keepCalling starts goroutines that call mEcho on c with payload, one
// call after another, until the returned stop is called; stop waits for
// them and returns the first call's error, if any.
func keepCalling(c *Client, goroutines int, payload []byte) (stop func() error) {
	quit := make(chan struct{})
	done := make(chan error, goroutines)
	for range goroutines {
		go func() {
			for {
				select {
				case <-quit:
					done <- nil
					return
				default:
				}
				if _, err := c.Call(context.Background(), mEcho, payload, nil); err != nil {
					done <- err
					return
				}
			}
		}()
	}
	return func() error {
		close(quit)
		var first error
		for range goroutines {
			if err := <-done; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

func echo(_ context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil }

// testServer starts a server with the echo handler on mEcho, listening on
// loopback TCP; it is closed when the test ends. The log goes to the
// returned buffer.
func testServer(t testing.TB, opts ...ServerOption) (*Server, string, *syncBuf) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, logs := testServerOn(t, l, opts...)
	return s, l.Addr().String(), logs
}

// testServerOn is testServer serving l.
func testServerOn(t testing.TB, l net.Listener, opts ...ServerOption) (*Server, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	opts = append([]ServerOption{WithLogger(slog.New(slog.NewTextHandler(logs, nil)))}, opts...)
	s := NewServer(opts...)
	s.Handle(mEcho, echo)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s, logs
}

// startCalls starts n echo calls of req on c without a deadline, each
// in a goroutine of its own; their errors arrive on the returned channel.
func startCalls(c *Client, req []byte, n int) <-chan error {
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Call(context.Background(), mEcho, req, nil)
			errs <- err
		}()
	}
	return errs
}

// sendCallsForever writes echo calls of payload to w (a peer that never
// reads its answers), promise ids 1, 2, 3..., from a goroutine of its
// own, until a write fails.
func sendCallsForever(w io.Writer, payload []byte) {
	go func() {
		for i := uint32(1); ; i++ {
			env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: payload})
			if _, err := w.Write(frameBytes(wire.KindRequest, env)); err != nil {
				return
			}
		}
	}()
}

func dial(t testing.TB, addr string, opts ...ClientOption) *Client {
	t.Helper()
	c, err := Dial(context.Background(), "tcp", addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a test peer speaking frames by hand.
type rawConn struct {
	t testing.TB
	net.Conn
}

func rawDial(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t, nc}
}

func frameBytes(kind byte, env []byte) []byte {
	n := len(env) + 1
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), kind}, env...)
}

// tlsEchoed makes a TLS connection to addr, a server with WithTLSConfig
// and the echo handler, and returns it once an echo call on it (promise
// 100) was answered, with the socket under it, closed when the test ends.
// The server gives the TLS handshake its read timeout, which a loaded
// machine can take longer over (a test's short read timeout most of
// all): the server then closes the connection, which the client may
// learn only at its first send (EOF), or not until its calls are never
// answered (with GOMAXPROCS=1 the client's side of the handshake can end
// before the server's). Such a connection proves nothing; another is made,
// at most 20: the echo's answer says the server's side is done. wrap, if
// not nil, is put between each socket and TLS.
func tlsEchoed(t testing.TB, addr string, roots *x509.CertPool, wrap func(net.Conn) net.Conn) (*rawConn, net.Conn) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		under := nc
		if wrap != nil {
			under = wrap(nc)
		}
		rc := &rawConn{t, tls.Client(under, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})}
		_, err = rc.Write(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 100})))
		if err == nil {
			kind, _, ok := rc.recv()
			if ok && kind == wire.KindResponse {
				t.Cleanup(func() { nc.Close() })
				return rc, nc
			}
			err = errors.New("connection closed, want the echo's answer")
		}
		nc.Close()
		if attempt == 20 {
			t.Fatalf("TLS handshake and an echo, attempt %d: %v", attempt, err)
		}
		t.Logf("TLS handshake and an echo, attempt %d: %v", attempt, err)
	}
}

func (r *rawConn) send(kind byte, env []byte) {
	r.t.Helper()
	if _, err := r.Write(frameBytes(kind, env)); err != nil {
		r.t.Fatal(err)
	}
}

// recv reads one frame; ok false at EOF or error.
func (r *rawConn) recv() (kind byte, env []byte, ok bool) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, false
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16 | int(h[3])<<24
	env = make([]byte, n-1)
	if _, err := io.ReadFull(r, env); err != nil {
		return 0, nil, false
	}
	return h[4], env, true
}

func (r *rawConn) recvResponse() wire.Response {
	r.t.Helper()
	kind, env, ok := r.recv()
	if !ok {
		r.t.Fatal("connection closed, want a response")
	}
	if kind != wire.KindResponse {
		r.t.Fatalf("frame kind %d, want %d", kind, wire.KindResponse)
	}
	resp, err := wire.ParseResponse(env)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// recvRequest reads one frame, which must be a request, and parses it.
func (r *rawConn) recvRequest() wire.Request {
	r.t.Helper()
	kind, env, ok := r.recv()
	if !ok || kind != wire.KindRequest {
		r.t.Fatalf("got frame kind %d (ok %v), want a request", kind, ok)
	}
	req, err := wire.ParseRequest(env)
	if err != nil {
		r.t.Fatal(err)
	}
	return req
}

// callAnswered makes a call on c with resp, reads its request at peer
// (the other end of c's connection) and answers it with a: a's promise id
// is set to the request's. It returns what the call returned.
func callAnswered(t testing.TB, c *Client, peer *rawConn, resp []byte, a wire.Response) ([]byte, error) {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.Call(context.Background(), mEcho, []byte("ping"), resp)
		done <- result{out, err}
	}()
	a.PromiseID = peer.recvRequest().PromiseID
	peer.send(wire.KindResponse, wire.AppendResponse(nil, &a))
	r := receive(t, "the call's result", done)
	return r.out, r.err
}

// recvCancelQuestion reads one frame, which must be the ping with which
// the client asks, at its first canceled call, whether the server takes
// cancels (cancel.go): a canonical peer ignores it, as this one does.
func (r *rawConn) recvCancelQuestion() {
	r.t.Helper()
	kind, env, ok := r.recv()
	if !ok || kind != wire.KindPing || string(env) != wire.CancelQuestion {
		r.t.Fatalf("got frame kind %d %q (ok %v), want the cancel question (a ping)", kind, env, ok)
	}
}

// expectClosed reads until EOF; it fails the test on a frame.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	if kind, env, ok := r.recv(); ok {
		r.t.Fatalf("got frame kind %d (%x), want the connection closed", kind, env)
	}
}

// expectGoAwayThenClosed reads a go-away frame, then expects EOF.
func (r *rawConn) expectGoAwayThenClosed() {
	r.t.Helper()
	if kind, env, ok := r.recv(); !ok || kind != wire.KindGoAway {
		r.t.Fatalf("got frame kind %d (%x) ok %v, want a go-away", kind, env, ok)
	}
	r.expectClosed()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// acquireSlot takes a slot for a call as Call does (acquire, under the
// outbox's lock, which it gives back), with no buffer and no metadata
// receiver; done as acquire's.
func acquireSlot(c *Client, done <-chan struct{}) (*slot, error) {
	c.out.mu.Lock()
	s, err := c.acquire(nil, done, nil)
	if err == nil {
		c.out.mu.Unlock()
	}
	return s, err
}

// canceledWaitingSlot acquires a slot for a call whose ctx then ends,
// and does to it what ctxEnded does to a call it finds waiting: the slot
// goes from waiting to canceled and its caller is woken (s.ch holds the
// wake-up). It returns the slot and the call's ctx, canceled.
func canceledWaitingSlot(t *testing.T, c *Client) (*slot, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := acquireSlot(c, ctx.Done())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	pid := uint64(s.pid) << 32
	if !s.st.CompareAndSwap(pid|slotWaiting, pid|slotCanceled) {
		t.Fatal("slot not waiting")
	}
	s.ch <- struct{}{}
	return s, ctx
}

// idleSlots counts the slots on c's free stack. It fails the test when
// the count the stack's head keeps (see Client.free) is not the number of
// slots on it. Calls may be running: it holds the outbox's lock, which
// makes it the stack's only popper (slots on the stack stay there, and
// their links as they are), and walks the stack again until no push
// changed its head during a walk.
func idleSlots(t testing.TB, c *Client) int {
	t.Helper()
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	for {
		h := c.free.Load()
		var table []*slot
		if tp := c.table.Load(); tp != nil {
			table = *tp
		}
		n, i := 0, h&0xFFFF
		// At most one step per slot, and only to slots of the table
		// loaded: a walk that met pushes and pops may follow links of
		// different moments, to slots added since.
		for ; i != 0 && i <= uint64(len(table)) && n <= len(table); i = uint64(table[i-1].next) {
			n++
		}
		if c.free.Load() != h || i != 0 {
			continue
		}
		if kept := int(h >> 16 & 0xFFFF); kept != n {
			t.Fatalf("the free stack's head counts %d slots, %d are on it", kept, n)
		}
		return n
	}
}

// await polls cond until it holds; after 30 s it fails the test with what
// it was waiting for (a bound against hanging, not a speed assert).
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 30 s waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// receive waits for a value from ch; after 30 s it fails the test with
// what it was waiting for (see await).
func receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	var v T
	await(t, what, func() bool {
		select {
		case v = <-ch:
			return true
		default:
			return false
		}
	})
	return v
}

// pipeClient is a client over net.Pipe (a write waits for the peer's
// read) with a write timeout of an hour and opts, and its peer; both are
// closed when the test ends.
func pipeClient(t testing.TB, opts ...ClientOption) (*Client, *rawConn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := NewClient(a, append([]ClientOption{WithWriteTimeout(time.Hour)}, opts...)...)
	t.Cleanup(func() { c.Close() })
	return c, &rawConn{t, b}
}

// untilReached runs attempt, each time with a setup of its own, until one
// reaches the path its test checks (attempt returns true, having failed
// the test itself if that path went wrong), at most five times. A loaded
// machine may take another path, rightly (a busy connection off the
// watchdog's list for a moment, say): missed says which, logged for each
// attempt that took it. The test fails when none reached its path.
func untilReached(t *testing.T, missed string, attempt func(*testing.T) bool) {
	t.Helper()
	const attempts = 5
	for i := 1; i <= attempts; i++ {
		if attempt(t) {
			return
		}
		t.Logf("attempt %d: %s", i, missed)
	}
	t.Fatalf("in %d attempts, none reached the path the test checks; each time %s", attempts, missed)
}
