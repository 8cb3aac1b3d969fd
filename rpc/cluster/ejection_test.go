package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

const (
	mStatus = 40 // answers the status its request holds (a u32), 200 with no error
	mWedge  = 41 // a wedged handler: holds every call until the test ends, whatever its ctx
	mNew    = 42 // served only by the replicas a test gives it to
	mNone   = 43 // served by no replica: 404 "no such method"
)

// wedge makes r's mWedge hold every call, whatever the call's ctx (a
// handler stuck on a lock, say), counting the calls that entered it in
// held. A held call is let go (its answer comes too late: the client gave
// up on it) when the test sends on the channel wedge returns, and at the
// end of the test; the test lets go the calls it is done with, so that
// they do not fill the server's calls in flight (WithMaxInFlight), which
// would stop it reading the connection and answering health checks.
func wedge(t *testing.T, r *replicaSrv, held *atomic.Int32) chan<- struct{} {
	release := make(chan struct{})
	t.Cleanup(sync.OnceFunc(func() { close(release) }))
	let := make(chan struct{})
	r.server().Handle(mWedge, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		held.Add(1)
		select {
		case <-release:
		case <-let:
		}
		return resp, nil
	})
	return let
}

// expiringCtx is a ctx whose deadline the test makes pass when it wants
// (expire): Err then returns context.DeadlineExceeded, as a timer's ctx
// does at its deadline, but with no race against the clock.
type expiringCtx struct {
	context.Context // Value
	dl              time.Time
	done            chan struct{}
	once            sync.Once
	expired         atomic.Bool
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), dl: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (c *expiringCtx) Deadline() (time.Time, bool) { return c.dl, true }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *expiringCtx) expire() {
	c.once.Do(func() {
		c.expired.Store(true)
		close(c.done)
	})
}

// callHeld makes an mWedge call through c and returns its error: when
// the call lands on a wedged replica (held grows), end makes its ctx end
// there, and the held call is then let go (let, from wedge); a call a
// replica answers returns as it is.
func callHeld(t *testing.T, c *Client, held *atomic.Int32, let chan<- struct{}, end func(*expiringCtx)) error {
	t.Helper()
	ctx := newExpiringCtx()
	defer ctx.expire()
	before := held.Load()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mWedge, nil, nil)
		errc <- err
	}()
	var err error
	answered := false
	await(t, "the call answered, or held by the wedged replica", func() bool {
		select {
		case err = <-errc:
			answered = true
			return true
		default:
		}
		return held.Load() > before
	})
	if answered {
		return err
	}
	end(ctx)
	err = <-errc
	let <- struct{}{}
	return err
}

// What a failed call says about its replica: which outcomes count in the
// replica's row of failures (WithEjection) and which are the caller's
// business. A replica that cannot serve the method (404 "no such method",
// a misdeployed replica) and a call whose deadline passed while the
// replica held it (a wedged handler) count, as a 500 does; the other 4xx,
// a cancel and a deadline that passed before the call was sent do not.
//
// A handler's own 404 ("no such account") is the call's business too:
// only the server's 404 "no such method" (rpc.IsNoSuchMethod) counts.
//
// Before, 404 and a deadline passed in flight did not count: a replica
// that answered every call at once with 404 drew the most calls (P2C
// sees it the least loaded), and a wedged one was never ejected.
func TestCallOutcomeCounts(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	r.server().Handle(mStatus, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if code := binary.LittleEndian.Uint32(req); code != rpc.StatusOK {
			return resp, rpc.Errorf(code, "status %d from the handler", code)
		}
		return resp, nil
	})
	var held atomic.Int32
	let := wedge(t, r, &held)
	// Never ejected here: the test reads the row.
	c := dialT(t, r.addr, WithHealthCheck(time.Hour, 0), WithEjection(math.MaxInt32, time.Minute, time.Minute))
	rep := replicaOf(c, r.addr)
	status := func(code uint32) func(t *testing.T) error {
		return func(t *testing.T) error {
			req := binary.LittleEndian.AppendUint32(nil, code)
			_, err := c.Call(context.Background(), mStatus, req, nil)
			if rpc.Code(err) != code {
				t.Fatalf("status %d: %v", code, err)
			}
			return err
		}
	}
	for _, tc := range []struct {
		name  string
		call  func(t *testing.T) error
		fails int32 // counted in the replica's row
		want  error // errors.Is the call's error; nil: any
	}{
		{"answered", status(rpc.StatusOK), 0, nil},
		{"400", status(rpc.StatusBadRequest), 0, nil},
		{"401", status(rpc.StatusUnauthorized), 0, nil},
		{"403", status(rpc.StatusForbidden), 0, nil},
		{"409", status(409), 0, nil},
		{"404 from a handler (no such account, say)", status(rpc.StatusNotFound), 0, nil},
		{"404 no such method", func(t *testing.T) error {
			_, err := c.Call(context.Background(), mNone, nil, nil)
			if rpc.Code(err) != rpc.StatusNotFound {
				t.Fatalf("call of a method nobody serves: %v", err)
			}
			return err
		}, 1, nil},
		{"500", status(rpc.StatusInternal), 1, nil},
		{"503 from a handler", status(rpc.StatusUnavailable), 1, nil},
		{"504 from a handler", status(rpc.StatusDeadlineExceeded), 1, nil},
		{"deadline passed in flight", func(t *testing.T) error {
			return callHeld(t, c, &held, let, (*expiringCtx).expire)
		}, 1, context.DeadlineExceeded},
		{"deadline passed before the call was sent", func(t *testing.T) error {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := c.Call(ctx, mWedge, nil, nil)
			return err
		}, 0, context.DeadlineExceeded},
		{"canceled in flight", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := held.Load()
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mWedge, nil, nil)
				errc <- err
			}()
			await(t, "the call held", func() bool { return held.Load() > before })
			cancel()
			err := <-errc
			let <- struct{}{}
			return err
		}, 0, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep.fails.Store(0)
			err := tc.call(t)
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if got := rep.fails.Load(); got != tc.fails {
				t.Fatalf("call ended with %v: %d failures counted, want %d", err, got, tc.fails)
			}
		})
	}
}

