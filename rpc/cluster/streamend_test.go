package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// A stream opened through the cluster counts at its end toward its
// replica's ejection, as a call does (gRPC's outlier detection counts
// streams by their final status too): a server's error end of 500 and
// above, or 404 "no such stream method", is a failed call; a handler's
// own 4xx and a clean end are answers, which end the failures in a row.
// It used to count nothing: a replica whose streams all failed was never
// ejected.
func TestStreamEndCountsTowardEjection(t *testing.T) {
	const (
		mFail500 = 40 // stream: ends with a 500 at once
		mFail400 = 41 // stream: ends with a 400 at once
		mClean   = 42 // stream: ends cleanly at once
		mNone    = 43 // no handler: the server refuses the open 404
	)
	a := startReplica(t, "127.0.0.1")
	a.server().HandleStream(mFail500, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		return rpc.Errorf(rpc.StatusInternal, "broken replica")
	})
	a.server().HandleStream(mFail400, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		return rpc.Errorf(rpc.StatusBadRequest, "bad stream")
	})
	a.server().HandleStream(mClean, func(ctx context.Context, init []byte, st *rpc.Stream) error { return nil })
	c := dialT(t, "static:///"+a.addr, WithEjection(4, time.Hour, time.Hour), WithHealthCheck(time.Hour, 0))
	r := replicaOf(c, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// run opens a stream of m and reads it to its end, which must be
	// want's (nil: clean).
	run := func(m uint32, code uint32) {
		t.Helper()
		st, err := c.OpenStream(ctx, m, nil)
		if err != nil {
			t.Fatalf("open %d: %v", m, err)
		}
		_, err = st.Recv(nil)
		if code == 0 && err != io.EOF || code != 0 && rpc.Code(err) != code {
			t.Fatalf("stream %d ended with %v, want status %d", m, err, code)
		}
	}
	fails := func(n int32) func() bool { return func() bool { return r.fails.Load() == n } }
	// The end reaches the replica's count just after Recv returns it:
	// awaited, not read at once.
	run(mFail500, rpc.StatusInternal)
	await(t, "one failure counted", fails(1))
	run(mNone, rpc.StatusNotFound)
	await(t, "two failures counted", fails(2))
	run(mFail400, rpc.StatusBadRequest)
	await(t, "the 400 to end the row", fails(0))
	run(mFail500, rpc.StatusInternal)
	await(t, "one failure counted", fails(1))
	run(mClean, 0)
	await(t, "the clean end to end the row", fails(0))
	for range 4 {
		run(mFail500, rpc.StatusInternal)
	}
	await(t, "the replica ejected after 4 failed streams", func() bool {
		s := c.Stats()
		return s.Ejections == 1 && s.Replicas[0].State == "ejected"
	})
	if err := c.Stats().Replicas[0].LastError; err == nil || rpc.Code(err) != rpc.StatusInternal {
		t.Fatalf("ejected for %v, want the streams' 500", err)
	}
}

