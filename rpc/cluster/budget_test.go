package cluster

import (
	"context"
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// refuser is a server that refuses every call as not run (503 with the
// not-run flag, what a server going away answers) and answers the health
// check 404 (a server without the health service counts as serving): an
// outage in which every call is retryable.
func refuser(t *testing.T) string { return countingRefuser(t, nil) }

// countingRefuser is refuser counting the calls it refuses in n (nil: no
// count).
func countingRefuser(t *testing.T, n *atomic.Int32) string {
	return rawReplica(t, nil, func(req wire.Request) (wire.Response, rawNext) {
		if req.Method == rpc.HealthMethod {
			return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, rawKeep
		}
		if n != nil {
			n.Add(1)
		}
		return wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true, Body: []byte("going away")}, rawKeep
	})
}

// What rawReplica does after an answer function returned.
type rawNext int

const (
	rawKeep   rawNext = iota // write the answer, read on
	rawDrop                  // close the connection, the request unanswered
	rawClose                 // write the answer, then close the connection
	rawGoAway                // write the answer and a go-away, read on (refusing what follows 503 unrun)
	// rawGoAwayFirst: write a go-away, then the answer (the call crossed
	// the go-away), and read on as rawGoAway. The client reads the
	// go-away before the answer, so it knows the connection went away
	// by the time the caller has the answer.
	rawGoAwayFirst
)

// rawReplica is a server that speaks the wire by hand: answer says what to
// answer each request and what follows (rawNext). It counts the
// connections it accepts in accepted (nil: no count).
func rawReplica(t *testing.T, accepted *atomic.Int32, answer func(wire.Request) (wire.Response, rawNext)) string {
	return serveConns(t, func(nc net.Conn) {
		if accepted != nil {
			accepted.Add(1)
		}
		r, w := frame.NewReader(nc), frame.NewWriter(nc)
		goneAway := false
		for {
			kind, p, err := r.Next()
			if err != nil {
				return
			}
			if kind != wire.KindRequest {
				continue
			}
			req, err := wire.ParseRequest(p)
			if err != nil {
				return
			}
			if goneAway {
				// A request that crossed our go-away is refused
				// unrun, as docs/wire.md §8 has a server do: the
				// client may have sent it before the go-away
				// reached it (a connection admitted on its
				// health check's answer, the go-away behind it).
				resp := wire.Response{Status: rpc.StatusUnavailable, PromiseID: req.PromiseID, NotRun: true}
				w.WriteFrame(wire.KindResponse, wire.AppendResponse(nil, &resp))
				if w.Flush() != nil {
					return
				}
				continue
			}
			resp, next := answer(req)
			if next == rawDrop {
				return
			}
			if next == rawGoAwayFirst {
				w.WriteFrame(wire.KindGoAway, nil)
				goneAway = true
			}
			w.WriteFrame(wire.KindResponse, wire.AppendResponse(nil, &resp))
			if next == rawGoAway {
				w.WriteFrame(wire.KindGoAway, nil)
				goneAway = true
			}
			if w.Flush() != nil || next == rawClose {
				return
			}
		}
	})
}

// serveConns listens on a loopback port and runs serve for each
// connection accepted, in a goroutine of its own, closing the connection
// when serve returns; at the test's end it closes the listener and every
// connection and waits for the serve calls to return. It returns the
// address.
func serveConns(t *testing.T, serve func(nc net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				serve(nc)
			}()
		}
	}()
	return l.Addr().String()
}