// A replica that takes calls and answers none (a wedged handler; its
// health check still passes) is ejected once WithEjection's count of
// calls in a row ended by their deadline there, and the calls go to the
// healthy replica. Before, a deadline that ended a call was never counted:
// the wedged replica kept its share of the calls, each one lost.
func TestWedgedReplicaEjected(t *testing.T) {
	r1, r2 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	var held atomic.Int32
	let := wedge(t, r1, &held)
	var served atomic.Int32
	r2.server().Handle(mWedge, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		served.Add(1)
		return resp, nil
	})
	// A back-off of a minute: once out, the wedged replica stays out for
	// the rest of the test. Its health checks, every 50 ms, pass.
	c := dialT(t, "static:///"+r1.addr+","+r2.addr, WithHealthCheck(50*time.Millisecond, 0), WithEjection(3, time.Minute, time.Minute))
	lost := 0
	await(t, "the wedged replica ejected", func() bool {
		if err := callHeld(t, c, &held, let, (*expiringCtx).expire); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call: %v", err)
			}
			lost++
		}
		return replicaState(c, r1.addr) == "ejected"
	})
	if st := replicaState(c, r2.addr); st != "ready" {
		t.Fatalf("the healthy replica is %s", st)
	}
	for _, rs := range c.Stats().Replicas {
		if rs.Addr == r1.addr && (rs.LastError == nil || !strings.Contains(rs.LastError.Error(), "in a row")) {
			t.Fatalf("the wedged replica was ejected for %v, not for its calls", rs.LastError)
		}
	}
	if lost < 3 {
		t.Fatalf("ejected after %d calls lost, want 3 in a row", lost)
	}
	h, n := held.Load(), served.Load()
	for range 100 {
		if err := callHeld(t, c, &held, let, (*expiringCtx).expire); err != nil {
			t.Fatalf("a call with the wedged replica ejected: %v", err)
		}
	}
	if held.Load() != h || served.Load() != n+100 {
		t.Fatalf("of 100 calls after the ejection the wedged replica held %d, the healthy one ran %d", held.Load()-h, served.Load()-n)
	}
}

