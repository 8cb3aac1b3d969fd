package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Attacks on Call's own ways of sending (the plain call and the call with
// a deadline, session 28) and on the read loop's delivery, each against
// what the general way (send, acquire, answer) does.

// fastCtxs are the three kinds of ctx Call sends by its own ways, with
// the size of the envelope each request carries (the deadline's adds the
// 8-byte timeout to the fixed section).
func fastCtxs(t *testing.T) []struct {
	name     string
	ctx      context.Context
	overhead int
} {
	timed, cancel := context.WithTimeout(context.Background(), time.Hour)
	t.Cleanup(cancel)
	cancelable, cancel2 := context.WithCancel(context.Background())
	t.Cleanup(cancel2)
	return []struct {
		name     string
		ctx      context.Context
		overhead int
	}{
		{"plain", context.Background(), wire.RequestOverhead},
		{"deadline", timed, wire.DeadlineRequestOverhead},
		{"cancel alone", cancelable, wire.RequestOverhead},
	}
}

// recvRequestSkipping reads frames at peer until a request comes, and
// returns it with its frame length; pings (the cancel question) and
// cancels are skipped.
func recvRequestSkipping(t *testing.T, peer *rawConn) (wire.Request, int) {
	t.Helper()
	for {
		kind, env, ok := peer.recv()
		if !ok {
			t.Fatal("connection closed, want a request")
		}
		if kind == wire.KindPing || kind == wire.KindCancel {
			continue
		}
		if kind != wire.KindRequest {
			t.Fatalf("frame kind %d, want a request", kind)
		}
		r, err := wire.ParseRequest(env)
		if err != nil {
			t.Fatal(err)
		}
		return r, 1 + len(env)
	}
}