// In an outage where every replica refuses every call unrun, retries stay
// within the budget: 10 % of the calls plus 10 a second (plus the one
// second's worth the budget starts with), not one per call. An ejection
// base of 1 ns keeps the refusing replicas in rotation: a connection
// refused younger than the base would eject its replica (see
// TestRefusalWithoutGoAwayBacksOff), and the calls would wait out the
// back-off instead of asking the budget.
func TestRetryBudgetOutage(t *testing.T) {
	a1, a2 := refuser(t), refuser(t)
	start := time.Now()
	c := dialT(t, "static:///"+a1+","+a2, WithWaitForReady(time.Second), WithEjection(0, time.Nanosecond, time.Nanosecond))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.Call(ctx, mEcho, []byte("x"), nil)
				cancel()
				if err == nil {
					t.Error("a refused call succeeded")
					return
				}
				if !rpc.IsRetryable(err) && !errors.Is(err, ErrNoReplica) {
					t.Errorf("call: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	st := c.Stats()
	allowed := DefaultRetryRatio*float64(st.Calls) + DefaultMinRetries*(elapsed.Seconds()+1) + 1
	t.Logf("%d calls in %v: %d retries (%.0f allowed), %d denied", st.Calls, elapsed.Round(time.Millisecond), st.Retries, allowed, st.RetriesDenied)
	if float64(st.Retries) > allowed {
		t.Fatalf("%d retries, the budget allows %.0f", st.Retries, allowed)
	}
	if st.RetriesDenied == 0 || st.Retries == 0 {
		t.Fatalf("the budget neither allowed nor denied: %+v", st)
	}
}

// The budget's arithmetic: a tenth of a retry per call, whole retries out.
func TestBudget(t *testing.T) {
	var b budget
	b.init(0.1, 0) // no time-based refill: deterministic
	for i := 0; i < 100; i++ {
		b.call()
	}
	n := 0
	for b.retry() {
		n++
	}
	if n != 10 {
		t.Fatalf("100 calls allowed %d retries, want 10", n)
	}
	b.init(0.1, 5)
	n = 0
	for b.retry() {
		n++
	}
	if n != 5 {
		t.Fatalf("a fresh budget of 5/s allowed %d retries, want 5", n)
	}
	b.init(0, 0)
	if b.retry() {
		t.Fatal("a zero budget allowed a retry")
	}
	b.init(1, 1) // cap: 10 retries, however many calls
	for i := 0; i < 1000; i++ {
		b.call()
	}
	n = 0
	for b.retry() {
		n++
	}
	if n < 10 || n > 12 {
		t.Fatalf("after 1000 calls at ratio 1, %d retries, want the cap of 10 (11 with the refill of the elapsed time)", n)
	}
}

// The per-second refill keeps what a refill could not turn into whole
// thousandths of a retry for the next one: with refusals 1.9 ms apart,
// 10 retries a second allow 19 in 1.9 s (the refill used to count whole
// milliseconds and drop the rest, about 10), and half a retry a second
// still adds up (it used to add nothing). A calm spell of a year, at a
// large rate (the nanoseconds times the rate are far past int64), fills
// the bucket to its cap, no more.
//
// The budget reads the clock, so the test's own time counts too: what it
// is worth may come on top of the steps' (at 1000 a second, a loaded
// machine took 36 ms, more than the 2 % allowed for it before).
func TestBudgetRefill(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perSecond float64
		step      time.Duration // between two refused calls
		steps     int
		want      int // retries allowed by the steps, ±2 % and 1
	}{
		{"10/s, 1.9 ms apart", 10, 1900 * time.Microsecond, 1000, 19},
		{"0.5/s, 1.9 ms apart", 0.5, 1900 * time.Microsecond, 10000, 9},
		{"1000/s, 1.5 ms apart", 1000, 1500 * time.Microsecond, 1000, 1500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			var b budget
			b.init(0, tc.perSecond) // no per-call share
			for b.retry() {
			} // spend the second's worth it starts with
			got := 0
			for range tc.steps {
				b.origin = b.origin.Add(-tc.step) // step passes
				for b.retry() {
					got++
				}
			}
			own := time.Since(start) // the test's own time, worth own × perSecond at most
			tol := tc.want/50 + 1
			if most := tc.want + tol + int(own.Seconds()*tc.perSecond); got < tc.want-tol || got > most {
				t.Fatalf("%d retries allowed in %v (and the test's own %v) at %v a second, want %d (at most %d)", got, time.Duration(tc.steps)*tc.step, own, tc.perSecond, tc.want, most)
			}
		})
	}
	var b budget
	b.init(0, 1e6)
	b.origin = b.origin.Add(-365 * 24 * time.Hour)
	if !b.retry() {
		t.Fatal("no retry after a year")
	}
	if got := b.tokens.Load(); got != b.cap-unit {
		t.Fatalf("after a year and a retry the bucket holds %d, want its cap %d less one retry", got, b.cap)
	}
}

