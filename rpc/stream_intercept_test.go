package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Server stream interceptors run first-outermost around the handler, see
// the method, the init and the open's metadata, can refuse a stream
// (auth) with a status the client's Recv returns, see every message both
// ways through a tap, can stop a message, and a panic in one ends the
// stream with 500 while the connection goes on.
func TestServerStreamInterceptors(t *testing.T) {
	tr := &trace{}
	var tapIn, tapOut atomic.Int64
	named := func(name string) StreamInterceptor {
		return func(ctx context.Context, method uint32, init []byte, s *Stream, next StreamHandler) error {
			tr.add(name + ">" + string(rune('0'+method-sCount)))
			err := next(ctx, init, s)
			tr.add("<" + name)
			return err
		}
	}
	auth := func(ctx context.Context, method uint32, init []byte, s *Stream, next StreamHandler) error {
		if string(init) == "boom" {
			panic("interceptor panic")
		}
		if string(MetadataFrom(ctx).Get("token")) != "secret" {
			tr.add("denied")
			return Errorf(403, "no token")
		}
		s.Tap(StreamTap{
			Recv: func(msg []byte) error {
				tapIn.Add(1)
				if string(msg) == "bad" {
					return Errorf(400, "bad message")
				}
				return nil
			},
			Send: func(msg []byte) error {
				tapOut.Add(1)
				return nil
			},
		})
		return next(ctx, init, s)
	}
	s, addr, logs := streamServer(t, WithStreamInterceptors(named("a"), named("b")), WithStreamInterceptors(auth))
	// sEcho, with the tap's refusals passed over rather than ending it.
	s.HandleStream(sEcho, func(ctx context.Context, init []byte, st *Stream) error {
		var buf []byte
		for {
			m, err := st.Recv(buf[:0])
			if err == io.EOF {
				return nil
			}
			if Code(err) == 400 {
				tr.add("dropped")
				continue
			}
			if err != nil {
				return err
			}
			tr.add("h:" + string(m))
			if err := st.Send(m); err != nil {
				return err
			}
			buf = m
		}
	})
	c := dial(t, addr)
	ctx := WithMetadata(context.Background(), "token", "secret")

	st, err := c.OpenStream(ctx, sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "bad", "two"} {
		if err := st.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	msgs, err := recvAll(st)
	if err != io.EOF || len(msgs) != 2 || string(msgs[0]) != "one" || string(msgs[1]) != "two" {
		t.Fatalf("echo through the interceptors: %q %v", msgs, err)
	}
	await(t, "the handler's end", func() bool { return s.Stats().Streams.OK == 1 })
	if got := tr.take(); got != "a>2 b>2 h:one dropped h:two <b <a" {
		t.Fatalf("order: %q", got)
	}
	if tapIn.Load() != 3 || tapOut.Load() != 2 {
		t.Fatalf("the tap saw %d messages in and %d out, want 3 and 2", tapIn.Load(), tapOut.Load())
	}

	// No token: refused by the interceptor, the handler does not run.
	st, err = c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); Code(err) != 403 || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("a stream without a token: %v", err)
	}
	if got := tr.take(); got != "a>2 b>2 denied <b <a" {
		t.Fatalf("order when refused: %q", got)
	}

	// A panic in an interceptor: 500, logged, the connection goes on.
	st, err = c.OpenStream(ctx, sEcho, []byte("boom"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); Code(err) != StatusInternal {
		t.Fatalf("a panicking interceptor: %v", err)
	}
	tr.take()
	if !strings.Contains(logs.String(), "interceptor panic") {
		t.Fatalf("the panic was not logged: %s", logs)
	}
	if out, err := c.Call(ctx, mEcho, []byte("still"), nil); err != nil || string(out) != "still" {
		t.Fatalf("a call after the panic: %q %v", out, err)
	}
	// Unary interceptors are not stream ones: a unary call ran none.
	if got := tr.take(); got != "" {
		t.Fatalf("stream interceptors ran around a unary call: %q", got)
	}
}

