package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Tests of the client against a hostile or broken server: answers for
// ids never sent, answers twice or late, a huge frame header, a close
// mid-frame, a peer that never reads, go-aways, ping floods, promises
// misused, and a peer that sends frames at random. Each call returns once,
// with its own answer or a clear error, and the client leaves no slot
// taken and no goroutine behind.

// answer sends peer's answer to pid.
func answer(peer *rawConn, pid, status uint32, body string) {
	peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: status, PromiseID: pid, Body: []byte(body)}))
}

// eachRequest calls f with each request peer reads (other frames are
// skipped), until the connection ends. The request's slices alias the
// read buffer: valid only during f.
func eachRequest(peer *rawConn, f func(q wire.Request)) {
	for {
		k, env, ok := peer.recv()
		if !ok {
			return
		}
		if k == wire.KindRequest {
			q, _ := wire.ParseRequest(env)
			f(q)
		}
	}
}

// callResult is what a call returned.
type callResult struct {
	out []byte
	err error
}

// goCall makes a call of mEcho on c in a goroutine of its own.
func goCall(c *Client, ctx context.Context, req string) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		out, err := c.Call(ctx, mEcho, []byte(req), nil)
		ch <- callResult{out, err}
	}()
	return ch
}

// Answers for ids never sent, a second answer, and an old answer after
// the slot was reused are dropped: each call gets its own answer, and
// the connection stays up with nothing pending.
func TestHostileStrayAnswers(t *testing.T) {
	c, peer := pipeClient(t)
	r1 := goCall(c, context.Background(), "a")
	q1 := peer.recvRequest()
	// Answers for ids never sent: 0, an index past the table, the right
	// index with another generation, the max id.
	for _, pid := range []uint32{0, 2, 77, q1.PromiseID + 1<<16, 0xFFFFFFFF, 0xFFFF} {
		answer(peer, pid, StatusOK, "stray")
	}
	answer(peer, q1.PromiseID, StatusOK, "a")
	answer(peer, q1.PromiseID, StatusOK, "twice") // a second answer
	if r := receive(t, "call", r1); r.err != nil || string(r.out) != "a" {
		t.Fatalf("%q %v", r.out, r.err)
	}
	r2 := goCall(c, context.Background(), "b")
	q2 := peer.recvRequest()
	answer(peer, q1.PromiseID, StatusOK, "old") // an old answer after reuse
	answer(peer, q2.PromiseID, StatusOK, "b")
	if r := receive(t, "call", r2); r.err != nil || string(r.out) != "b" {
		t.Fatalf("%q %v", r.out, r.err)
	}
	if c.Closed() || c.Pending() != 0 || c.abandoned.Load() != 0 {
		t.Fatalf("closed %v pending %d abandoned %d", c.Closed(), c.Pending(), c.abandoned.Load())
	}
}

// Late answers (twice each) of calls whose ctx ended free their slots and
// reach no other call.
func TestHostileLateAnswersFreeSlots(t *testing.T) {
	c, peer := pipeClient(t)
	var pids []uint32
	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		r := goCall(c, ctx, "x")
		pids = append(pids, peer.recvRequest().PromiseID)
		cancel()
		if res := receive(t, "call", r); !errors.Is(res.err, context.Canceled) {
			t.Fatal(res.err)
		}
		if i == 0 {
			peer.recvCancelQuestion() // once: this peer never announces
		}
	}
	if a := c.abandoned.Load(); a != 10 {
		t.Fatalf("abandoned %d", a)
	}
	for _, pid := range pids {
		answer(peer, pid, StatusOK, "late")
		answer(peer, pid, StatusOK, "late twice")
	}
	r := goCall(c, context.Background(), "y")
	q := peer.recvRequest()
	answer(peer, q.PromiseID, StatusOK, "y")
	if res := receive(t, "call", r); res.err != nil || string(res.out) != "y" {
		t.Fatalf("%q %v", res.out, res.err)
	}
	await(t, "slots back", func() bool { return c.busySlots() == 0 })
	if a := c.abandoned.Load(); a != 0 {
		t.Fatalf("abandoned %d", a)
	}
	if n := idleSlots(t, c); n != len(*c.table.Load()) {
		t.Fatalf("idle %d of %d", n, len(*c.table.Load()))
	}
}

