package loadgen

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// BenchmarkCallConn: one call at a time on one connection to an rpc
// server, through a directConn (what a run with Concurrency 1 uses) and
// through an rpc.Client (the rpc path: a read goroutine and a hand-off per
// answer). The difference is what the direct mode saves the load tool.
func BenchmarkCallConn(b *testing.B) {
	for _, kind := range []string{"direct", "rpc"} {
		b.Run(kind, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			s := rpc.NewServer()
			s.Handle(mEcho, func(_ context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil })
			go s.Serve(l)
			defer s.Close()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			var c callConn = newDirectConn(nc)
			if kind == "rpc" {
				c = rpc.NewClient(nc)
			}
			defer c.Close()
			ctx := context.Background()
			req, resp := make([]byte, 64), make([]byte, 0, 64)
			if _, err := c.Call(ctx, mEcho, req, resp); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Call(ctx, mEcho, req, resp[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
