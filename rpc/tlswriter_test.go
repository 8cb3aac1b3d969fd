package rpc

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A TLS client's calls whose ctx can end hand their writes to one writer
// goroutine per connection, which ends with the connection: when the
// client closes, and when the server goes away. (It also ends when idle:
// TestTLSWriterEndsWhenIdle.)
func TestTLSWriterGoroutine(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	tlsServer, tlsClient := tlsOptions(t)
	srv, addr, _ := testServer(t, tlsServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := func(c *Client) {
		t.Helper()
		if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
			t.Fatalf("call: %q, %v", out, err)
		}
	}

	a := dial(t, addr, tlsClient)
	call(a)
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after a call with a deadline, want 1", n)
	}
	for range 100 {
		call(a)
	}
	b := dial(t, addr, tlsClient)
	if _, err := b.Call(context.Background(), mEcho, []byte("y"), nil); err != nil {
		t.Fatal(err)
	}
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after 101 calls on one connection and one without a ctx on another, want 1", n)
	}
	call(b)
	if n := writers.Load(); n != 2 {
		t.Fatalf("%d writer goroutines with two connections, want 2", n)
	}

	a.Close()
	await(t, "the closed client's writer to end", func() bool { return writers.Load() == 1 })
	srv.Close()
	await(t, "the writer of the client whose server went away to end", func() bool { return writers.Load() == 0 })
	if _, err := b.Call(ctx, mEcho, []byte("z"), nil); err == nil {
		t.Fatal("call on a connection whose server went away succeeded")
	}
}

// A TLS client's writer goroutine ends once it has had no hand-over for
// writerIdle (the beat ends it: an idle connection keeps no goroutine
// stack for it), and the next call with a ctx that can end starts
// another; calls go on working throughout.
func TestTLSWriterEndsWhenIdle(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	tlsServer, tlsClient := tlsOptions(t)
	_, addr, _ := testServer(t, tlsServer)
	// A write timeout of 2 s makes the client's beat come every 500 ms.
	c := dial(t, addr, tlsClient, WithWriteTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := func(ctx context.Context, p string) {
		t.Helper()
		if out, err := c.Call(ctx, mEcho, []byte(p), nil); err != nil || string(out) != p {
			t.Fatalf("call: %q, %v", out, err)
		}
	}

	ended := writersEnded.Load()
	call(ctx, "a")
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after a call with a deadline, want 1", n)
	}
	await(t, "the idle writer goroutine to end", func() bool { return writers.Load() == 0 })
	// endIdleWriter counts the end after it closes the goroutine's
	// channel: the goroutine may be gone before it is counted (a check
	// made once failed about one run in 50 under -race). Only
	// endIdleWriter counts, so a writer that ended otherwise is never
	// counted, and the wait gives up.
	await(t, "the writer goroutine's end to be counted as an idle one's", func() bool { return writersEnded.Load() != ended })
	call(ctx, "b")
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after a call with a deadline on an idle connection, want 1", n)
	}
	call(context.Background(), "c")
	await(t, "the idle writer goroutine to end again", func() bool { return writers.Load() == 0 })
	call(ctx, "d")
}