// A misdeployed replica, which answers a method the others serve with
// 404 (no such method), answers at once: P2C sees it the least loaded and
// gives it the most calls. Its 404s now count as failures: it is ejected
// (within the share WithMaxEjected allows) and the calls go to the
// replicas that serve the method. With two of three misdeployed, one is
// ejected and the other stays in rotation (the cap: half of 3 is 1).
func TestMisdeployedReplicaEjected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing int // replicas without mNew, of 3
	}{
		{"one of three", 1},
		{"two of three", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
			var served atomic.Int64
			for _, r := range rs[tc.missing:] {
				r.server().Handle(mNew, func(ctx context.Context, req, resp []byte) ([]byte, error) {
					served.Add(1)
					time.Sleep(time.Millisecond) // some work: the 404 is quicker
					return append(resp, req...), nil
				})
			}
			c := dialT(t, "static:///"+rs[0].addr+","+rs[1].addr+","+rs[2].addr,
				WithHealthCheck(time.Hour, 0), WithEjection(5, time.Minute, time.Minute))
			var notFound, ok atomic.Int64
			stopCh := make(chan struct{})
			var wg sync.WaitGroup
			stop := sync.OnceFunc(func() {
				close(stopCh)
				wg.Wait()
			})
			t.Cleanup(stop) // before the client closes, when the test fails
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stopCh:
							return
						default:
						}
						_, err := c.Call(context.Background(), mNew, []byte("x"), nil)
						switch {
						case err == nil:
							ok.Add(1)
						case rpc.Code(err) == rpc.StatusNotFound:
							notFound.Add(1)
						default:
							t.Errorf("call: %v", err)
						}
					}
				}()
			}
			await(t, "a misdeployed replica ejected", func() bool {
				return replicaState(c, rs[0].addr) == "ejected" || tc.missing == 2 && replicaState(c, rs[1].addr) == "ejected"
			})
			stop()
			t.Logf("until the ejection: %d calls answered 404, %d served", notFound.Load(), ok.Load())
			out, in := 0, -1
			for k, r := range rs[:tc.missing] {
				if replicaState(c, r.addr) == "ejected" {
					out++
				} else {
					in = k
				}
			}
			for _, r := range rs[tc.missing:] {
				if st := replicaState(c, r.addr); st != "ready" {
					t.Fatalf("a replica that serves the method is %s", st)
				}
			}
			if out != 1 {
				t.Fatalf("%d misdeployed replicas ejected, want 1", out)
			}
			// The ejected one gets no call; what stays in rotation (a
			// misdeployed replica the cap holds back) does.
			failed := 0
			for range 300 {
				if _, err := c.Call(context.Background(), mNew, []byte("x"), nil); err != nil {
					if rpc.Code(err) != rpc.StatusNotFound {
						t.Fatal(err)
					}
					failed++
				}
				if n := ejectedCount(c); n > 1 {
					t.Fatalf("%d of 3 replicas ejected for failed calls", n)
				}
			}
			if tc.missing == 1 && failed != 0 {
				t.Fatalf("%d of 300 calls answered 404 with the misdeployed replica ejected", failed)
			}
			if tc.missing == 2 && replicaState(c, rs[in].addr) != "ready" {
				t.Fatalf("the misdeployed replica the cap held back is %s, want ready", replicaState(c, rs[in].addr))
			}
		})
	}
}

// replicaState returns the state of the client's replica at addr ("" when
// it has none).
func replicaState(c *Client, addr string) string {
	for _, r := range c.Stats().Replicas {
		if r.Addr == addr {
			return r.State
		}
	}
	return ""
}

func ejectedCount(c *Client) int {
	n := 0
	for _, r := range c.Stats().Replicas {
		if r.State == "ejected" {
			n++
		}
	}
	return n
}

// The share of replicas ejections may keep out (WithMaxEjected): at most
// max(1, ⌊share × n⌋) of the n replicas out at once, the ejection asked
// for included, counting the replicas out for any reason (one that cannot
// be reached too) but not removed ones.
//
// Before, a lone replica, or any share under 1/n, let no replica be
// ejected for failed calls, and a share times n just under a whole number
// in floating point (0.29 × 100 = 28.999…) allowed one replica fewer.
func TestMayEject(t *testing.T) {
	for _, tc := range []struct {
		n, out  int     // replicas, r among them, and how many others are out
		removed int     // more replicas, removed (they count not at all)
		share   float64 // WithMaxEjected
		want    bool
	}{
		{1, 0, 0, 0.5, true}, // at least one
		{1, 0, 3, 0.5, true},
		{2, 0, 0, 0.5, true},
		{2, 1, 0, 0.5, false},
		{3, 0, 0, 0.5, true},
		{3, 1, 0, 0.5, false},
		{4, 1, 0, 0.5, true},
		{4, 2, 0, 0.5, false},
		{5, 0, 0, 0.1, true}, // at least one
		{5, 1, 0, 0.1, false},
		{5, 0, 0, 0, true}, // at least one
		{5, 1, 0, 0, false},
		{100, 28, 0, 0.29, true},
		{100, 29, 0, 0.29, false},
		{10, 2, 0, 0.3, true},
		{10, 3, 0, 0.3, false},
		{3, 2, 0, 1, true},
	} {
		c := &Client{o: options{maxEjected: tc.share}, replicas: map[string]*replica{}}
		var r *replica
		for k := range tc.n + tc.removed {
			x := &replica{addr: string(rune('a' + k)), state: stateReady}
			switch {
			case k == 0:
				r = x
			case k <= tc.out:
				x.state = stateEjected
			case k >= tc.n:
				x.state = stateEjected
				x.removed.Store(true)
			}
			c.replicas[x.addr] = x
		}
		if got := c.mayEjectLocked(r); got != tc.want {
			t.Errorf("%d replicas (%d removed), %d out, share %v: may eject %v, want %v", tc.n, tc.removed, tc.out, tc.share, got, tc.want)
		}
	}
}

