package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// Calls through a static list reach every replica, and each answer its
// own caller.
func TestStaticSpread(t *testing.T) {
	r1, r2, r3 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+strings.Join(addrsOf(r1, r2, r3), ","))
	stop := loadRun(c, 16, 30*time.Second)
	await(t, "calls on every replica", func() bool { return r1.calls.Load() > 100 && r2.calls.Load() > 100 && r3.calls.Load() > 100 })
	res := stop()
	if res.failed != 0 {
		t.Fatalf("%d of %d calls failed: %v", res.failed, res.calls, res.firstErr)
	}
	st := c.Stats()
	if st.Calls != res.calls || st.Failed != 0 || st.Retries != 0 || len(st.Replicas) != 3 {
		t.Fatalf("stats %+v after %d calls", st, res.calls)
	}
}

func TestDialErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, target := range []string{"", "dns:///nohostport", "dns:///h:notaport", "foo:///x", "dns+srv:///", "static://x/a:1"} {
		if _, err := Dial(ctx, target); !errors.Is(err, ErrTarget) {
			t.Errorf("Dial(%q): %v, want ErrTarget", target, err)
		}
	}
	canceled, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := Dial(canceled, "static:///127.0.0.1:1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a canceled ctx: %v", err)
	}
}

// After Close a call fails with an error matching rpc.ErrClosed.
func TestClose(t *testing.T) {
	r1 := startReplica(t, "127.0.0.1")
	c := dialT(t, r1.addr)
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	c.Close()
}

// manyAddrs returns n addresses on the loopback whose ports nothing
// should serve.
func manyAddrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.1:%d", 1+i)
	}
	return out
}

// A resolution (or a watcher's update) that gives more addresses than
// WithMaxReplicas allows fails, and the client keeps the replicas it has:
// one DNS answer can name thousands of addresses (a misconfigured or
// hostile server), and the client made a replica of each, with its
// goroutine, dials and connections, however many there were.
func TestMaxReplicas(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	push := NewPush(r.addr)
	c := dialT(t, "push", WithResolver(push))
	push.Set(append(manyAddrs(DefaultMaxReplicas), r.addr)...) // one more than the default
	// The watcher may have subscribed after Set: it then delivers the set
	// itself.
	var st Stats
	await(t, "the update taken or refused", func() bool {
		st = c.Stats()
		return st.LastError != nil || len(st.Replicas) > 1
	})
	if len(st.Replicas) != 1 || st.Replicas[0].Addr != r.addr || st.LastError == nil || !strings.Contains(st.LastError.Error(), "WithMaxReplicas") {
		t.Fatalf("after an update of %d addresses: %d replicas, last error %v; want the 1 before and the update refused", DefaultMaxReplicas+1, len(st.Replicas), st.LastError)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
		t.Fatalf("call after the refused update: %q %v", out, err)
	}
	// At Dial, and an address given twice counts once.
	addrs := manyAddrs(3)
	c2, err := Dial(ctx, "static", WithResolver(Static(append(addrs, addrs[0])...)), WithMaxReplicas(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if st := c2.Stats(); len(st.Replicas) != 0 || st.ResolveErrors != 1 || !strings.Contains(fmt.Sprint(st.LastError), "more than 2 addresses") {
		t.Fatalf("Dial with 3 addresses and WithMaxReplicas(2): %+v", st)
	}
	c3, err := Dial(ctx, "static", WithResolver(Static(addrs[0], addrs[1], addrs[0])), WithMaxReplicas(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if st := c3.Stats(); len(st.Replicas) != 2 {
		t.Fatalf("Dial with 2 addresses (one given twice) and WithMaxReplicas(2): %+v", st)
	}
}