// Client stream interceptors run first-outermost around OpenStream, may
// add metadata the handler sees, refuse an open without sending it, and
// tap the messages of the stream they return.
func TestClientStreamInterceptors(t *testing.T) {
	tr := &trace{}
	var seen atomic.Value
	s, addr, _ := streamServer(t)
	s.HandleStream(sBlock, func(ctx context.Context, init []byte, st *Stream) error {
		seen.Store(string(MetadataFrom(ctx).Get("trace")))
		return st.Send(init)
	})
	named := func(name string) StreamClientInterceptor {
		return func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
			tr.add(name + ">")
			st, err := open(ctx, method, init)
			tr.add("<" + name)
			return st, err
		}
	}
	errRefused := errors.New("refused by the interceptor")
	var recvd atomic.Int64
	meta := func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
		if string(init) == "refuse" {
			return nil, errRefused
		}
		st, err := open(WithMetadata(ctx, "trace", "t-1"), method, init)
		if err != nil {
			return nil, err
		}
		st.Tap(StreamTap{Recv: func(msg []byte) error {
			recvd.Add(1)
			if string(msg) == "hidden" {
				return errors.New("tap refused")
			}
			return nil
		}})
		return st, nil
	}
	c := dial(t, addr, WithStreamClientInterceptors(named("a"), named("b")), WithStreamClientInterceptors(meta))
	st, err := c.OpenStream(context.Background(), sBlock, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := recvAll(st)
	if err != io.EOF || len(msgs) != 1 || string(msgs[0]) != "hello" {
		t.Fatalf("%q %v", msgs, err)
	}
	if got := tr.take(); got != "a> b> <b <a" {
		t.Fatalf("order: %q", got)
	}
	if v, _ := seen.Load().(string); v != "t-1" {
		t.Fatalf("the handler saw trace %q, want the interceptor's t-1", v)
	}
	if recvd.Load() != 1 {
		t.Fatalf("the tap saw %d messages, want 1", recvd.Load())
	}
	// The tap's error comes out of Recv instead of the message.
	st, err = c.OpenStream(context.Background(), sBlock, []byte("hidden"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err == nil || err.Error() != "tap refused" || len(m) != 0 {
		t.Fatalf("Recv of a message the tap refused: %q %v", m, err)
	}
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("after the refused message: %v", err)
	}
	// Refused by an interceptor: nothing reaches the server.
	before := s.Stats().Streams.Opened
	tr.take()
	if _, err := c.OpenStream(context.Background(), sBlock, []byte("refuse")); err != errRefused {
		t.Fatalf("refused open: %v", err)
	}
	if got := tr.take(); got != "a> b> <b <a" {
		t.Fatalf("order when refused: %q", got)
	}
	if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Streams.Opened; n != before {
		t.Fatalf("a refused open reached the server (%d streams opened, was %d)", n, before)
	}
}

// A client stream interceptor that returns neither a stream nor an
// error: OpenStream says so rather than returning a nil stream.
func TestStreamInterceptorNoStream(t *testing.T) {
	_, addr, _ := streamServer(t)
	c := dial(t, addr, WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
		return nil, nil
	}))
	if st, err := c.OpenStream(context.Background(), sEcho, nil); st != nil || err != ErrNoStreamFromInterceptor {
		t.Fatalf("%v %v", st, err)
	}
}

// sTagged is the stream method of the orphan tests: it echoes every
// message, and at its end reports its init (the stream's tag) and how the
// stream ended.
const sTagged = 51

// taggedEnd is how a stream of sTagged ended on the server: the error of
// the Recv that ended it, and the handler's ctx's error then.
type taggedEnd struct {
	tag       string
	recv, ctx error
}

