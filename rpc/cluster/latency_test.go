package cluster

import (
	"context"
	"testing"
	"time"
)

// A caller that makes one call at a time sends few of them to a replica
// much slower than the other: P2C weighs the replicas' latencies, where
// their loads (no call in flight on either when a call is picked) cannot
// tell them apart. Before, the slow replica got half of the calls; with
// weights, the heavy slow replica got at least the share its weight won
// without a comparison. Counts, not times: the slow replica sleeps 20 ms
// a call, the other not at all, far apart however loaded the machine.
func TestSerialCallsAvoidSlowReplica(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  func(slow, fast string) []Option
	}{
		{"p2c", func(slow, fast string) []Option { return []Option{WithResolver(Static(slow, fast))} }},
		{"weighted p2c, the slow one heavier", func(slow, fast string) []Option {
			return []Option{WithResolver(weighted{{slow, 2}, {fast, 1}})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow, fast := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
			slow.delay.Store(int64(20 * time.Millisecond))
			c := dialT(t, "svc", tc.res(slow.addr, fast.addr)...)
			const n = 300
			for range n {
				if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
					t.Fatal(err)
				}
			}
			s, f := slow.calls.Load(), fast.calls.Load()
			t.Logf("slow replica %d calls, fast %d", s, f)
			if s+f != n {
				t.Fatalf("%d calls ran, want %d", s+f, n)
			}
			// Until both latencies are known, the draw is by load (a
			// tie): a few calls; then one every 5 s (latencyStale).
			if s > n/10 {
				t.Fatalf("the slow replica ran %d of %d serial calls", s, n)
			}
			for _, cn := range c.ready.Load().conns {
				if l := cn.Latency(); cn.Addr() == slow.addr && l < 10*time.Millisecond || cn.Addr() == fast.addr && l <= 0 {
					t.Fatalf("latency of %s: %v", cn.Addr(), l)
				}
			}
		})
	}
}
