package cluster

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/internal/dnstest"
)

// Every replica fails its first attempt (nothing listens yet): Dial
// returns a client all the same; calls fail at once with ErrNoReplica
// saying why, a call with WithWaitForReady waits within its ctx, and
// once the replica is up calls succeed.
func TestDialBeforeReplicasUp(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	addr := r.addr
	r.kill()
	c, err := Dial(context.Background(), addr, WithHealthCheck(0, time.Second), WithEjection(0, 50*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatalf("Dial with no replica up: %v", err)
	}
	defer c.Close()
	_, err = c.Call(context.Background(), mEcho, []byte("x"), nil)
	if !errors.Is(err, ErrNoReplica) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a call before any replica is up: %v, want ErrNoReplica saying why", err)
	}
	// A client whose calls wait for a replica, within their ctx.
	c2, err := Dial(context.Background(), addr, WithHealthCheck(0, time.Second), WithEjection(0, 50*time.Millisecond, 200*time.Millisecond),
		WithWaitForReady(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer wcancel()
	if _, err := c2.Call(wctx, mEcho, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiting call whose ctx ends first: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c2.Call(ctx, mEcho, []byte("waited"), nil)
		if err == nil && string(out) != "waited" {
			err = errors.New("wrong answer " + string(out))
		}
		done <- err
	}()
	r.start()
	if err := <-done; err != nil {
		t.Fatalf("the call waiting for a replica: %v", err)
	}
	await(t, "the first client to admit the replica", func() bool { return readyCount(c) == 1 })
	if out, err := c.Call(context.Background(), mEcho, []byte("y"), nil); err != nil || string(out) != "y" {
		t.Fatalf("a call once the replica is up: %q %v", out, err)
	}
}

// A name that does not resolve yet (a DNS record created after the
// client starts, a headless service with no pod ready) does not fail
// Dial either: the client asks again, sooner than the refresh interval,
// and calls succeed once the name resolves.
func TestDialBeforeNameResolves(t *testing.T) {
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	r := startReplica(t, "127.0.0.1")
	_, port, _ := splitHostPort(r.addr)
	c, err := Dial(context.Background(), "dns://"+dns.Addr()+"/late.svc.test:"+port, WithRefresh(time.Hour))
	if err != nil {
		t.Fatalf("Dial of a name that does not resolve yet: %v", err)
	}
	defer c.Close()
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrNoReplica) || !strings.Contains(err.Error(), "resolving") {
		t.Fatalf("a call before the name resolves: %v", err)
	}
	dns.SetAddrs("late.svc.test", netip.MustParseAddr("127.0.0.1"))
	await(t, "the name to resolve and its replica to be admitted", func() bool { return readyCount(c) == 1 })
	if out, err := c.Call(context.Background(), mEcho, []byte("z"), nil); err != nil || string(out) != "z" {
		t.Fatalf("%q %v", out, err)
	}
}

// A pushed set that is empty at Dial is no error either.
func TestDialEmptyPush(t *testing.T) {
	push := NewPush()
	c, err := Dial(context.Background(), "svc", WithResolver(push))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := startReplica(t, "127.0.0.1")
	push.Set(r.addr)
	await(t, "the pushed replica admitted", func() bool { return readyCount(c) == 1 })
}

// WithWaitForReady(d) bounds a call's waits in all: a replica admitted
// and gone again before the call could take it (the ready set wakes the
// call with no connection it can use, here again and again, far sooner
// than d) does not start d afresh. Each wait used to, so the call waited
// for as long as the flapping lasted.
func TestWaitForReadyOnceInAll(t *testing.T) {
	c, err := Dial(context.Background(), "svc", WithResolver(NewPush()), WithWaitForReady(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, nil, nil)
		done <- err
	}()
	// Wake the waiting call every 10 ms, as an admission that found its
	// connection gone does, until it returns (30 s at most: a guard).
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			if !errors.Is(err, ErrNoReplica) {
				t.Fatalf("%v, want ErrNoReplica", err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the call still waits for a replica after 30 s of a ready set woken every 10 ms, with a wait of 100 ms")
		}
		c.mu.Lock()
		close(c.readyCh)
		c.readyCh = make(chan struct{})
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// hangingResolver answers no resolution until its ctx ends, as a
// registry or a DNS server that never answers.
type hangingResolver struct{ asked atomic.Int32 }

func (h *hangingResolver) Resolve(ctx context.Context) ([]string, error) {
	h.asked.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// Dial with a ctx that never ends returns although the resolver never
// answers: its first resolution is bounded as the background ones are
// (the health timeout, at least 5 s), and the client keeps asking. Dial
// waited on the resolver for as long as it hung, for ever here. The test
// lowers the 5 s floor to 100 ms (resolveFloorTest), which it waited out.
func TestDialResolverHangs(t *testing.T) {
	resolveFloorTest.Store(int64(100 * time.Millisecond))
	defer resolveFloorTest.Store(0)
	h := &hangingResolver{}
	done := make(chan *Client, 1)
	go func() {
		c, err := Dial(context.Background(), "hangs", WithResolver(h), WithHealthCheck(0, 10*time.Millisecond))
		if err != nil {
			t.Errorf("Dial: %v", err)
		}
		done <- c
	}()
	var c *Client
	select {
	case c = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("gave up after 60 s: Dial still waits on a resolver that never answers")
	}
	if c == nil {
		return
	}
	defer c.Close()
	if _, err := c.Call(context.Background(), mEcho, nil, nil); !errors.Is(err, ErrNoReplica) || !strings.Contains(err.Error(), "resolving") {
		t.Fatalf("a call before the name resolves: %v", err)
	}
}

// A call whose ctx has ended before it is made returns ctx's error, as
// rpc.Client.Call does, whether or not a replica is ready; it got
// ErrNoReplica when none was.
func TestCallWithEndedCtxGetsCtxError(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	addr := r.addr
	r.kill()
	c, err := Dial(context.Background(), addr, WithHealthCheck(0, time.Second), WithEjection(0, 50*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Call(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call with an ended ctx and no replica ready: %v, want context.Canceled", err)
	}
	if _, err := c.Send(ctx, mEcho, []byte("x"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a send with an ended ctx and no replica ready: %v, want context.Canceled", err)
	}
	if st := c.Stats(); st.Calls != 2 || st.Failed != 2 {
		t.Fatalf("Stats: %d calls, %d failed; want 2 and 2", st.Calls, st.Failed)
	}
}