// A frame header announcing 4 GiB closes the connection at once with an
// error that names it; the pending call fails with ErrClosed.
func TestHostileHugeFrameHeader(t *testing.T) {
	c, peer := pipeClient(t)
	r := goCall(c, context.Background(), "x")
	peer.recvRequest()
	var h [5]byte
	binary.LittleEndian.PutUint32(h[:], 0xFFFFFFFF)
	h[4] = wire.KindResponse
	peer.Write(h[:])
	res := receive(t, "call", r)
	if !errors.Is(res.err, ErrClosed) || !contains(res.err.Error(), "frame too large") {
		t.Fatal(res.err)
	}
}

// A server that closes in the middle of an answer fails the call, and
// later calls, with ErrClosed.
func TestHostileCloseMidFrame(t *testing.T) {
	c, peer := pipeClient(t)
	r := goCall(c, context.Background(), "x")
	q := peer.recvRequest()
	b := frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: q.PromiseID, Body: []byte("hello")}))
	peer.Write(b[:len(b)-2])
	peer.Close()
	res := receive(t, "call", r)
	if !errors.Is(res.err, ErrClosed) {
		t.Fatal(res.err)
	}
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

// A server that never reads: calls return by their ctx, and what the
// client queues stays bounded (outboxLimit and a frame).
func TestHostileNeverReads(t *testing.T) {
	c, _ := pipeClient(t)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := c.Call(ctx, mEcho, make([]byte, 100000), nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if q := c.out.queued(); q > outboxLimit+100100 {
		t.Fatalf("queued %d", q)
	}
}

// A go-away before any call, twice: calls are refused with ErrGoAway and
// take no slot.
func TestHostileGoAway(t *testing.T) {
	c, peer := pipeClient(t)
	go func() { // read the ack(s)
		for {
			if _, _, ok := peer.recv(); !ok {
				return
			}
		}
	}()
	peer.send(wire.KindGoAway, nil)
	peer.send(wire.KindGoAway, nil)
	await(t, "draining", c.Draining)
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrGoAway) {
		t.Fatal(err)
	}
	if c.Pending() != 0 {
		t.Fatal(c.Pending())
	}
}

// Promises misused against a server that refuses pipelined calls:
// released twice, waited for after release, a pipelined call on a
// released promise, one never waited for, one waited for after the
// connection broke.
func TestHostilePromises(t *testing.T) {
	c, peer := pipeClient(t)
	go eachRequest(peer, func(q wire.Request) {
		st := uint32(StatusOK)
		if q.Target != 0 {
			st = StatusBadRequest
		}
		answer(peer, q.PromiseID, st, "r")
	})
	ctx := context.Background()
	p, err := c.Send(ctx, mEcho, []byte("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	p.Release()
	if _, err := p.Wait(ctx); err == nil {
		t.Fatal("wait after release")
	}
	var se *StatusError
	if _, err := p.Call(ctx, mEcho, nil); !errors.As(err, &se) || se.Code != StatusBadRequest {
		t.Fatalf("pipelined call refused with %v, want 400", err)
	}
	if _, err := c.Send(ctx, mEcho, []byte("a"), nil); err != nil { // never waited for
		t.Fatal(err)
	}
	p3, err := c.Send(ctx, mEcho, []byte("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p4, err := c.Send(ctx, mEcho, []byte("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the answers", func() bool {
		return p3.s.st.Load()&slotStateMask == slotDelivered && p4.s.st.Load()&slotStateMask == slotDelivered
	})
	if n := c.Promises(); n != 3 {
		t.Fatalf("Promises() = %d, want 3", n)
	}
	c.fail(errors.New("boom"))
	// An answer taken before the break is still the promise's.
	if out, err := p3.Wait(ctx); err != nil || string(out) != "r" {
		t.Fatalf("wait after the break: %q %v", out, err)
	}
	p4.Release()
	if _, err := c.Send(ctx, mEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after the break: %v", err)
	}
	if n := c.Promises(); n != 1 {
		t.Fatalf("Promises() = %d, want the one never waited for", n)
	}
}

// A hostile peer answering at random: twice, late, strays, while a
// shared ctx (watched) is canceled round after round.
func TestHostileStress(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		c, peer := pipeClient(t, WithMaxPending(64))
		defer c.Close()
		reqs := make(chan wire.Request, 1024)
		go func() {
			defer close(reqs)
			eachRequest(peer, func(q wire.Request) {
				q.Payload = append([]byte(nil), q.Payload...)
				reqs <- q
			})
		}()
		go func() {
			n := 0
			var old []wire.Request
			send := func(pid uint32, body []byte) {
				peer.Write(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: pid, Body: body})))
			}
			for q := range reqs {
				n++
				if n%7 == 0 {
					old = append(old, q)
					continue // answer later
				}
				send(q.PromiseID, q.Payload)
				if n%5 == 0 {
					send(q.PromiseID, []byte("dup"))
				}
				if n%11 == 0 {
					send(0xFFFF0000|uint32(n%100+100), []byte("stray")) // an index past the table
				}
				if len(old) > 3 {
					for _, q := range old {
						send(q.PromiseID, q.Payload)
					}
					old = old[:0]
				}
			}
		}()
		for round := 0; round < 30; round++ {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						req := []byte{byte(g), byte(i), byte(round)}
						out, err := c.Call(ctx, mEcho, req, nil)
						if err != nil {
							if errors.Is(err, context.Canceled) || errors.Is(err, ErrTooManyPending) {
								continue
							}
							t.Error(err)
							return
						}
						if string(out) != string(req) {
							t.Errorf("got %q want %q", out, req)
							return
						}
					}
				}()
			}
			time.Sleep(time.Millisecond)
			cancel()
			wg.Wait()
			// The next round begins once the calls the cancel abandoned
			// have their answers, but those the peer holds back (at most
			// 4): a peer lagging three rounds behind (stalled under load)
			// left 48 abandoned calls unanswered beside the 16 callers',
			// the table was full with half of it abandoned, and the
			// client gave the connection up, as it should.
			await(t, "the answers of the round's abandoned calls", func() bool { return c.abandoned.Load() <= 4 })
		}
		if c.Closed() {
			t.Fatal("closed")
		}
	}()
	await(t, "goroutines", func() bool { return runtime.NumGoroutine() <= before })
}