// The budget's precision and bounds: a ratio or a rate far below a
// thousandth still adds up (they used to be counted in thousandths of a
// retry, so both were zero); a ratio above 1 counts as 1; a huge or
// infinite rate is held to maxRetryRate, so nothing overflows (an
// infinite ratio or rate used to turn negative: no retry ever).
func TestBudgetBounds(t *testing.T) {
	retries := func(b *budget) int {
		n := 0
		for b.retry() {
			n++
		}
		return n
	}
	var b budget
	b.init(0.0001, 0)
	for range 9999 {
		b.call()
	}
	if n := retries(&b); n != 0 {
		t.Fatalf("9999 calls at ratio 0.0001 allowed %d retries, want 0", n)
	}
	b.call()
	if n := retries(&b); n != 1 {
		t.Fatalf("10000 calls at ratio 0.0001 allowed %d retries, want 1", n)
	}
	for range 20000 {
		b.call()
	}
	if n := retries(&b); n != 2 {
		t.Fatalf("20000 more calls at ratio 0.0001 allowed %d retries, want 2", n)
	}

	for _, ratio := range []float64{1, 5, 1e30, math.Inf(1)} {
		b.init(ratio, 0)
		for range 3 {
			b.call()
		}
		if n := retries(&b); n != 3 {
			t.Fatalf("3 calls at ratio %v allowed %d retries, want 3 (a ratio above 1 counts as 1)", ratio, n)
		}
	}

	b.init(0, 0.0001) // one retry every 10000 s
	if n := retries(&b); n != 0 {
		t.Fatalf("a fresh budget of 0.0001/s allowed %d retries", n)
	}
	b.origin = b.origin.Add(-10001 * time.Second)
	if n := retries(&b); n != 1 {
		t.Fatalf("10001 s at 0.0001/s allowed %d retries, want 1", n)
	}

	for _, rate := range []float64{maxRetryRate, 1e30, math.Inf(1)} {
		b.init(0, rate)
		if got, want := b.tokens.Load(), int64(maxRetryRate)*unit; got != want {
			t.Fatalf("a fresh budget of %v/s holds %d, want a second at the most rate, %d", rate, got, want)
		}
		if !b.retry() {
			t.Fatalf("a fresh budget of %v/s allowed no retry", rate)
		}
		for range 1000 {
			b.call()
		}
		b.origin = b.origin.Add(-365 * 24 * time.Hour)
		if !b.retry() {
			t.Fatalf("%v/s: no retry after a year", rate)
		}
		if got := b.tokens.Load(); got != b.cap-unit || b.cap != 10*maxRetryRate*unit {
			t.Fatalf("%v/s: after a year and a retry the bucket holds %d, want its cap %d less one retry", rate, got, b.cap)
		}
	}
}

// refund gives a retry back, and never fills the budget past its cap.
func TestBudgetRefund(t *testing.T) {
	var b budget
	b.init(0, 0) // holds 10 retries at most, starts empty
	b.refund()
	if got := b.tokens.Load(); got != unit {
		t.Fatalf("an empty budget refunded holds %d, want %d", got, unit)
	}
	b.tokens.Store(b.cap - unit/2)
	b.refund()
	if got := b.tokens.Load(); got != b.cap {
		t.Fatalf("a budget half a retry short of its cap refunded holds %d, want its cap %d", got, b.cap)
	}
	b.refund()
	if got := b.tokens.Load(); got != b.cap {
		t.Fatalf("a full budget refunded holds %d, want its cap %d", got, b.cap)
	}
}
