package cluster

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// BenchmarkCall: a 64-byte echo through the cluster client (one replica,
// and two, on loopback) beside the floor, the same call on one
// rpc.Client. par is b.SetParallelism: par × GOMAXPROCS callers.
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
		b.Run("cluster=2/par="+itoa(par), func(b *testing.B) {
			c := dialT(b, "static:///"+r1.addr+","+r2.addr)
			benchCalls(b, c, par)
		})
	}
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