// TestFastCallsAtFrameLimit: a request whose frame is exactly the
// client's largest is sent by Call's own ways (and answered); one byte
// more fails with ErrFrameTooLarge, its slot freed and nothing written,
// and the connection stays usable.
func TestFastCallsAtFrameLimit(t *testing.T) {
	const max = 1000
	c, peer := pipeClient(t, WithFrameOptions(frame.WithMaxFrameSize(max)))
	for _, tc := range fastCtxs(t) {
		t.Run(tc.name, func(t *testing.T) {
			// The frame's length: the kind byte, envelope, payload.
			fits := make([]byte, max-1-tc.overhead)
			for i := range fits {
				fits[i] = byte(i)
			}
			done := make(chan error, 1)
			go func() {
				out, err := c.Call(tc.ctx, 7, fits, nil)
				if err == nil && !bytes.Equal(out, fits[:10]) {
					err = fmt.Errorf("answer %q", out)
				}
				done <- err
			}()
			r, n := recvRequestSkipping(t, peer)
			if n != max || !bytes.Equal(r.Payload, fits) {
				t.Fatalf("request frame of %d bytes (payload %d), want %d", n, len(r.Payload), max)
			}
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: fits[:10]}))
			if err := receive(t, "the call at the limit", done); err != nil {
				t.Fatal(err)
			}

			over := append(fits, 1)
			if _, err := c.Call(tc.ctx, 7, over, nil); !errors.Is(err, frame.ErrFrameTooLarge) {
				t.Fatalf("a request one byte over the limit: %v, want ErrFrameTooLarge", err)
			}
			if c.Closed() {
				t.Fatal("the client closed after a request too large")
			}
			if idle, all := idleSlots(t, c), len(*c.table.Load()); idle != all {
				t.Fatalf("%d of %d slots idle after the refused call", idle, all)
			}
			// The next frame on the wire is the next call's: the one
			// over the limit left nothing.
			go func() {
				_, err := c.Call(tc.ctx, 8, []byte("next"), nil)
				done <- err
			}()
			r, _ = recvRequestSkipping(t, peer)
			if r.Method != 8 || string(r.Payload) != "next" {
				t.Fatalf("next request: method %d payload %q", r.Method, r.Payload)
			}
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
			if err := receive(t, "the next call", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFastCallsAfterGoAway: once the server's go-away is read, Call's
// own ways refuse with ErrGoAway, free the slot and write nothing after
// the acknowledgement.
func TestFastCallsAfterGoAway(t *testing.T) {
	c, peer := pipeClient(t)
	peer.send(wire.KindGoAway, nil)
	if kind, _, ok := peer.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("got frame kind %d (ok %v), want the go-away's acknowledgement", kind, ok)
	}
	await(t, "the go-away to be seen", c.Draining)
	for _, tc := range fastCtxs(t) {
		if _, err := c.Call(tc.ctx, 7, []byte("x"), nil); !errors.Is(err, ErrGoAway) {
			t.Fatalf("%s: %v, want ErrGoAway", tc.name, err)
		}
	}
	if tp := c.table.Load(); tp != nil {
		if idle := idleSlots(t, c); idle != len(*tp) {
			t.Fatalf("%d of %d slots idle", idle, len(*tp))
		}
	}
	// Nothing was written: the peer's read sees the close, not a frame.
	c.Close()
	peer.expectClosed()
}

// TestFastCallsRaceClose: calls of each kind running while the client
// closes end, each with its answer or an error, none waits for ever, and
// the calls made after the close fail at once with ErrClosed.
func TestFastCallsRaceClose(t *testing.T) {
	_, addr, _ := testServer(t)
	for round := 0; round < 20; round++ {
		c := dial(t, addr)
		ctxs := fastCtxs(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := 0; g < 12; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := ctxs[g%len(ctxs)].ctx
				for i := 0; ; i++ {
					out, err := c.Call(ctx, mEcho, []byte("ping"), nil)
					if err != nil {
						if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrGoAway) {
							errs <- fmt.Errorf("call %d: %v", i, err)
						}
						return
					}
					if string(out) != "ping" {
						errs <- fmt.Errorf("call %d: answer %q", i, out)
						return
					}
				}
			}()
		}
		// Let some calls through first (not a timing assumption: the
		// close may come at any point of a call).
		if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
			t.Fatal(err)
		}
		c.Close()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		receive(t, "every caller to return after Close", done)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, tc := range ctxs {
			if _, err := c.Call(tc.ctx, mEcho, nil, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("%s after Close: %v, want ErrClosed", tc.name, err)
			}
		}
	}
}

// TestFastCallsWriteError: a write that fails (the peer closed) fails the
// call whose request it carried, and the calls after it, with the
// connection's error; none waits for ever.
func TestFastCallsWriteError(t *testing.T) {
	for _, tc := range fastCtxs(t) {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t)
			peer.Close()
			_, err := c.Call(tc.ctx, 7, []byte("x"), nil)
			if err == nil {
				t.Fatal("a call over a closed pipe succeeded")
			}
			if _, err2 := c.Call(tc.ctx, 7, []byte("x"), nil); err2 == nil {
				t.Fatal("a second call over a closed pipe succeeded")
			}
			if !c.Closed() {
				t.Fatalf("the client is not closed after the write failed (%v)", err)
			}
		})
	}
}

