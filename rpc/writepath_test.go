package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The client's write path: what a client does when a write of its
// outbox fails in a goroutine no caller waits for, over a connection
// whose writes cannot go on after a deadline, or at a ctx's deadline
// that ctx has not reported yet; and what its answer check and its
// broken outbox keep.

// wpCountConn counts the Write calls made on the connection it wraps;
// unlike writeCounter it does not unwrap (no NetConn): it hides what it
// wraps, as a plain wrapper does.
type wpCountConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *wpCountConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// wpUnwrapConn is wpCountConn that unwraps to under with NetConn, as a
// thin wrapper of a socket does: resumableConn takes it for under.
type wpUnwrapConn struct {
	wpCountConn
	under net.Conn
}

func (c *wpUnwrapConn) NetConn() net.Conn { return c.under }

// NetConn makes writeCounter (verify_session_test.go), which wraps a
// pipe that stands for a socket, unwrap to it: resumableConn takes a
// wrapper that does not for what it may hide (TLS), not resumable.
func (w *writeCounter) NetConn() net.Conn { return w.Conn }

// wpTLSPair returns the client end of a TLS connection over net.Pipe
// whose server end completes the handshake and then never reads, and
// the pipe end under the client's TLS.
func wpTLSPair(t *testing.T) (*tls.Conn, net.Conn) {
	cert, roots := selfSigned(t)
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	srv := tls.Server(b, &tls.Config{Certificates: []tls.Certificate{cert}})
	go srv.Handshake() // then never reads again
	tc := tls.Client(a, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc, a
}

// A *tls.Conn inside a type of the caller's that hides it (a metrics
// wrapper's struct{ net.Conn }, no NetConn) is not resumable: a call
// whose deadline passes while its write is blocked does not cut the
// write (crypto/tls would fail every later write at once, with an error
// that matches os.ErrDeadlineExceeded: the write, handed over, was tried
// again and again until the write timeout, a core busy); the write goes
// on in a goroutine of its own until the write timeout breaks the
// connection.
func TestHiddenTLSWriteNotCut(t *testing.T) {
	tc, under := wpTLSPair(t)
	hc := &wpCountConn{Conn: tc}
	if resumableConn(hc) {
		t.Fatal("TLS in a plain wrapper taken for resumable")
	}
	c := NewClient(hc, WithWriteTimeout(400*time.Millisecond), WithAnswerTimeout(0))
	t.Cleanup(func() { c.Close() })
	t.Cleanup(func() { under.Close() }) // first: TLS's Close would wait 5 s to send close-notify
	handed := handOffs.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want the deadline", err)
	}
	await(t, "the write timeout to break the client", c.Closed)
	if n := handOffs.Load() - handed; n != 0 {
		t.Errorf("%d writes cut at the deadline and handed over", n)
	}
	if n := hc.writes.Load(); n > 10 {
		t.Errorf("%d Write calls on a TLS connection that takes nothing: busy loop", n)
	}
}

// On a client, nothing but the outbox sets a write deadline on nc: a
// write that fails on a deadline while none of the outbox's is due,
// taking nothing, fails for good, and breaks the client at once. Here a
// wrapper unwraps with NetConn to the pipe under a TLS layer it hides
// (resumableConn cannot know): a call's deadline cuts a write mid-record,
// and crypto/tls then fails every write with a timeout. The handed-over
// rest used to be tried again and again until the write timeout.
func TestWriteFailingOnDeadlineNotOursBreaks(t *testing.T) {
	tc, under := wpTLSPair(t)
	hc := &wpUnwrapConn{wpCountConn: wpCountConn{Conn: tc}, under: under}
	if !resumableConn(hc) {
		t.Fatal("the wrapper is not taken for the pipe it unwraps to")
	}
	c := NewClient(hc, WithWriteTimeout(time.Second), WithAnswerTimeout(0))
	t.Cleanup(func() { c.Close() })
	t.Cleanup(func() { under.Close() }) // see TestHiddenTLSWriteNotCut
	handed := handOffs.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The call returns at its deadline, or with the break, which comes
	// at once.
	if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
		t.Fatalf("call: %v, want the deadline or ErrClosed", err)
	}
	if handOffs.Load() == handed {
		t.Fatal("the write was not cut at the deadline: the test did not exercise a torn record")
	}
	await(t, "the client to break", c.Closed)
	err := c.out.failure()
	if !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errWriteTimeout) {
		t.Errorf("the stream broke with %v, want crypto/tls's error (at once, not the write timeout)", err)
	}
	if n := hc.writes.Load(); n > 10 {
		t.Errorf("%d Write calls on a torn TLS connection: busy loop", n)
	}
}