// A TLS client with no write or answer timeout, which has no check to
// run, still ends its idle writer goroutine: it joins the beat for that
// alone.
func TestTLSWriterEndsWhenIdleWithoutTimeouts(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	tlsServer, tlsClient := tlsOptions(t)
	_, addr, _ := testServer(t, tlsServer)
	c := dial(t, addr, tlsClient, WithWriteTimeout(0), WithAnswerTimeout(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("a"), nil); err != nil || string(out) != "a" {
		t.Fatalf("call: %q, %v", out, err)
	}
	if n := writers.Load(); n != 1 {
		t.Fatalf("%d writer goroutines after a call with a deadline, want 1", n)
	}
	await(t, "the idle writer goroutine to end", func() bool { return writers.Load() == 0 })
	if out, err := c.Call(ctx, mEcho, []byte("b"), nil); err != nil || string(out) != "b" {
		t.Fatalf("call after the writer ended: %q, %v", out, err)
	}
}

// A server's writer goroutine (a hand-over of its full queue by a stream
// handler whose ctx can end, on a connection whose writes cannot resume)
// ends once it has written the queue out.
func TestServerWriterEndsAfterDrain(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	o := &outbox{}
	o.setup(a, time.Hour, 1<<20)
	o.resumable = false // as over TLS
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf, err := o.beginCtx(ctx, wire.KindStreamMsg)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := o.end(append(buf, "frame"...))
	if err = o.flushIfCtx(ctx, lead, err); err != nil {
		t.Fatal(err)
	}
	// Its write waits for the read below.
	await(t, "the server's writer goroutine to start", func() bool { return writers.Load() == 1 })
	if _, _, err := frame.NewReader(b).Next(); err != nil {
		t.Fatal(err)
	}
	await(t, "the server's writer goroutine to end", func() bool { return writers.Load() == 0 })
}

// A hand-over to a client's writer goroutine that comes while the beat
// ends it is neither lost nor stuck: the writer role goes either to the
// goroutine the hand-over found, which takes the kick before it ends, or
// to a new one. Senders hand frames over one at a time, each waiting
// until its frame has arrived (the writer is then idle), while
// endIdleWriter is called as fast as it can with made-up times a
// writerIdle apart; every frame must arrive. The writer ends only when
// the ender looks at it twice between two hand-overs, which the
// scheduler may never allow (with one P it hardly ever does): a sender
// that has seen no end over its last pauseEvery frames waits for one
// before it goes on, so that the senders, all waiting at some point,
// leave the writer idle, and the hand-overs that follow the end race
// with it. Run it with -race.
func TestWriterHandOverWhileEnding(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	const senders, frames, pauseEvery = 2, 20000, 1000
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	o := &outbox{}
	o.setup(a, time.Hour, 1<<20)
	o.resumable, o.keepWriter = false, true // a TLS client's
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The reader counts each sender's frames (the payload's byte).
	var got [senders]atomic.Int64
	go func() {
		r := frame.NewReader(b)
		for {
			_, p, err := r.Next()
			if err != nil {
				return
			}
			got[p[0]].Add(1)
		}
	}()
	stop := make(chan struct{})
	ender := make(chan struct{})
	ended := writersEnded.Load()
	go func() {
		defer close(ender)
		var now, since int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			now += int64(writerIdle)
			o.endIdleWriter(now, &since)
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := ended // the writers ended as of the last pause
			for i := range frames {
				buf, err := o.beginCtx(ctx, wire.KindStreamMsg)
				if err != nil {
					t.Error(err)
					return
				}
				lead, err := o.end(append(buf, byte(s)))
				if err = o.flushIfCtx(ctx, lead, err); err != nil {
					t.Error(err)
					return
				}
				// Spun, not awaited: await's sleeps would make the
				// run long. The bound only keeps a lost frame from
				// hanging the test.
				for start := time.Now(); got[s].Load() != int64(i+1); runtime.Gosched() {
					if time.Since(start) > 30*time.Second {
						t.Errorf("frame %d of sender %d handed over, not arrived after 30 s", i, s)
						return
					}
				}
				if (i+1)%pauseEvery != 0 {
					continue
				}
				for start := time.Now(); writersEnded.Load() == seen; runtime.Gosched() {
					if time.Since(start) > 30*time.Second {
						t.Errorf("sender %d waited 30 s for the idle writer goroutine to end", s)
						return
					}
				}
				seen = writersEnded.Load()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-ender
	t.Logf("%d frames, the writer goroutine ended %d times meanwhile", senders*frames, writersEnded.Load()-ended)
	if writersEnded.Load() == ended {
		t.Error("the writer goroutine never ended while frames were handed over: the test did not test the hand-over while ending")
	}
	o.shut(ErrClosed)
	await(t, "the writer goroutine to end with the stream", func() bool { return writers.Load() == 0 })
}

// A client's writer goroutine ends when the stream breaks, whatever the
// writer role was doing then: a hand-over under way (its kick must not
// meet a closed channel), a drain by the goroutine or by another holder
// of the role, or nothing. The stream is broken (as shut, which Close
// calls, breaks it) while the role is held, after a run of hand-overs,
// many times over; each time the goroutine must end. Run it with -race.
//
// The break comes from the goroutine that reads the other end of the
// pipe, between two of its reads: a write is then under way (the role is
// held) whatever the scheduler does. A breaker spinning on its own
// goroutine does not do: with one P it runs only when the run queue is
// empty, which it never is while a write is under way (a pipe's hand-offs
// wake the other side next), so it never finds the role held.
func TestWriterEndsWhenStreamBreaks(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	var noWriter atomic.Int64
	defer func() { t.Logf("%d runs broke the stream before any hand-over", noWriter.Load()) }()
	for run := range 1000 {
		a, b := net.Pipe()
		o := &outbox{}
		o.setup(a, time.Hour, 1<<20)
		o.resumable, o.keepWriter = false, true // a TLS client's
		broken := make(chan struct{})
		go func(broken chan struct{}) {
			// Small reads: a write of several frames takes several, so the
			// break can come in the middle of one.
			buf := make([]byte, 16)
			for reads := 0; ; reads++ {
				if _, err := b.Read(buf); err != nil {
					return
				}
				if broken == nil || reads < run%4 {
					continue
				}
				// After some hand-overs, break the stream as shut does, at
				// a moment the role is held (perhaps by a goroutine between
				// its hand-over's unlock and its kick), and read on: the
				// write under way must end.
				o.mu.Lock()
				if o.flushing && o.wr != nil || o.flushing && reads >= 1000 {
					if o.wr == nil {
						noWriter.Add(1)
					}
					o.halt(ErrClosed)
					o.wakeAll()
					close(broken)
					broken = nil
				}
				o.mu.Unlock()
			}
		}(broken)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		for s := range 2 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := 0; ; i++ {
					buf, err := o.beginCtx(ctx, wire.KindStreamMsg)
					if err != nil {
						t.Error(err)
						return
					}
					lead, err := o.end(append(buf, byte(i)))
					if s == 1 && i%2 == 0 {
						err = o.flushIf(lead, err) // written by this goroutine
					} else {
						err = o.flushIfCtx(ctx, lead, err) // handed over
					}
					if err != nil {
						return // the stream broke
					}
					runtime.Gosched() // the other sender gets its turns
				}
			}()
		}
		select {
		case <-broken:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: the stream was not broken while the writer role was held in 30 s", run)
		}
		<-done
		<-done
		for start := time.Now(); writers.Load() != 0; runtime.Gosched() {
			if time.Since(start) > 30*time.Second {
				t.Fatalf("run %d: the writer goroutine still runs 30 s after the stream broke", run)
			}
		}
		cancel()
		a.Close()
		b.Close()
	}
}