// TestFastCallStaleAnswerAfterReuse: an answer for a slot's earlier use
// (the same slot index, an older generation) that comes while the slot
// waits for its next call's answer is dropped by the read loop's own
// delivery; the waiting call gets its own answer. The earlier use is in
// turn a call answered, one whose ctx was canceled (its slot freed by the
// late answer), and one whose deadline passed.
func TestFastCallStaleAnswerAfterReuse(t *testing.T) {
	c, peer := pipeClient(t)
	ctxs := fastCtxs(t)
	answer := func(pid uint32, body string) {
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid, Body: []byte(body)}))
	}
	for _, first := range []string{"answered", "canceled", "deadline"} {
		for _, tc := range ctxs {
			t.Run(first+"/"+tc.name, func(t *testing.T) {
				done := make(chan string, 1)
				var old wire.Request
				switch first {
				case "answered":
					go func() {
						out, err := c.Call(context.Background(), 7, []byte("one"), nil)
						done <- fmt.Sprintf("%s %v", out, err)
					}()
					old, _ = recvRequestSkipping(t, peer)
					answer(old.PromiseID, "one")
					if got := receive(t, "the first call", done); got != "one <nil>" {
						t.Fatalf("first call: %s", got)
					}
				default:
					var ctx context.Context
					var cancel context.CancelFunc
					if first == "canceled" {
						ctx, cancel = context.WithCancel(context.Background())
					} else {
						ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
					}
					defer cancel()
					go func() {
						_, err := c.Call(ctx, 7, []byte("one"), nil)
						done <- fmt.Sprint(err)
					}()
					old, _ = recvRequestSkipping(t, peer)
					cancel()
					receive(t, "the first call to be abandoned", done)
					answer(old.PromiseID, "late") // frees the slot
					await(t, "the slot freed", func() bool { return idleSlots(t, c) == len(*c.table.Load()) })
				}
				go func() {
					out, err := c.Call(tc.ctx, 7, []byte("two"), nil)
					done <- fmt.Sprintf("%s %v", out, err)
				}()
				r, _ := recvRequestSkipping(t, peer)
				if r.PromiseID&0xFFFF != old.PromiseID&0xFFFF || r.PromiseID == old.PromiseID {
					t.Fatalf("second call's pid %#x, first's %#x: want the same slot, another use", r.PromiseID, old.PromiseID)
				}
				answer(old.PromiseID, "stale")
				answer(r.PromiseID^0x10000, "other generation")
				answer(r.PromiseID, "two")
				if got := receive(t, "the second call", done); got != "two <nil>" {
					t.Fatalf("second call: %s", got)
				}
			})
		}
	}
}

// TestFastCallsFullQueue: with the peer not reading, the queue fills; a
// call of each kind then waits for room the general way, and one whose
// ctx ends meanwhile returns ctx's error with nothing of it written; a
// call with a deadline queued behind a blocked write and canceled before
// the write is abandoned, written all the same, and its slot freed by its
// late answer. Once the peer reads, every request queued arrives whole
// and in order, and is answered.
func TestFastCallsFullQueue(t *testing.T) {
	c, peer := pipeClient(t)
	big := bytes.Repeat([]byte{'q'}, 1<<20)
	type result struct {
		out []byte
		err error
	}
	queued := make(chan result, 16)
	n := 0
	call := func(ctx context.Context, payload []byte) {
		n++
		go func() {
			out, err := c.Call(ctx, 7, payload, nil)
			queued <- result{out, err}
		}()
	}
	queuedBytes := func() int {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return c.out.queued()
	}
	// fill adds calls until the queue is full (the peer reads nothing,
	// so whatever a write took stays taken); each call's slot is taken
	// before the next starts.
	fill := func() {
		for queuedBytes() < outboxLimit {
			call(context.Background(), big)
			await(t, "the call to take a slot", func() bool { return c.busySlots() >= n })
		}
	}
	// A call with a deadline queued behind a blocked write, canceled
	// before its request is written: abandoned, written all the same (its
	// late answer frees the slot).
	call(context.Background(), big)
	await(t, "the first call to take a slot", func() bool { return c.busySlots() >= n })
	{
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		before := queuedBytes()
		busy := c.busySlots()
		errc := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, 8, []byte("abandoned"), nil)
			errc <- err
		}()
		await(t, "the call with a deadline queued", func() bool { return c.busySlots() > busy && queuedBytes() != before })
		cancel()
		if err := receive(t, "the call canceled in the queue", errc); !errors.Is(err, context.Canceled) {
			t.Fatalf("call canceled in the queue: %v, want context.Canceled", err)
		}
	}
	// Canceled while it waits for room, for each kind that can end (the
	// wait is room's, or a write of the queue the caller took on when
	// nobody wrote: either gives up when ctx ends).
	for _, tc := range fastCtxs(t) {
		fill()
		busy := c.busySlots()
		ctx, cancel := context.WithCancel(tc.ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, 9, []byte("never"), nil)
			errc <- err
		}()
		await(t, "the call to take a slot", func() bool { return c.busySlots() > busy })
		cancel()
		if err := receive(t, tc.name+" call canceled while it waited for room", errc); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", tc.name, err)
		}
	}
	// A plain call waits for room (it cannot end), and is queued once
	// the peer reads.
	fill()
	call(context.Background(), big)
	// The peer reads: every request queued arrives, none of the canceled.
	seen := 0
	for seen < n {
		r, _ := recvRequestSkipping(t, peer)
		if r.Method == 8 && string(r.Payload) == "abandoned" && r.Timeout != 0 {
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
			continue
		}
		if r.Method != 7 || !bytes.Equal(r.Payload, big) {
			t.Fatalf("request %d: method %d, %d payload bytes", seen+1, r.Method, len(r.Payload))
		}
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("ok")}))
		seen++
	}
	for i := 0; i < n; i++ {
		if r := receive(t, "a queued call's answer", queued); r.err != nil || string(r.out) != "ok" {
			t.Fatalf("queued call: %q, %v", r.out, r.err)
		}
	}
	await(t, "every slot idle (the abandoned call's freed by its late answer)", func() bool {
		return idleSlots(t, c) == len(*c.table.Load())
	})
}