// wpHeldClose is a connection whose Close blocks until release is
// closed (a TLS connection sending its close-notify alert to a peer that
// does not read waits up to 5 s so). With under, it unwraps to it.
type wpHeldClose struct {
	net.Conn
	under   net.Conn
	release chan struct{}
	closes  atomic.Int32
}

func (c *wpHeldClose) Close() error {
	c.closes.Add(1)
	<-c.release
	return c.Conn.Close()
}

type wpHeldCloseUnwrap struct{ *wpHeldClose }

func (c wpHeldCloseUnwrap) NetConn() net.Conn { return c.under }

// A write that a goroutine no caller waits for runs (a caller's with a
// ctx that can end, on a connection that is not resumable; or the rest
// of a write handed over at a ctx's end) and that the write timeout
// breaks fails the client at once: its calls get the error and Closed
// turns true (rpc/cluster redials), without waiting for the read loop to
// see nc's Close end, which here does not.
func TestBackgroundWriteFailureFailsClient(t *testing.T) {
	for _, resumable := range []bool{false, true} {
		name := "not resumable"
		if resumable {
			name = "handed over"
		}
		t.Run(name, func(t *testing.T) {
			a, b := net.Pipe() // b never reads
			t.Cleanup(func() { a.Close(); b.Close() })
			hc := &wpHeldClose{Conn: a, under: a, release: make(chan struct{})}
			var nc net.Conn = hc
			if resumable {
				nc = wpHeldCloseUnwrap{hc}
			}
			if resumableConn(nc) != resumable {
				t.Fatalf("resumable %v, want %v", !resumable, resumable)
			}
			c := NewClient(nc, WithWriteTimeout(200*time.Millisecond), WithAnswerTimeout(0))
			t.Cleanup(func() {
				close(hc.release)
				c.Close()
			})
			handed := handOffs.Load()
			if resumable {
				// The call's deadline cuts its write; the rest is
				// handed over.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("call: %v, want the deadline", err)
				}
				if handOffs.Load() == handed {
					t.Fatal("the write was not handed over")
				}
				await(t, "the client to break", c.Closed)
			} else {
				// The call's ctx can end: its write runs in a
				// goroutine of its own, the call waits.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errc := make(chan error, 1)
				go func() {
					_, err := c.Call(ctx, mEcho, []byte("x"), nil)
					errc <- err
				}()
				err := receive(t, "the call to fail", errc)
				if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), errWriteTimeout.Error()) {
					t.Fatalf("call: %v, want ErrClosed by the write timeout", err)
				}
				if !c.Closed() {
					t.Error("the call failed, Closed is false")
				}
			}
			if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), errWriteTimeout.Error()) {
				t.Errorf("call after the break: %v, want ErrClosed by the write timeout", err)
			}
			// Closed by a goroutine of its own once the client is
			// failed (a Close may block: see Client.fail).
			await(t, "nc closed", func() bool { return hc.closes.Load() != 0 })
		})
	}
}

// wpLagCtx reports a deadline earlier than the moment its Done closes:
// a ctx whose end is propagated by a goroutine of its own (or the µs
// between the socket's deadline and the ctx's own timer).
type wpLagCtx struct {
	context.Context
	dl time.Time
}

func (c wpLagCtx) Deadline() (time.Time, bool) { return c.dl, true }

// A write whose ctx's deadline (set on nc) passes before ctx reports its
// end is handed over at the deadline: the past deadline, kept, failed
// every Write at once, and the write loop spun until ctx's Err turned.
func TestWriteHandedOverAtCtxDeadline(t *testing.T) {
	a, b := net.Pipe() // b never reads: every Write blocks
	t.Cleanup(func() { a.Close(); b.Close() })
	cc := &wpUnwrapConn{wpCountConn: wpCountConn{Conn: a}, under: a}
	c := NewClient(cc, WithWriteTimeout(time.Hour))
	t.Cleanup(func() { c.Close() })
	handed := handOffs.Load()
	base, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	ctx := wpLagCtx{base, time.Now().Add(30 * time.Millisecond)}
	if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want the deadline", err)
	}
	if handOffs.Load() == handed {
		t.Error("the write was not handed over")
	}
	if n := cc.writes.Load(); n > 10 {
		t.Errorf("%d Write calls during one blocked request write: the write loop spun between the deadline and ctx's Err", n)
	}
	if c.Closed() {
		t.Errorf("client closed: %v", c.out.failure())
	}
}