// A server that floods pings and never reads the pongs: the read loop
// waits for room, the call returns by its ctx, the write timeout closes
// the connection, and nothing is left running.
//
// The call's ctx ends once the call is seen under way, not at a time of
// its own: it used to end 100 ms after the call began, half the write
// timeout, and a test stalled for the rest (under load) met the
// connection closed by the write timeout first. The write timeout, two
// seconds, is now only a margin for the steps between the first pong's
// write and the call's return.
func TestHostilePingFlood(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := net.Pipe()
	c := NewClient(a, WithWriteTimeout(2*time.Second))
	stop := make(chan struct{})
	go func() {
		f := frameBytes(wire.KindPing, make([]byte, 8))
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.Write(f); err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mEcho, nil, nil)
		called <- err
	}()
	await(t, "the call under way", func() bool { return c.Pending() == 1 })
	cancel()
	err := receive(t, "the call's return", called)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want its ctx's end", err)
	}
	await(t, "closed by the write timeout", c.Closed)
	if _, err = c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after the close: %v", err)
	}
	c.Close()
	close(stop)
	b.Close()
	await(t, "goroutines", func() bool { return runtime.NumGoroutine() <= before })
}

// Promises sent, waited for, released (twice, or at the same time as a
// Wait), pipelined on and never waited for, against a server that
// answers some calls twice and some late, and closes mid-way: no answer
// reaches another call, nothing hangs, nothing is left running.
func TestHostilePromiseStress(t *testing.T) {
	before := runtime.NumGoroutine()
	for iter := 0; iter < 20; iter++ {
		c, peer := pipeClient(t, WithMaxPending(32))
		n := 0
		go eachRequest(peer, func(q wire.Request) {
			n++
			body := append([]byte(nil), q.Payload...)
			if q.Target != 0 {
				body = []byte("piped")
			}
			go func(n int) {
				if n%3 == 0 {
					time.Sleep(time.Duration(n%5) * 100 * time.Microsecond)
				}
				peer.Write(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: q.PromiseID, Body: body})))
				if n%4 == 0 {
					peer.Write(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: q.PromiseID, Body: []byte("dup")})))
				}
			}(n)
		})
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					req := []byte{byte(g), byte(i)}
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*200*time.Microsecond+time.Microsecond)
					p, err := c.Send(context.Background(), mEcho, req, nil)
					if err != nil {
						cancel()
						if errors.Is(err, ErrClosed) || errors.Is(err, ErrTooManyPending) {
							continue
						}
						t.Error(err)
						return
					}
					switch i % 5 {
					case 0:
						p.Release()
						p.Release()
					case 1:
						go p.Release()
						go p.Wait(ctx)
					case 2:
						out, err := p.Wait(ctx)
						if err == nil && string(out) != string(req) {
							t.Errorf("got %q want %q", out, req)
						}
						p.Wait(ctx)
					case 3:
						out, err := p.Call(ctx, mEcho, nil)
						if err == nil && string(out) != "piped" {
							t.Errorf("piped got %q", out)
						}
						p.Release()
					case 4:
						// never waited
					}
					cancel()
				}
			}()
		}
		if iter%2 == 1 {
			time.Sleep(time.Millisecond)
			c.Close()
		}
		wg.Wait()
		c.Close()
		peer.Close()
	}
	await(t, "goroutines", func() bool { return runtime.NumGoroutine() <= before })
}