// TestFastCallsAtMaxPending: with every slot of WithMaxPending waiting,
// a call of each kind fails with ErrTooManyPending, nothing written and
// no slot added; once an answer frees a slot, a call of each kind takes
// it.
func TestFastCallsAtMaxPending(t *testing.T) {
	const max = 3
	c, peer := pipeClient(t, WithMaxPending(max))
	type result struct {
		out string
		err error
	}
	held := make(chan result, max)
	var reqs []wire.Request
	for i := 0; i < max; i++ {
		go func() {
			out, err := c.Call(context.Background(), 7, []byte("held"), nil)
			held <- result{string(out), err}
		}()
		r, _ := recvRequestSkipping(t, peer)
		reqs = append(reqs, r)
	}
	for _, tc := range fastCtxs(t) {
		if _, err := c.Call(tc.ctx, 7, []byte("refused"), nil); !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("%s with every slot waiting: %v, want ErrTooManyPending", tc.name, err)
		}
	}
	if n := len(*c.table.Load()); n != max {
		t.Fatalf("%d slots, want %d", n, max)
	}
	for _, tc := range fastCtxs(t) {
		r := reqs[0]
		reqs = reqs[1:]
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("held")}))
		if got := receive(t, "a held call's answer", held); got.err != nil || got.out != "held" {
			t.Fatalf("held call: %q, %v", got.out, got.err)
		}
		go func() {
			out, err := c.Call(tc.ctx, 7, []byte("next"), nil)
			held <- result{string(out), err}
		}()
		// The first frame the peer reads is the next call's: the refused
		// ones wrote nothing.
		nr, _ := recvRequestSkipping(t, peer)
		if string(nr.Payload) != "next" || nr.PromiseID&0xFFFF != r.PromiseID&0xFFFF {
			t.Fatalf("%s: request %q in slot %d, want \"next\" in the freed slot %d", tc.name, nr.Payload, nr.PromiseID&0xFFFF, r.PromiseID&0xFFFF)
		}
		reqs = append(reqs, nr)
	}
	for _, r := range reqs {
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: []byte("held")}))
	}
	for range reqs {
		if got := receive(t, "the calls' answers", held); got.err != nil {
			t.Fatal(got.err)
		}
	}
}