// handleTagged registers sTagged on s, reporting every stream's end on
// the channel it returns. A stream whose init is "done" ends at once.
func handleTagged(s *Server) <-chan taggedEnd {
	ended := make(chan taggedEnd, 16)
	s.HandleStream(sTagged, func(ctx context.Context, init []byte, st *Stream) error {
		tag := string(init)
		for tag != "done" {
			m, err := st.Recv(nil)
			if err != nil {
				if err != io.EOF {
					<-ctx.Done() // the client's cancel ends it right after Recv
				}
				ended <- taggedEnd{tag, err, ctx.Err()}
				return nil
			}
			if err := st.Send(m); err != nil {
				return err
			}
		}
		ended <- taggedEnd{tag, io.EOF, nil}
		return nil
	})
	return ended
}

// orphanRow is one way a client stream interceptor opens streams: ic
// opens through tagged, which notes the streams other than "kept" as
// orphans, and returns what the test's OpenStream gets.
type orphanRow struct {
	name string
	ic   func(ctx context.Context, tagged func(ctx context.Context, tag string) *Stream) (*Stream, error)
	err  error // OpenStream's
	kept bool  // OpenStream returns a working stream
}

// A client stream interceptor that opens a stream and does not return
// it (it refuses the open after looking, opens again, returns nothing,
// returns a stream from elsewhere, or opens on another goroutine) leaves
// no stream open: the chain cancels it, the client forgets it and the
// server handler's ctx ends, while the stream the chain returns works.
// A stream that had ended already is left as it was.
func TestStreamClientInterceptorOrphansCanceled(t *testing.T) {
	s, addr, _ := streamServer(t)
	ended := handleTagged(s)
	elsewhere := dial(t, addr)
	errRefused := errors.New("refused after a look")
	rows := []orphanRow{
		{name: "open and return it", kept: true, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			return tagged(ctx, "kept"), nil
		}},
		{name: "open then refuse", err: errRefused, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			tagged(ctx, "orphan")
			return nil, errRefused
		}},
		{name: "open under a derived ctx then refuse", err: errRefused, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			tagged(WithMetadata(ctx, "k", "v"), "orphan")
			return nil, errRefused
		}},
		{name: "return the stream with an error", err: errRefused, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			return tagged(ctx, "orphan"), errRefused
		}},
		{name: "open twice, return the second", kept: true, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			tagged(ctx, "orphan")
			return tagged(ctx, "kept"), nil
		}},
		{name: "open then return nothing", err: ErrNoStreamFromInterceptor, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			tagged(ctx, "orphan")
			return nil, nil
		}},
		{name: "return a stream opened elsewhere", kept: true, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			tagged(ctx, "orphan")
			return elsewhere.OpenStream(context.Background(), sTagged, []byte("kept"))
		}},
		{name: "open on two goroutines, return one", kept: true, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			done := make(chan struct{})
			go func() { tagged(ctx, "orphan"); close(done) }()
			st := tagged(ctx, "kept")
			<-done
			return st, nil
		}},
		{name: "open one the server ends, then return another", kept: true, ic: func(ctx context.Context, tagged func(context.Context, string) *Stream) (*Stream, error) {
			if _, err := tagged(ctx, "done").Recv(nil); err != io.EOF {
				return nil, err
			}
			return tagged(ctx, "kept"), nil
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			var mu sync.Mutex
			var orphans []*Stream
			c := dial(t, addr, WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
				return row.ic(ctx, func(ctx context.Context, tag string) *Stream {
					st, err := open(ctx, sTagged, []byte(tag))
					if err != nil {
						t.Errorf("open %s: %v", tag, err)
						return nil
					}
					if tag != "kept" {
						mu.Lock()
						orphans = append(orphans, st)
						mu.Unlock()
					}
					return st
				})
			}))
			st, err := c.OpenStream(context.Background(), sTagged, nil)
			if !errors.Is(err, row.err) {
				t.Fatalf("OpenStream: %v, want %v", err, row.err)
			}
			want := 0 // streams open on c: the returned one, if it is c's
			if row.kept && st.set == &c.streams {
				want = 1
			}
			if n := c.Streams(); n != want {
				t.Fatalf("%d streams open on the client after OpenStream, want %d", n, want)
			}
			checkOrphansEnded(t, orphans, ended)
			if row.kept {
				checkKeptWorks(t, st, ended)
			}
		})
	}
}