// How each end of a stream counts (see Conn.streamEnded): the events a
// connection's stream observer gets, given by hand, so that an end that
// must count nothing is seen to count nothing.
func TestStreamEndClassified(t *testing.T) {
	a := startReplica(t, "127.0.0.1")
	// A back-off base of 1 ns: the broken connection below is not one
	// "gone as soon as it came" (see replica.connect), which would eject
	// the replica and so clear its count of failures under the test.
	c := dialT(t, "static:///"+a.addr, WithEjection(100, time.Nanosecond, time.Hour), WithHealthCheck(time.Hour, 0))
	cn := c.ready.Load().conns[0]
	r := cn.r
	end := func(status uint32, err error) rpc.StreamEvent {
		return rpc.StreamEvent{Client: true, End: true, Status: status, Err: err}
	}
	failing := end(rpc.StatusInternal, rpc.Errorf(rpc.StatusInternal, "x"))
	for _, row := range []struct {
		name string
		ev   rpc.StreamEvent
		want int32 // failures in a row after the event, from 1
	}{
		{"start", rpc.StreamEvent{Client: true}, 1},
		{"500", failing, 2},
		{"502", end(502, rpc.Errorf(502, "bad gateway")), 2},
		{"404 no such stream method", end(rpc.StatusNotFound, rpc.Errorf(rpc.StatusNotFound, "no such stream method")), 2},
		{"handler's 404", end(rpc.StatusNotFound, rpc.Errorf(rpc.StatusNotFound, "no such account")), 0},
		{"400", end(rpc.StatusBadRequest, rpc.Errorf(rpc.StatusBadRequest, "x")), 0},
		{"clean", end(rpc.StatusOK, nil), 0},
		{"clean, trailer refused", end(rpc.StatusOK, errors.New("trailer too large")), 0},
		// The caller's: its ctx ended, or it canceled the stream.
		{"canceled", end(rpc.StatusCanceled, context.Canceled), 1},
		{"ctx's deadline", end(rpc.StatusCanceled, context.DeadlineExceeded), 1},
		// The stream's deadline, which the caller chose, passed on the
		// server: a stream's life is not an answer awaited.
		{"504", end(rpc.StatusDeadlineExceeded, rpc.Errorf(rpc.StatusDeadlineExceeded, "deadline")), 1},
		// An open refused unrun, its deadline passed before the handler
		// could run: marked not run, its error matches
		// context.DeadlineExceeded; it counts nothing either.
		{"504 refused unrun", end(rpc.StatusDeadlineExceeded, fmt.Errorf("refused: %w", context.DeadlineExceeded)), 1},
		// Metadata over the server's limit, refused unrun (marked so):
		// about the call, as a handler's 4xx; the replica answered.
		{"431 refused unrun", end(rpc.StatusMetadataTooLarge, rpc.Errorf(rpc.StatusMetadataTooLarge, "metadata too large")), 0},
		// Not sent (OpenStream counted the refusal already).
		// A server full of streams (rpc.WithMaxStreams) refused the
		// open unrun: load, not failure. A handler's own 503 fails.
		{"503 too many open streams", end(rpc.StatusUnavailable, rpc.Errorf(rpc.StatusUnavailable, streamTooManyText)), 1},
		{"handler's 503", end(rpc.StatusUnavailable, rpc.Errorf(rpc.StatusUnavailable, "backend down")), 2},
		// A handler's 503 "going away" ran, and fails (the refusal of an
		// open by a server going away: below).
		{"handler's 503 going away", end(rpc.StatusUnavailable, rpc.Errorf(rpc.StatusUnavailable, "going away")), 2},
		{"not sent: go-away", end(0, rpc.ErrGoAway), 1},
		{"not sent: ctx", end(0, context.DeadlineExceeded), 1},
		{"wrapped 500", end(rpc.StatusInternal, fmt.Errorf("wrapped: %w", rpc.Errorf(rpc.StatusInternal, "x"))), 2},
	} {
		t.Run(row.name, func(t *testing.T) {
			r.fails.Store(1)
			cn.streamEnded(row.ev)
			if n := r.fails.Load(); n != row.want {
				t.Fatalf("%d failures in a row after the event, want %d", n, row.want)
			}
		})
	}
	// A broken connection: one failure, however many streams were on it,
	// and the connection is replaced.
	r.fails.Store(0)
	broken := end(0, fmt.Errorf("%w: broken", rpc.ErrClosed))
	cn.rc.Close() // as a break would: not the cluster's close
	cn.streamEnded(broken)
	cn.streamEnded(broken)
	if n := r.fails.Load(); n != 1 {
		t.Fatalf("%d failures for a broken connection's two streams, want 1", n)
	}
	if !cn.gone.Load() {
		t.Fatal("the broken connection is still in the ready set")
	}

	// A server going away refuses an open it reads once it has set its
	// go-away flag, which it does before it writes the go-away frame
	// (rpc's serverConn.goAway): the refusal can come first, while the
	// connection is not draining yet. Its error matches rpc.ErrGoAway
	// (the server marks it not run): it counts nothing, and the
	// connection is replaced, as for a call refused unrun.
	await(t, "the broken connection replaced", func() bool { return len(c.ready.Load().conns) == 1 })
	cn = c.ready.Load().conns[0]
	r.fails.Store(1)
	cn.streamEnded(end(rpc.StatusUnavailable, fmt.Errorf("refused: %w", rpc.ErrGoAway)))
	if n := r.fails.Load(); n != 1 {
		t.Fatalf("%d failures in a row after a refusal by a server going away, want 1", n)
	}
	if !cn.gone.Load() {
		t.Fatal("the connection that refused an open unrun is still in the ready set")
	}
}

