package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mJitter echoes after a random pause of up to 300 µs.
const mJitter = 94

func jitter(ctx context.Context, req, resp []byte) ([]byte, error) {
	if d := rand.IntN(300); d > 150 {
		time.Sleep(time.Duration(d) * time.Microsecond)
	}
	return append(resp, req...), nil
}

// Callers with deadlines of a few hundred microseconds against a server
// whose answers come at random times, many of them late: each call gets
// its own answer or its ctx's error, never another call's answer; a late
// answer frees its slot; afterwards nothing is pending and every slot is
// free. Calls go through Call without interceptors (send and wait by
// hand) and through Send/Wait.
func TestCancelStormNoMisroute(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mJitter, jitter)
	c := dial(t, addr)
	const callers, calls = 32, 300
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	var answered, gaveUp, tooMany [callers]int
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := make([]byte, 8)
			var resp []byte
			for i := range calls {
				binary.LittleEndian.PutUint32(req, uint32(g))
				binary.LittleEndian.PutUint32(req[4:], uint32(i))
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(100+rand.IntN(20000))*time.Microsecond)
				var out []byte
				var err error
				if i%3 == 0 {
					var p Promise
					if p, err = c.Send(ctx, mJitter, req, resp[:0]); err == nil {
						out, err = p.Wait(ctx)
					}
				} else {
					out, err = c.Call(ctx, mJitter, req, resp[:0])
				}
				cancel()
				switch {
				case err == nil:
					if !bytes.Equal(out, req) {
						errs <- fmt.Errorf("caller %d call %d got %x, want %x", g, i, out, req)
						return
					}
					answered[g]++
					resp = out
				case errors.Is(err, context.DeadlineExceeded), Code(err) == StatusDeadlineExceeded:
					// The caller's deadline passed; the server's refusal
					// (504, not run) may come before the caller's timer.
					gaveUp[g]++
				case errors.Is(err, ErrTooManyPending):
					tooMany[g]++
				default:
					errs <- fmt.Errorf("caller %d call %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var a, gu, tm int
	for g := range callers {
		a, gu, tm = a+answered[g], gu+gaveUp[g], tm+tooMany[g]
	}
	t.Logf("%d answered, %d gave up, %d refused (too many pending)", a, gu, tm)
	// The late answers come in: every slot goes back to the free stack.
	await(t, "no call pending and every slot free", func() bool {
		return c.Pending() == 0 && c.abandoned.Load() == 0 && c.Promises() == 0
	})
	c.mu.Lock()
	n := len(c.slots)
	c.mu.Unlock()
	if free := idleSlots(t, c); free != n {
		t.Fatalf("%d of %d slots free", free, n)
	}
	// And the connection still works.
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("after the storm: %q %v", out, err)
	}
}

// The server goes away abruptly while many calls are in flight: every
// call returns (its answer, or an error matching ErrClosed), none hangs.
func TestConnectionFailsMidBatch(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mJitter, jitter)
	c := dial(t, addr)
	callUntilEnd(t, c, 64, 10, func() { s.Close() }, func(err error) bool {
		return errors.Is(err, ErrClosed)
	})
}

// The server shuts down while callers keep the connection busy: every
// call returns its own answer, ErrGoAway (not sent), a refusal the
// client may send again (IsRetryable: the server did not run it) or,
// after the close, ErrClosed; none hangs, none gets another's answer,
// and nothing is left pending.
func TestGoAwayUnderLoad(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mJitter, jitter)
	c := dial(t, addr)
	callUntilEnd(t, c, 32, 5, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}, func(err error) bool {
		return errors.Is(err, ErrGoAway) || errors.Is(err, ErrClosed) || IsRetryable(err)
	})
}

// callUntilEnd runs callers goroutines that call mJitter on c, each with
// requests of its own, until a call fails; once every caller has made
// warm calls it runs end (which should make the calls fail). Every answer
// must be the call's own, every failure one that expected accepts, and no
// call may be left pending.
func callUntilEnd(t *testing.T, c *Client, callers, warm int, end func(), expected func(error) bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	started := make(chan struct{}, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := []byte{byte(g), 0, 0}
			for i := 0; ; i++ {
				req[1], req[2] = byte(i), byte(i>>8)
				if i == warm {
					started <- struct{}{}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, err := c.Call(ctx, mJitter, req, nil)
				cancel()
				if err != nil {
					if !expected(err) {
						errs <- fmt.Errorf("caller %d call %d: %v", g, i, err)
					}
					return
				}
				if !bytes.Equal(out, req) {
					errs <- fmt.Errorf("caller %d call %d: got %x", g, i, out)
					return
				}
			}
		}()
	}
	for range callers {
		<-started
	}
	end()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d calls pending after the end", n)
	}
}

// A connection the server told to go away and then closed refuses a call
// with ErrGoAway, not with a plain ErrClosed: the call was not sent, and
// rpc/cluster sends it elsewhere only on ErrGoAway. send looks for the
// go-away first, but a caller can do so just before the go-away comes and
// meet the close just after: then acquire (the slot table) refuses it, as
// openStream's stream set does a stream (both through notSent). Without
// the go-away, the refusal says why the connection closed.
func TestClosedAfterGoAwayRefusesWithGoAway(t *testing.T) {
	for _, tc := range []struct {
		name      string
		goAway    bool
		callFirst bool // a call before, whose slot is then free: acquire's second refusal
		want      func(error) bool
	}{
		{"go-away, then close", true, false, func(err error) bool { return err == ErrGoAway }},
		{"go-away, then close, a free slot", true, true, func(err error) bool { return err == ErrGoAway }},
		{"close alone", false, false, func(err error) bool { return errors.Is(err, ErrClosed) && !IsRetryable(err) }},
		{"close alone, a free slot", false, true, func(err error) bool { return errors.Is(err, ErrClosed) && !IsRetryable(err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t)
			if tc.callFirst {
				if _, err := callAnswered(t, c, peer, nil, wire.Response{Status: StatusOK}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.goAway {
				peer.send(wire.KindGoAway, nil)
				if kind, _, ok := peer.recv(); !ok || kind != wire.KindGoAway {
					t.Fatalf("got frame kind %d ok %v, want the client's go-away acknowledgement", kind, ok)
				}
			}
			peer.Close()
			await(t, "the client to see the close", c.Closed)
			if _, err := acquireSlot(c, nil); !tc.want(err) {
				t.Errorf("a call's slot refused with %v", err)
			}
			if tc.callFirst && idleSlots(t, c) != 1 {
				t.Errorf("%d idle slots after the refusal, want the one slot back", idleSlots(t, c))
			}
		})
	}
}