// The same for the writer that room makes of a caller waiting for room
// while nobody writes: handed over at ctx's deadline, it returns ctx's
// error once ctx reports it, and does not spin meanwhile.
func TestRoomWriteHandedOverAtCtxDeadline(t *testing.T) {
	a, b := net.Pipe() // b never reads
	t.Cleanup(func() { a.Close(); b.Close() })
	cc := &wpUnwrapConn{wpCountConn: wpCountConn{Conn: a}, under: a}
	var o outbox
	o.setup(cc, time.Hour, 0)
	o.soleDL = true
	o.mu.Lock()
	o.cur = &outBuf{B: make([]byte, outboxLimit)} // full, nobody writes
	o.mu.Unlock()
	base, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	ctx := wpLagCtx{base, time.Now().Add(30 * time.Millisecond)}
	handed := handOffs.Load()
	if err := o.room(ctx); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			o.mu.Unlock()
		}
		t.Fatalf("room: %v, want the deadline", err)
	}
	if handOffs.Load() == handed {
		t.Error("the write was not handed over")
	}
	if n := cc.writes.Load(); n > 10 {
		t.Errorf("%d Write calls during one blocked write: the write loop spun between the deadline and ctx's Err", n)
	}
}

// The answer check counts the calls that wait for their answers (and the
// abandoned ones), not a promise whose answer came and that its caller
// has not waited for yet: against a canonical server (no pong), a
// healthy idle client holding such a promise was closed after the answer
// timeout. The checks are run by hand (the client has no beat).
func TestAnswerCheckSkipsAnsweredPromise(t *testing.T) {
	const mSilent = 99 // the peer does not answer it
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := NewClient(a, WithWriteTimeout(0), WithAnswerTimeout(0))
	t.Cleanup(func() { c.Close() })
	if c.beatE != nil {
		t.Fatal("the client is in the beat: the checks below would race with it")
	}
	peer := &rawConn{t, b}
	go serveCanonical(peer, mSilent, nil) // answers requests (but mSilent's), ignores pings
	p, err := c.Send(context.Background(), mEcho, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the promise's answer", func() bool { return p.s.st.Load()&slotStateMask == slotDelivered })
	// The read loop counts the answer's frame for the checks (Framed) as
	// its next read begins, after the delivery: a check that saw it
	// counted later would take it for life and start its count again.
	await(t, "the answer's frame counted", func() bool { return c.r.Framed() == c.r.Received() })
	for range 8 { // two answer timeouts of checks, no byte received
		c.check()
	}
	if c.quiet != 0 || c.Closed() {
		t.Fatalf("%d quiet checks counted (closed: %v) with an answered promise only", c.quiet, c.Closed())
	}
	if out, err := p.Wait(context.Background()); err != nil || string(out) != "x" {
		t.Fatalf("Wait: %q, %v", out, err)
	}
	// A call that waits is counted: five quiet checks close the client.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mSilent, nil, nil)
		errc <- err
	}()
	// Waiting, not just holding its slot (Pending counts it from the pop,
	// pending from the state that says it waits).
	await(t, "the silent call to wait", func() bool { return c.Pending() == 1 && c.pending() })
	for range 5 {
		c.check()
	}
	if err := receive(t, "the silent call to fail", errc); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), errNoAnswer.Error()) {
		t.Fatalf("silent call: %v, want ErrClosed for no answer", err)
	}
}

// An abandoned call's slot, freed by its late answer or by the client's
// close, does not keep the caller's buffer.
func TestFreedAbandonedSlotDropsResp(t *testing.T) {
	for _, byClose := range []bool{false, true} {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		c := NewClient(a, WithWriteTimeout(0), WithAnswerTimeout(0))
		t.Cleanup(func() { c.Close() })
		peer := &rawConn{t, b}
		pids := make(chan uint32, 1)
		go func() {
			for {
				kind, env, ok := peer.recv()
				if !ok {
					return
				}
				if kind == wire.KindRequest {
					req, err := wire.ParseRequest(env)
					if err != nil {
						return
					}
					pids <- req.PromiseID
				}
			}
		}()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, mEcho, []byte("x"), make([]byte, 0, 1<<10))
			errc <- err
		}()
		pid := receive(t, "the request", pids)
		cancel()
		if err := receive(t, "the call to return", errc); !errors.Is(err, context.Canceled) {
			t.Fatalf("call: %v", err)
		}
		if byClose {
			c.Close()
		} else {
			resp := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid})
			if _, err := b.Write(frameBytes(wire.KindResponse, resp)); err != nil {
				t.Fatal(err)
			}
		}
		await(t, "the abandoned slot to be freed", func() bool { return c.busySlots() == 0 })
		if s := (*c.table.Load())[0]; s.resp != nil {
			t.Errorf("freed by close %v: the idle slot keeps the caller's buffer", byClose)
		}
	}
}