// WithMaxEjected takes a share from 0 to 1; anything else keeps the
// default, as the other options keep theirs.
func TestWithMaxEjected(t *testing.T) {
	for _, tc := range []struct {
		share, want float64
	}{
		{0, 0},
		{0.25, 0.25},
		{1, 1},
		{-0.1, DefaultMaxEjectedFraction},
		{1.5, DefaultMaxEjectedFraction},
		{math.NaN(), DefaultMaxEjectedFraction},
		{math.Inf(1), DefaultMaxEjectedFraction},
	} {
		if got := buildOptions([]Option{WithMaxEjected(tc.share)}).maxEjected; got != tc.want {
			t.Errorf("WithMaxEjected(%v): %v, want %v", tc.share, got, tc.want)
		}
	}
}

// The cap on ejections for failed calls, end to end. When every replica
// fails every call (a database they share is down), failed calls eject
// at most the allowed share, and calls keep reaching the others (their
// errors, not ErrNoReplica); a lone replica may still be ejected (at
// least one may always be); replicas out because a health check failed
// count toward the share (the others are held back), and are held back
// themselves (TestHealthCheckEjectionsCapped).
//
// The "lone replica" case failed before: the default half of one replica
// let none be ejected.
func TestEjectionCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		run  func(t *testing.T, c *Client, rs []*replicaSrv)
	}{
		{"all fail", 3, func(t *testing.T, c *Client, rs []*replicaSrv) {
			await(t, "an ejection", func() bool {
				callFail(t, c)
				return c.Stats().Ejections > 0
			})
			for range 500 {
				callFail(t, c)
				if n := ejectedCount(c); n > 1 {
					t.Fatalf("%d of 3 replicas ejected for failed calls", n)
				}
			}
		}},
		{"lone replica", 1, func(t *testing.T, c *Client, rs []*replicaSrv) {
			await(t, "the lone replica ejected", func() bool {
				_, err := c.Call(context.Background(), mFail, nil, nil)
				if err == nil {
					t.Fatal("mFail succeeded")
				}
				return replicaState(c, rs[0].addr) == "ejected"
			})
			if _, err := c.Call(context.Background(), mFail, nil, nil); !errors.Is(err, ErrNoReplica) {
				t.Fatalf("a call with the lone replica ejected: %v, want ErrNoReplica", err)
			}
		}},
		{"health check counts", 2, func(t *testing.T, c *Client, rs []*replicaSrv) {
			rs[0].server().Health().Set("", rpc.HealthNotServing)
			await(t, "the replica that is not serving ejected", func() bool { return replicaState(c, rs[0].addr) == "ejected" })
			for range 200 {
				callFail(t, c)
			}
			if st := replicaState(c, rs[1].addr); st != "ready" {
				t.Fatalf("with the other replica out (failed check), failed calls made the last one %s", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []*replicaSrv
			target := "static:///"
			for k := range tc.n {
				rs = append(rs, startReplica(t, "127.0.0.1"))
				if k > 0 {
					target += ","
				}
				target += rs[k].addr
			}
			// Default share; a back-off of a minute, so that an
			// ejected replica stays out for the rest of the test.
			c := dialT(t, target, WithHealthCheck(20*time.Millisecond, time.Second), WithEjection(3, time.Minute, time.Minute))
			tc.run(t, c, rs)
		})
	}
}

// callFail makes an mFail call, which must reach a replica (500).
func callFail(t *testing.T, c *Client) {
	t.Helper()
	if _, err := c.Call(context.Background(), mFail, nil, nil); rpc.Code(err) != rpc.StatusInternal || errors.Is(err, ErrNoReplica) {
		t.Fatalf("mFail: %v, want a 500 from a replica", err)
	}
}

// The cap of WithMaxEjected holds for ejections by health check too: when
// the checks of every replica fail, by timing out (replicas too busy to
// answer in time) or by an answer of not serving, at most the allowed
// share is ejected, and the others stay in rotation, their calls
// answered. An interceptor on the connections counts the checks begun
// (a check begun follows the decision on the one before it); it fails a
// check as its timeout does, at once, so that the checks may keep the
// default timeout: a short one (it was 20 ms) timed out the admission's
// dial or check on a loaded machine, and with its minute of back-off the
// replica was never admitted. Ejections by health check were not capped:
// every replica was ejected, and every call failed with ErrNoReplica.
func TestHealthCheckEjectionsCapped(t *testing.T) {
	for _, how := range []string{"timeout", "not serving"} {
		t.Run(how, func(t *testing.T) {
			var hang atomic.Bool
			var checks atomic.Int32 // begun while hang or not serving
			ic := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
				if method == rpc.HealthMethod && hang.Load() {
					checks.Add(1)
					if how == "timeout" {
						return nil, context.DeadlineExceeded // no answer within the health timeout
					}
				}
				return invoke(ctx, method, req, resp)
			}
			rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
			// Default share (half: one of two); a back-off of a minute,
			// so that an ejected replica stays out for the rest of the
			// test.
			c := dialT(t, "static:///"+rs[0].addr+","+rs[1].addr,
				WithHealthCheck(10*time.Millisecond, 0), WithEjection(0, time.Minute, time.Minute),
				WithClientOptions(rpc.WithClientInterceptors(ic)))
			if how == "not serving" {
				for _, r := range rs {
					r.server().Health().Set("", rpc.HealthNotServing)
				}
			}
			hang.Store(true)
			await(t, "a replica ejected by its health check", func() bool { return ejectedCount(c) > 0 })
			// The other's checks go on failing: at most one is out.
			n := checks.Load()
			await(t, "5 more failed checks, or a second replica ejected", func() bool {
				return ejectedCount(c) > 1 || checks.Load() >= n+5
			})
			if out := ejectedCount(c); out > 1 {
				t.Fatalf("%d of 2 replicas ejected by failed health checks, beyond the cap of one: %+v", out, c.Stats().Replicas)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
				t.Fatalf("a call with one replica held in by the cap: %q %v", out, err)
			}
		})
	}
}

