package cluster

import (
	"context"
	"errors"
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