// A broken outbox keeps no queue buffer: neither the queue and spare it
// had (halt), nor the buffer its writer was writing when it broke (given
// back after the write), nor one taken by a frame begun after the
// break.
func TestBrokenOutboxKeepsNoBuffer(t *testing.T) {
	a, b := net.Pipe() // b does not read until the break
	t.Cleanup(func() { a.Close(); b.Close() })
	var o outbox
	o.setup(a, 0, 0)
	buf := o.begin(wire.KindPing)
	lead, err := o.end(buf)
	if !lead || err != nil {
		t.Fatalf("end: lead %v, %v", lead, err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- o.flush(false) }() // blocks: b does not read
	await(t, "the writer to take the queue", func() bool { return o.takenSince(0) })
	if _, err := o.end(o.begin(wire.KindPing)); err != nil { // queued behind the write
		t.Fatal(err)
	}
	o.mu.Lock()
	o.spare = outBufs.Get().(*outBuf)
	o.mu.Unlock()
	broken := errors.New("broken")
	o.shut(broken)
	o.mu.Lock()
	if o.cur != nil || o.spare != nil {
		t.Errorf("after shut: queue %p, spare %p kept", o.cur, o.spare)
	}
	o.mu.Unlock()
	go io.Copy(io.Discard, b) // the write ends well: its buffer comes back to a broken outbox
	if err := receive(t, "the writer", flushed); err != broken {
		t.Fatalf("flush: %v, want the stream's error", err)
	}
	o.mu.Lock()
	if o.cur != nil || o.spare != nil || o.flushing {
		t.Errorf("after the write: queue %p, spare %p, writing %v", o.cur, o.spare, o.flushing)
	}
	o.mu.Unlock()
	if _, err := o.end(o.begin(wire.KindPing)); err != broken {
		t.Fatalf("end after the break: %v", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur != nil || o.spare != nil || o.flushing {
		t.Errorf("broken outbox: queue %p, spare %p, writing %v", o.cur, o.spare, o.flushing)
	}
}

// Release twice at once (both past owned), or after the slot went to
// another call, neither waits forever for a signal already taken nor
// gives up the other call.
func TestPromiseDropNotOwned(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	ctx := context.Background()
	p, err := c.Send(ctx, mEcho, []byte("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the answer", func() bool { return p.s.st.Load()&slotStateMask == slotDelivered })
	done := make(chan struct{})
	go func() {
		c.drop(p.s, p.pid)
		c.drop(p.s, p.pid) // as a second Release that passed owned() first
		close(done)
	}()
	receive(t, "the drops", done)
	q, err := c.Send(ctx, mEcho, []byte("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.s != p.s {
		t.Fatal("the second call did not reuse the slot")
	}
	c.drop(p.s, p.pid) // p's drop, late: the slot is q's now
	if out, err := q.Wait(ctx); err != nil || string(out) != "b" {
		t.Fatalf("the slot's next call: %q, %v", out, err)
	}
}

// A full table of calls that wait for their answers (none abandoned)
// refuses the next call, and keeps the connection: with a table of one,
// half of it is 0, which no abandoned count may reach.
func TestTableOfOneFullKeepsConn(t *testing.T) {
	cli, srv := net.Pipe()
	c := NewClient(cli, WithMaxPending(1))
	t.Cleanup(func() { c.Close(); srv.Close() })
	peer := &rawConn{t, srv}
	errs := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("first"), nil)
		errs <- err
	}()
	r := peer.recvRequest()
	if _, err := c.Call(context.Background(), mEcho, []byte("second"), nil); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("second call: %v, want ErrTooManyPending", err)
	}
	if c.Closed() {
		t.Fatal("a full table closed the connection")
	}
	peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
	if err := receive(t, "the first call", errs); err != nil {
		t.Fatal(err)
	}
}

// TestTooLargeRequestFullQueue: a request above the maximum frame size
// fails with frame.ErrFrameTooLarge whether or not the connection's queue
// is full; it used to wait for room first (until its ctx ended, or the
// write timeout closed the connection), so it failed with ctx's error or
// ErrClosed, which say nothing of the request and invite a retry.
func TestTooLargeRequestFullQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(c *Client, req []byte) error
	}{
		{"Call", func(c *Client, req []byte) error {
			_, err := c.Call(context.Background(), mEcho, req, nil)
			return err
		}},
		{"Send", func(c *Client, req []byte) error {
			_, err := c.Send(context.Background(), mEcho, req, nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := pipeClient(t) // the peer reads nothing
			// One request in a write the peer never takes, one more in the
			// queue: the queue is full.
			big := make([]byte, outboxLimit)
			queue := func(what string, cond func() bool) {
				startCalls(c, big, 1)
				await(t, what, func() bool {
					c.out.mu.Lock()
					defer c.out.mu.Unlock()
					return cond()
				})
			}
			queue("the first request in a write", func() bool { return c.out.taken == 1 && c.out.flushing })
			queue("a full queue", func() bool { return c.out.queued() >= outboxLimit })
			errs := make(chan error, 1)
			go func() { errs <- tc.call(c, make([]byte, c.out.max)) }()
			if err := receive(t, "the too large request's error", errs); !errors.Is(err, frame.ErrFrameTooLarge) {
				t.Fatalf("got %v, want frame.ErrFrameTooLarge", err)
			}
			if c.Closed() || c.Pending() != 2 || c.Promises() != 0 {
				t.Fatalf("Closed %v, Pending %d, Promises %d; want false, 2 (the queued calls), 0", c.Closed(), c.Pending(), c.Promises())
			}
		})
	}
}

// A client NewClient runs TLS over (WithTLSConfig), whose peer takes the
// ClientHello and never answers: the handshake is bounded by the shorter
// of the write and answer timeouts, and the calls, whether their writes
// wait for the handshake in the caller (no ctx) or in the writer
// goroutine (a ctx that can end), fail with ErrClosed saying that the
// handshake was not done. They used to fail by the write timeout's last
// resort, a write timeout after the beat's past write deadline, which
// cannot end a wait for the handshake, saying that the peer "does not
// read". (The bound is armed as the read loop starts, which a call's
// write may precede; that last resort comes a write timeout later.)
func TestNewClientTLSHandshakeNotAnswered(t *testing.T) {
	for _, withCtx := range []bool{false, true} {
		name := "background"
		if withCtx {
			name = "ctx"
		}
		t.Run(name, func(t *testing.T) {
			a, b := net.Pipe()
			t.Cleanup(func() { a.Close(); b.Close() })
			go io.Copy(io.Discard, b) // reads, never answers
			_, roots := selfSigned(t)
			c := NewClient(a, WithTLSConfig(&tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}),
				WithWriteTimeout(500*time.Millisecond), WithAnswerTimeout(time.Hour))
			t.Cleanup(func() { c.Close() })
			ctx := context.Background()
			if withCtx {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mEcho, []byte("x"), nil)
				errc <- err
			}()
			err := receive(t, "the call to fail", errc)
			if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "tls handshake not done") {
				t.Errorf("call: %v, want ErrClosed for the handshake not done", err)
			}
		})
	}
}