// checkOrphansEnded checks that every stream an interceptor opened and
// did not return ended on both sides: canceled by the chain, or as the
// server ended it ("done").
func checkOrphansEnded(t *testing.T, orphans []*Stream, ended <-chan taggedEnd) {
	t.Helper()
	for _, o := range orphans {
		want := errOpenOrphaned
		e := receive(t, "the server's end of the orphan", ended)
		if e.tag == "done" {
			want = io.EOF
		} else if e.tag != "orphan" || Code(e.recv) != StatusCanceled || e.ctx != context.Canceled {
			t.Fatalf("the server handler of %q ended with Recv's %v and ctx's %v, want a cancel", e.tag, e.recv, e.ctx)
		}
		if _, err := o.Recv(nil); !errors.Is(err, want) {
			t.Fatalf("the client's Recv of the orphan: %v, want %v", err, want)
		}
	}
}

// checkKeptWorks checks that st, the stream OpenStream returned, echoes
// and ends cleanly on both sides.
func checkKeptWorks(t *testing.T, st *Stream, ended <-chan taggedEnd) {
	t.Helper()
	if err := st.Send([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "ping" {
		t.Fatalf("echo on the returned stream: %q %v", m, err)
	}
	st.CloseSend()
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("the returned stream's end: %v", err)
	}
	if e := receive(t, "the server's end of the returned stream", ended); e.tag != "kept" || e.recv != io.EOF {
		t.Fatalf("the server handler of %q ended with %v, want the returned stream's clean end", e.tag, e.recv)
	}
}

// A stream that an interceptor opened and dropped is canceled when the
// chain returns, in OpenStream's caller: the cancel's end is written
// under the caller's ctx, so OpenStream returns by that ctx's end
// although the server does not read, and the end still goes out once it
// reads again. Before, the end was written without a ctx and OpenStream
// waited for the write timeout.
//
// The ctx is canceled once the stream is open: its deadline of 100 ms
// passed, on a loaded machine, before the peer read the open, and the
// open failed.
func TestStreamInterceptorOrphanPeerNotReading(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	errDropped := errors.New("dropped by the interceptor")
	dropping := make(chan struct{}, 1)
	c := NewClient(a, WithWriteTimeout(time.Hour), WithStreamClientInterceptors(
		func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
			if _, err := open(ctx, method, init); err != nil {
				return nil, err
			}
			dropping <- struct{}{}
			return nil, errDropped
		}))
	t.Cleanup(func() { c.Close() })
	peer := &rawConn{t, b}
	read := make(chan uint32, 1)
	go func() { // the hello and the open, then nothing for now
		peer.recv()
		_, env, _ := peer.recv()
		req, _ := wire.ParseRequest(env)
		read <- req.PromiseID
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := make(chan error, 1)
	go func() {
		_, err := c.OpenStream(ctx, 1, nil)
		opened <- err
	}()
	id := receive(t, "the open", read)
	receive(t, "the interceptor to drop the stream", dropping)
	cancel() // the peer still does not read
	if err := receive(t, "OpenStream", opened); err != errDropped {
		t.Fatalf("OpenStream: %v, want the interceptor's error", err)
	}
	kind, env, ok := peer.recv()
	if !ok || kind != wire.KindStreamEnd {
		t.Fatalf("frame kind %d (ok %v), want the orphan's end", kind, ok)
	}
	if e, err := wire.ParseStreamEnd(env); err != nil || e.ID != id || e.Status != StatusCanceled {
		t.Fatalf("end %+v, %v: want stream %d canceled", e, err, id)
	}
}