// The cap holds for the check made again on a new connection too: a
// replica whose check found its connection broken has the check made on
// the connection dialed in its place, and when that check fails, the
// replica is held in by the cap (with the new connection) as when its
// periodic check fails.
func TestRecheckEjectionCapped(t *testing.T) {
	rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
	d := &rawConnDialer{}
	c := dialT(t, "static:///"+rs[0].addr+","+rs[1].addr,
		WithHealthCheck(10*time.Millisecond, time.Second), WithEjection(0, 20*time.Millisecond, 40*time.Millisecond),
		WithClientOptions(rpc.WithDialer(d)))
	// The first replica fails every probe: it stays out.
	rs[0].server().Health().Set("", rpc.HealthNotServing)
	await(t, "the first replica ejected", func() bool { return replicaState(c, rs[0].addr) == "ejected" })
	rs[1].server().Health().Set("", rpc.HealthNotServing)
	// sockets returns the sockets dialed to the second replica.
	sockets := func() []net.Conn {
		d.mu.Lock()
		defer d.mu.Unlock()
		var out []net.Conn
		for _, nc := range d.conns {
			if nc.RemoteAddr().String() == rs[1].addr {
				out = append(out, nc)
			}
		}
		return out
	}
	old := sockets()
	if len(old) != 1 {
		t.Fatalf("%d sockets to the second replica, want 1", len(old))
	}
	// Lost sooner than the ejection base after it was made, a connection
	// ejects its replica whatever the share (it would be redialed in a
	// loop): this one is older.
	await(t, "the connection older than the ejection base", func() bool {
		for _, cn := range c.ready.Load().conns {
			if cn.Addr() == rs[1].addr {
				return time.Since(cn.born) > 20*time.Millisecond
			}
		}
		return false
	})
	old[0].Close()
	await(t, "the second replica ejected, or held in on a new connection", func() bool {
		if ejectedCount(c) > 1 {
			return true
		}
		for _, cn := range c.ready.Load().conns {
			if cn.Addr() == rs[1].addr && !cn.rc.Closed() && len(sockets()) > 1 {
				return true
			}
		}
		return false
	})
	if out := ejectedCount(c); out > 1 {
		t.Fatalf("%d of 2 replicas ejected, beyond the cap of one: %+v", out, c.Stats().Replicas)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
		t.Fatalf("a call with one replica held in by the cap: %q %v", out, err)
	}
}
