package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// slowCloseDialer dials connections whose Close waits for release (as a
// TLS connection's does, up to 5 s, while its close-notify alert waits
// for a peer that does not read); closing counts the Closes begun.
type slowCloseDialer struct {
	net.Dialer
	closing atomic.Int32
	release chan struct{}
}

func (d *slowCloseDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return slowCloseConn{nc, d}, nil
}

type slowCloseConn struct {
	net.Conn
	d *slowCloseDialer
}

func (c slowCloseConn) Close() error {
	c.d.closing.Add(1)
	<-c.d.release
	return c.Conn.Close()
}

// Close closes the client's connections in parallel (each replica's
// goroutine retires its own as the client's ctx ends): with two replicas
// whose connections' Close blocks, as a TLS connection's does for up to
// 5 s towards a replica that stopped reading, both Closes begin before
// Close returns.
func TestCloseClosesConnsInParallel(t *testing.T) {
	rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
	d := &slowCloseDialer{release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(d.release) })
	t.Cleanup(released) // before the client's own cleanup Close
	c := dialT(t, "static:///"+rs[0].addr+","+rs[1].addr, WithClientOptions(rpc.WithDialer(d)))
	if n := d.closing.Load(); n != 0 {
		t.Fatalf("%d connections closed before Close", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	await(t, "both connections' Close to begin", func() bool { return d.closing.Load() >= 2 })
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the connections' Close did", err)
	default:
	}
	released()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// deafResolver answers its first n calls with addrs, then hangs, deaf
// to its ctx, until release is closed (a registry client that ignores
// cancellation); asked counts its calls. As a Watcher (deafWatcher), its
// Watch hangs so.
type deafResolver struct {
	addrs   []string
	n       int32
	asked   atomic.Int32
	release chan struct{}
}

func (d *deafResolver) Resolve(context.Context) ([]string, error) {
	if d.asked.Add(1) <= d.n {
		return d.addrs, nil
	}
	<-d.release
	return d.addrs, nil
}

type deafWatcher struct{ *deafResolver }

func (d deafWatcher) Watch(_ context.Context, update func([]string)) {
	d.asked.Add(1)
	update(d.addrs)
	<-d.release
}

// A resolver that ignores its ctx holds neither Close nor Dial: Close
// returns while a Resolve or a Watch still hangs (it finishes on its
// own), and Dial returns when its ctx ends. Close waited for the
// resolver for ever, and Dial waited for its first answer as long.
func TestResolverIgnoringCtx(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	// closes fails the test when Close does not return (the 60 s only
	// keeps the broken code from hanging the test).
	closes := func(t *testing.T, c *Client) {
		t.Helper()
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("gave up after 60 s: Close still waits for a resolver that ignores its ctx")
		}
	}
	newDeaf := func(t *testing.T, n int32) *deafResolver {
		d := &deafResolver{addrs: []string{r.addr}, n: n, release: make(chan struct{})}
		t.Cleanup(func() { close(d.release) }) // after the test's Close
		return d
	}
	t.Run("polled", func(t *testing.T) {
		d := newDeaf(t, 1)
		c := dialT(t, "deaf", WithResolver(d), WithRefresh(time.Millisecond))
		await(t, "the resolver asked again", func() bool { return d.asked.Load() >= 2 })
		closes(t, c)
	})
	t.Run("watcher", func(t *testing.T) {
		d := newDeaf(t, 1)
		c := dialT(t, "deaf", WithResolver(deafWatcher{d}))
		await(t, "the watcher started", func() bool { return d.asked.Load() >= 2 })
		closes(t, c)
	})
	t.Run("dial", func(t *testing.T) {
		d := newDeaf(t, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		dialed := make(chan *Client, 1)
		go func() {
			c, err := Dial(ctx, "deaf", WithResolver(d))
			if err != nil {
				t.Errorf("Dial: %v", err)
			}
			dialed <- c
		}()
		select {
		case c := <-dialed:
			if c != nil {
				closes(t, c)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("gave up after 60 s: Dial still waits for a resolver that ignores its ctx")
		}
	})
}

// A resolution given up while the resolver's call hangs (deaf to its ctx)
// leaves that call running, and the next resolution waits for it rather
// than calling the resolver again beside it: a resolver that hangs costs
// one goroutine, not one per resolution. An answer that came back between
// two resolutions is stale: the next one asks afresh.
func TestResolveOneCallAtATime(t *testing.T) {
	d := &deafResolver{addrs: []string{"127.0.0.1:1"}, release: make(chan struct{})}
	c := &Client{res: d}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		if _, err := c.resolve(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("resolution %d: %v, want its ctx's end", i, err)
		}
		cancel()
	}
	if n := d.asked.Load(); n != 1 {
		t.Fatalf("the resolver was asked %d times while its first call hung, want 1", n)
	}
	// The hung call answers once the next resolution waits for it (its
	// ctx's Done is looked at only then): had it answered before, its
	// answer would be stale, and the resolver asked again.
	eps, err := c.resolve(&releaseOnWait{Context: context.Background(), release: d.release})
	if err != nil || len(eps) != 1 || eps[0].Addr != "127.0.0.1:1" {
		t.Fatalf("once the hung call answers: %v %v", eps, err)
	}
	if n := d.asked.Load(); n != 1 {
		t.Fatalf("the resolver was asked %d times, want the hung call's answer taken", n)
	}
	// A call that answers after its resolution was given up on (here,
	// its ctx was done before it started) is not taken by the next one.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.resolve(ctx) // takes the answer or not: the canceled ctx races it
	await(t, "the call answered", func() bool { return c.resolving == nil || chanClosed(c.resolving.done) })
	before := d.asked.Load()
	if _, err := c.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := d.asked.Load(); n != before+1 {
		t.Fatalf("asked %d times, %d before the last resolution: it took an answer that came before it", n, before)
	}
}

func chanClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A second Close, made while the first waits for the background work to
// end, returns once it has ended too, as Close promises: it returned at
// once, with the replicas' goroutines and connections still running.
func TestSecondCloseWaits(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	d := &slowCloseDialer{release: make(chan struct{})}
	var released atomic.Bool
	release := sync.OnceFunc(func() { released.Store(true); close(d.release) })
	t.Cleanup(release)
	c := dialT(t, r.addr, WithClientOptions(rpc.WithDialer(d)))
	first := make(chan struct{})
	go func() { c.Close(); close(first) }()
	await(t, "the connection's Close to begin", func() bool { return d.closing.Load() >= 1 })
	second := make(chan bool, 1)
	go func() { c.Close(); second <- released.Load() }()
	// Give the second Close time to return, if it does not wait.
	time.Sleep(50 * time.Millisecond)
	release()
	if !receive(t, "the second Close", second) {
		t.Fatal("a second Close returned while the first still waited for the connections to close")
	}
	receive(t, "the first Close", first)
}

// releaseOnWait is a ctx that never ends and closes release the first
// time its Done is asked for: when a resolution begins to wait.
type releaseOnWait struct {
	context.Context
	once    sync.Once
	release chan struct{}
}

func (r *releaseOnWait) Done() <-chan struct{} {
	r.once.Do(func() { close(r.release) })
	return r.Context.Done()
}
