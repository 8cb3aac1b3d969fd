package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

const (
	mEcho = 1 // echoes, after the replica's delay
	mFail = 2 // answers 500
)

// replicaSrv is one replica of the test service: an rpc.Server on a
// loopback address that keeps its address across restarts.
type replicaSrv struct {
	t     testing.TB
	addr  string
	calls atomic.Int64       // echo calls it ran
	delay atomic.Int64       // nanoseconds each echo sleeps (until the test ends)
	ended chan struct{}      // closed when the test ends: delays end
	busy  atomic.Int64       // echo handlers running
	keep  []rpc.ServerOption // options of every start (set before the first restart)

	mu     sync.Mutex
	s      *rpc.Server
	served chan error
}

// startReplica starts a replica on ip (a free port), or on ip:port.
func startReplica(t testing.TB, hostport string) *replicaSrv {
	t.Helper()
	r := &replicaSrv{t: t, addr: hostport, ended: make(chan struct{})}
	if !strings.Contains(hostport, ":") {
		r.addr = hostport + ":0"
	}
	r.start()
	t.Cleanup(func() {
		// A handler still in its delay (an hour, or a call abandoned by its
		// ctx) slept on past the test, into the tests after it.
		close(r.ended)
		r.stop()
		await(t, "the replica's handlers to return", func() bool { return r.busy.Load() == 0 })
	})
	return r
}

func (r *replicaSrv) start() { r.startWith() }

// restartWith closes the replica and starts it again, on the same
// address, with opts.
func (r *replicaSrv) restartWith(opts ...rpc.ServerOption) {
	r.kill()
	r.startWith(opts...)
}

func (r *replicaSrv) startWith(opts ...rpc.ServerOption) {
	r.t.Helper()
	opts = append(append([]rpc.ServerOption{rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, r.keep...), opts...)
	s := rpc.NewServer(opts...)
	s.Handle(mEcho, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		r.busy.Add(1)
		defer r.busy.Add(-1)
		r.calls.Add(1)
		if d := r.delay.Load(); d > 0 {
			tm := time.NewTimer(time.Duration(d))
			select {
			case <-tm.C:
			case <-r.ended:
				tm.Stop()
			}
		}
		return append(resp, req...), nil
	})
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, errors.New("broken replica")
	})
	var l net.Listener
	var err error
	for i := 0; i < 100; i++ { // the port of a listener just closed may linger a moment
		if l, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("listen %s: %v", r.addr, err)
	}
	r.mu.Lock()
	r.addr = l.Addr().String()
	r.s = s
	r.served = make(chan error, 1)
	served := r.served
	r.mu.Unlock()
	go func() { served <- s.Serve(l) }()
}

func (r *replicaSrv) server() *rpc.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// shutdown stops the replica gracefully (go-away, calls finish).
func (r *replicaSrv) shutdown() {
	r.mu.Lock()
	s, served := r.s, r.served
	r.s = nil
	r.mu.Unlock()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		r.t.Errorf("Shutdown %s: %v", r.addr, err)
	}
	<-served
}

// kill closes the replica at once (calls on it fail).
func (r *replicaSrv) kill() {
	r.mu.Lock()
	s, served := r.s, r.served
	r.s = nil
	r.mu.Unlock()
	if s != nil {
		s.Close()
		<-served
	}
}

func (r *replicaSrv) stop() { r.kill() }

// await polls cond until it holds, failing the test after 30 s.
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
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

func dialT(t testing.TB, target string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Dial returns once one replica is admitted: wait for the others, so
	// that a test starts with all of them.
	await(t, "every replica admitted", func() bool { return readyCount(c) == len(c.Stats().Replicas) })
	return c
}

func addrsOf(rs ...*replicaSrv) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.addr)
	}
	return out
}

// readyCount returns how many replicas the client has admitted.
func readyCount(c *Client) int {
	n := 0
	for _, r := range c.Stats().Replicas {
		if r.State == "ready" {
			n++
		}
	}
	return n
}

// load runs callers goroutines making echo calls through c until stop is
// closed; every answer must be the caller's own payload. It returns the
// number of calls, the failures (with the first error) and the latencies.
type loadResult struct {
	calls, failed int64
	firstErr      error
	lat           []time.Duration // of every call, in the order they ended per goroutine
}

// loadRun starts runLoad and returns a function that stops it and returns
// its result.
func loadRun(c rpc.Caller, callers int, timeout time.Duration) func() *loadResult {
	stop := make(chan struct{})
	done := make(chan *loadResult, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- runLoadWait(c, callers, stop, timeout)
	}()
	return func() *loadResult {
		close(stop)
		wg.Wait()
		return <-done
	}
}

func runLoadWait(c rpc.Caller, callers int, stop <-chan struct{}, timeout time.Duration) *loadResult {
	var wg sync.WaitGroup
	res := &loadResult{}
	var mu sync.Mutex
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := runLoad1(c, g, stop, timeout)
			mu.Lock()
			res.calls += r.calls
			res.failed += r.failed
			if res.firstErr == nil {
				res.firstErr = r.firstErr
			}
			res.lat = append(res.lat, r.lat...)
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	return res
}

func runLoad1(c rpc.Caller, g int, stop <-chan struct{}, timeout time.Duration) loadResult {
	var r loadResult
	req := make([]byte, 16)
	var resp []byte
	for i := 0; ; i++ {
		select {
		case <-stop:
			return r
		default:
		}
		binary.LittleEndian.PutUint64(req, uint64(g))
		binary.LittleEndian.PutUint64(req[8:], uint64(i))
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		var err error
		resp, err = c.Call(ctx, mEcho, req, resp[:0])
		r.lat = append(r.lat, time.Since(start))
		cancel()
		r.calls++
		if err == nil && string(resp) != string(req) {
			err = fmt.Errorf("answer %x to %x (misrouted)", resp, req)
		}
		if err != nil {
			r.failed++
			if r.firstErr == nil {
				r.firstErr = err
			}
		}
	}
}

func splitHostPort(a string) (string, string, error) { return net.SplitHostPort(a) }

// tryReplica starts a replica on hostport, or returns the listen error.
func tryReplica(t testing.TB, hostport string) (*replicaSrv, error) {
	l, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, err
	}
	l.Close()
	return startReplica(t, hostport), nil
}

// rawConnDialer records the sockets it dials, so that a test can break
// one (a reset by a middlebox, a NAT mapping dropped) while its server is
// up.
type rawConnDialer struct {
	net.Dialer
	mu    sync.Mutex
	conns []net.Conn
}

func (d *rawConnDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.Dialer.DialContext(ctx, network, addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, nc)
		d.mu.Unlock()
	}
	return nc, err
}

// last returns the socket it dialed last.
func (d *rawConnDialer) last() net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[len(d.conns)-1]
}

// replicaOf returns the client's replica of addr (nil when it has none).
func replicaOf(c *Client, addr string) *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replicas[addr]
}

// callsAll503 makes perG calls of mEcho on c from each of goroutines
// goroutines, each expected to fail with 503 (the storm tests' replicas
// answer every call so), and returns once all have.
func callsAll503(t *testing.T, c *Client, goroutines, perG int) {
	t.Helper()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perG {
				if _, err := c.Call(context.Background(), mEcho, []byte("r"), nil); rpc.Code(err) != rpc.StatusUnavailable {
					t.Errorf("err %v, want the 503", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