// A promise waited for (or released) once is refused a second Wait or
// Release on any copy, even once its slot has served 65,536 more calls and
// the promise id comes round again to a new promise's: the stale copy
// does not take the new promise's answer (nor drop it), and the new
// promise gets it. Before, sendPromise cleared the slot's spent mark for
// the new promise, and the stale copy, whose id matched, was served. (Most
// of the 65,535 calls between are stood in for by the slot's generation,
// set to the last one; the wrap and the calls after it are real.)
func TestStalePromiseAfterIDWraps(t *testing.T) {
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	ctx := context.Background()
	for _, release := range []bool{false, true} {
		p, err := c.Send(ctx, mEcho, []byte("old"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := p.Wait(ctx); err != nil || string(out) != "old" {
			t.Fatalf("the first promise: %q, %v", out, err)
		}
		// The calls between: the last generation (as the uses since p
		// left it), then real calls through the wrap up to p's.
		p.s.gen = 0xFFFF
		for p.s.gen != uint16(p.pid>>16) {
			if out, err := c.Call(ctx, mEcho, []byte("between"), nil); err != nil || string(out) != "between" {
				t.Fatalf("a call between: %q, %v", out, err)
			}
		}
		q, err := c.Send(ctx, mEcho, []byte("new"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.s != p.s || q.pid != p.pid {
			t.Fatalf("the new promise has slot %p id %#x, the old one %p %#x: not the case under test", q.s, q.pid, p.s, p.pid)
		}
		if release {
			p.Release()
		} else if out, err := p.Wait(ctx); err != errNoPromise {
			t.Fatalf("the stale promise's second Wait: %q, %v, want errNoPromise", out, err)
		}
		if out, err := q.Wait(ctx); err != nil || string(out) != "new" {
			t.Fatalf("the new promise (stale one released: %v): %q, %v", release, out, err)
		}
	}
}