// TestHandToWriterAfterBreak: the stream breaks while a caller holds the
// writer role and has not yet handed it to the connection's writer
// goroutine (halt leaves that goroutine to the role's holder, who may be
// about to kick it). The hand-over then gives the role up and ends the
// goroutine itself: none is left behind, none is kicked, and the role is
// free.
func TestHandToWriterAfterBreak(t *testing.T) {
	await(t, "writer goroutines of earlier tests gone", func() bool { return writers.Load() == 0 })
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var o outbox
	o.setup(a, time.Hour, 0)
	o.keepWriter = true

	// A first hand-over, with nothing queued, starts the goroutine,
	// which takes the role and gives it up at once.
	o.mu.Lock()
	o.flushing = true
	o.mu.Unlock()
	o.handToWriter()
	await(t, "the writer goroutine to start and give the role up", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return writers.Load() == 1 && !o.flushing
	})

	// A caller takes the role; the stream breaks before it hands over.
	o.mu.Lock()
	o.flushing = true
	o.halt(errors.New("broken"))
	if o.wr == nil {
		o.mu.Unlock()
		t.Fatal("halt ended the writer goroutine while a caller held the role (its kick would panic on the closed channel)")
	}
	o.mu.Unlock()
	o.handToWriter()
	o.mu.Lock()
	flushing, wr := o.flushing, o.wr
	o.mu.Unlock()
	if flushing || wr != nil {
		t.Fatalf("after the hand-over on a broken stream: flushing %v, writer channel %v; want the role free and the goroutine ended", flushing, wr != nil)
	}
	await(t, "the writer goroutine to end", func() bool { return writers.Load() == 0 })
}