// A stream whose open the cluster sent again to another replica (the
// first connection refused it before writing it: it had as many streams
// open as it may, or its server was going away) gives the caller's
// response metadata receiver (rpc.WithResponseMetadata) the trailer of
// the stream that answered: the refused attempt, which empties it at
// its open like any, leaves nothing of its own in it.
func TestRetriedStreamOpenResponseMetadata(t *testing.T) {
	const (
		mMeta = 44 // stream: ends at once, with a trailer naming its replica unless init is "none"
		mHold = 45 // stream: held open until the client cancels it
	)
	for _, refusal := range []string{"too many streams", "go-away"} {
		t.Run(refusal, func(t *testing.T) {
			a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
			for _, r := range []*replicaSrv{a, b} {
				name := r.addr
				r.server().HandleStream(mMeta, func(ctx context.Context, init []byte, st *rpc.Stream) error {
					if string(init) != "none" {
						if err := rpc.SetResponseMetadata(ctx, "from", name); err != nil {
							return err
						}
					}
					return nil
				})
				r.server().HandleStream(mHold, func(ctx context.Context, init []byte, st *rpc.Stream) error {
					<-ctx.Done()
					return nil
				})
			}
			// hold, when set, holds the next open of a's connection
			// until release is closed.
			var hold atomic.Bool
			entered, release := make(chan struct{}), make(chan struct{})
			ic := func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
				if method == mMeta && hold.CompareAndSwap(true, false) {
					close(entered)
					<-release
				}
				return open(ctx, method, init)
			}
			c := dialT(t, "static:///"+a.addr+","+b.addr, WithBalancer(firstAddr{a.addr}), WithHealthCheck(time.Hour, 0),
				WithClientOptions(rpc.WithMaxStreams(1), rpc.WithStreamClientInterceptors(ic)))
			var md rpc.Metadata
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			mdCtx := rpc.WithResponseMetadata(ctx, &md)
			run := func(init string) {
				t.Helper()
				st, err := c.OpenStream(mdCtx, mMeta, []byte(init))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(nil); err != io.EOF {
					t.Fatalf("end: %v", err)
				}
			}
			run("")
			if got := string(md.Get("from")); got != a.addr || md.Len() != 1 {
				t.Fatalf("trailer of the stream on a: from=%q (%d pairs), want %s", got, md.Len(), a.addr)
			}
			switch refusal {
			case "too many streams":
				// a's connection has its one stream open: the next open
				// is refused there, unwritten.
				hctx, hcancel := context.WithCancel(ctx)
				defer hcancel()
				if _, err := c.OpenStream(hctx, mHold, nil); err != nil {
					t.Fatal(err)
				}
				run("")
			case "go-away":
				var connA *Conn
				for _, cn := range c.ready.Load().conns {
					if cn.Addr() == a.addr {
						connA = cn
					}
				}
				hold.Store(true)
				done := make(chan struct{})
				go func() {
					defer close(done)
					run("")
				}()
				<-entered // picked a's connection, not written yet
				go a.shutdown()
				await(t, "a's connection to read the go-away", connA.rc.Draining)
				close(release)
				receive(t, "the stream", done)
			}
			if got := string(md.Get("from")); got != b.addr || md.Len() != 1 {
				t.Fatalf("trailer of the stream sent again to b: from=%q (%d pairs), want %s", got, md.Len(), b.addr)
			}
			if st := c.Stats(); st.Retries != 0 {
				t.Fatalf("stats %+v: an open refused unwritten counted as a retry", st)
			}
			// A stream that ends with no trailer leaves the receiver empty.
			run("none")
			if md.Len() != 0 {
				t.Fatalf("%d pairs after a stream without a trailer, want none", md.Len())
			}
		})
	}
}