// opaqueConn hides the connection it wraps: not resumable (as TLS).
type opaqueConn struct{ net.Conn }

// TestHostileNeverReads over a connection whose writes cannot be cut:
// the writer goroutine writes, the callers return by their ctx, and
// Close ends everything.
func TestHostileNeverReadsOpaque(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := net.Pipe()
	c := NewClient(opaqueConn{a}, WithWriteTimeout(time.Hour), WithAnswerTimeout(time.Hour))
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				_, err := c.Call(ctx, mEcho, make([]byte, 300000), nil)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if q := c.out.queued(); q > outboxLimit+300100 {
		t.Fatalf("queued %d", q)
	}
	c.Close()
	b.Close()
	await(t, "goroutines", func() bool { return runtime.NumGoroutine() <= before })
}

// A peer that sends frames at random (answers to ids sent and not,
// malformed ones, go-aways, pings, requests, unknown kinds), then
// closes, perhaps mid-frame: every call and promise returns, and nothing
// is left running.
func TestHostileRandomPeer(t *testing.T) {
	before := runtime.NumGoroutine()
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		a, b := net.Pipe()
		c := NewClient(a, WithFrameOptions(frame.WithMaxFrameSize(1<<16)), WithMaxPending(8))
		var pids []uint32
		var mu sync.Mutex
		go func() {
			for {
				k, env, ok := (&rawConn{t, b}).recv()
				if !ok {
					return
				}
				if k == wire.KindRequest {
					q, err := wire.ParseRequest(env)
					if err == nil {
						mu.Lock()
						pids = append(pids, q.PromiseID)
						mu.Unlock()
					}
				}
			}
		}()
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(g*i%5)*time.Millisecond)
					switch (g + i) % 3 {
					case 0:
						c.Call(ctx, 1, []byte("q"), nil)
					case 1:
						p, err := c.Send(ctx, 1, nil, nil)
						if err == nil {
							if i%2 == 0 {
								p.Wait(ctx)
							} else {
								p.Call(ctx, 2, nil)
								p.Release()
							}
						}
					case 2:
						c.Call(context.Background(), 1, nil, nil)
					}
					cancel()
				}
			}()
		}
		go func() {
			for j := 0; j < 300; j++ {
				mu.Lock()
				var pid uint32
				if len(pids) > 0 {
					pid = pids[rng.IntN(len(pids))]
				}
				mu.Unlock()
				var f []byte
				switch rng.IntN(10) {
				case 0:
					f = frameBytes(wire.KindGoAway, nil)
				case 1:
					f = frameBytes(wire.KindPing, []byte("12345678"))
				case 2:
					env := wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: pid, Body: []byte("abc")})
					binary.LittleEndian.PutUint32(env[len(env)-7:], 1000)
					f = frameBytes(wire.KindResponse, env)
				case 3:
					f = frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: pid}))
				case 4:
					f = frameBytes(byte(rng.IntN(12)), []byte{byte(rng.Uint32()), 1, 2, 3, 4, 5, 6, 7, 8})
				default:
					f = frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: uint32(200 + rng.IntN(2)*300), NotRun: rng.IntN(4) == 0, PromiseID: pid, Body: []byte("abc")}))
				}
				if _, err := b.Write(f); err != nil {
					return
				}
				if rng.IntN(10) == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			if rng.IntN(2) == 0 {
				b.Write([]byte{9, 0, 0})
			}
			b.Close()
		}()
		wg.Wait()
		c.Close()
		b.Close()
	}
	await(t, "goroutines", func() bool { return runtime.NumGoroutine() <= before })
}
