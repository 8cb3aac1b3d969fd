package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// BenchmarkCall: a 64-byte echo through the cluster client (one replica,
// and two, on loopback) beside the floors, the same call on one
// rpc.Client and on two rpc.Clients taken in turn (to the same two
// servers), and with a hedging policy whose delay no call reaches. par
// is b.SetParallelism: par × GOMAXPROCS callers.
func BenchmarkCall(b *testing.B) {
	r1, r2 := startReplica(b, "127.0.0.1"), startReplica(b, "127.0.0.1")
	ctx := context.Background()
	for _, par := range []int{1, 16} {
		b.Run("floor=client/par="+itoa(par), func(b *testing.B) {
			c, err := rpc.Dial(ctx, "tcp", r1.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			benchCalls(b, c, par)
		})
		b.Run("cluster=1/par="+itoa(par), func(b *testing.B) {
			c := dialT(b, r1.addr)
			benchCalls(b, c, par)
		})
		b.Run("floor=2clients/par="+itoa(par), func(b *testing.B) {
			var cs [2]*rpc.Client
			for i, a := range []string{r1.addr, r2.addr} {
				c, err := rpc.Dial(ctx, "tcp", a)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			benchCalls(b, &alternate{cs: cs}, par)
		})
		b.Run("cluster=2/par="+itoa(par), func(b *testing.B) {
			c := dialT(b, "static:///"+r1.addr+","+r2.addr)
			benchCalls(b, c, par)
		})
		// Hedged, each call answered before its delay: the cost of the
		// attempt's goroutine and ctx.
		b.Run("cluster=2+hedging/par="+itoa(par), func(b *testing.B) {
			c := dialT(b, "static:///"+r1.addr+","+r2.addr, WithHedgingPolicy(HedgingPolicy{MaxAttempts: 2, HedgingDelay: time.Hour}, mEcho))
			benchCalls(b, c, par)
		})
	}
}

// alternate calls its clients in turn: the hand-written floor of a call
// spread over two servers.
type alternate struct {
	cs   [2]*rpc.Client
	next atomic.Uint32
}

func (a *alternate) Call(ctx context.Context, m uint32, req, resp []byte) ([]byte, error) {
	return a.cs[a.next.Add(1)&1].Call(ctx, m, req, resp)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func benchCalls(b *testing.B, c rpc.Caller, par int) {
	req := make([]byte, 64)
	b.ReportAllocs()
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		resp := make([]byte, 0, 64)
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Call(ctx, mEcho, req, resp[:0]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