// A stream observer given to the connections (WithClientOptions) sees
// every stream, and the stream observer with which each connection
// counts its streams' ends toward its replica's ejection still counts
// them: it runs first, and the caller's after it (a nil one given before
// it changes nothing). The caller's used to replace it, and a replica whose
// streams all failed was then never ejected.
func TestConnStreamObserverKept(t *testing.T) {
	const mEnd = 46 // stream: ends with a 500 at once
	a := startReplica(t, "127.0.0.1")
	a.server().HandleStream(mEnd, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		return rpc.Errorf(rpc.StatusInternal, "x")
	})
	type seen struct {
		end    bool
		status uint32
		fails  int32 // the replica's failures in a row as the caller's observer saw the event
	}
	events := make(chan seen, 8)
	var r *replica
	var ready atomic.Bool
	c := dialT(t, "static:///"+a.addr, WithEjection(2, time.Hour, time.Hour), WithHealthCheck(time.Hour, 0),
		WithClientOptions(rpc.WithStreamObserver(nil), rpc.WithStreamObserver(func(ev rpc.StreamEvent) {
			if ready.Load() {
				events <- seen{ev.End, ev.Status, r.fails.Load()}
			}
		})))
	r = replicaOf(c, a.addr)
	ready.Store(true)
	for i := range 2 {
		st, err := c.OpenStream(context.Background(), mEnd, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(nil); rpc.Code(err) != rpc.StatusInternal {
			t.Fatalf("end: %v", err)
		}
		if ev := receive(t, "the observer's start event", events); ev.end {
			t.Fatalf("the observer saw %+v first, want the stream's start", ev)
		}
		ev := receive(t, "the observer's end event", events)
		if !ev.end || ev.status != rpc.StatusInternal {
			t.Fatalf("the observer saw %+v, want the end with status 500", ev)
		}
		if i == 0 && ev.fails != 1 {
			// The connection's observer ran first: the end was counted
			// before the caller's saw it.
			t.Fatalf("%d failures in a row as the caller's observer saw the first 500 end, want 1", ev.fails)
		}
	}
	await(t, "the replica ejected after 2 failed streams", func() bool {
		s := c.Stats()
		return s.Ejections == 1 && s.Replicas[0].State == "ejected"
	})
}

// A server whose connection has as many streams open as it allows
// (rpc.WithMaxStreams) refuses the next open with an error end of 503
// "too many open streams": that replica is full, not failing (the client
// picked the connection; a connection full on the client's side,
// rpc.ErrTooManyStreams, counts against no one either), so the refusal
// counts nothing toward its ejection. Three such refusals used to eject
// it (WithEjection(3, ...)) as three failed streams would.
func TestStreamRefusedFullCountsNothing(t *testing.T) {
	const (
		mHold = 47 // stream: held open until the client cancels it
		mFail = 48 // stream: ends with a 500 at once
	)
	a := startReplica(t, "127.0.0.1")
	a.restartWith(rpc.WithMaxStreams(1))
	a.server().HandleStream(mHold, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		<-ctx.Done()
		return nil
	})
	a.server().HandleStream(mFail, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		return rpc.Errorf(rpc.StatusInternal, "broken replica")
	})
	c := dialT(t, "static:///"+a.addr, WithEjection(3, time.Nanosecond, time.Hour), WithHealthCheck(time.Hour, 0))
	r := replicaOf(c, a.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	if _, err := c.OpenStream(hctx, mHold, nil); err != nil {
		t.Fatal(err)
	}
	await(t, "the held stream to run", func() bool { return a.server().Stats().Streams.Opened == 1 })
	for range 3 {
		st, err := c.OpenStream(ctx, mFail, nil)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		_, err = st.Recv(nil)
		if !refusedFull(err) {
			t.Fatalf("the open of a full connection ended with %v, want the server's 503 %q", err, streamTooManyText)
		}
	}
	hcancel()
	// A stream that fails, once the held one is gone: its end is counted
	// after the refusals', which come before it on the connection.
	for {
		st, err := c.OpenStream(ctx, mFail, nil)
		if err != nil {
			t.Fatalf("open after the refusals: %v", err)
		}
		_, err = st.Recv(nil)
		if refusedFull(err) {
			continue // the server had not yet seen the held stream's cancel
		}
		if rpc.Code(err) != rpc.StatusInternal {
			t.Fatalf("stream ended with %v, want the handler's 500", err)
		}
		break
	}
	await(t, "the 500 counted", func() bool { return r.fails.Load() != 0 })
	if n, s := r.fails.Load(), c.Stats(); n != 1 || s.Ejections != 0 {
		t.Fatalf("%d failures in a row, %d ejections, after three refusals of a full server and one 500; want 1 and 0", n, s.Ejections)
	}
}
