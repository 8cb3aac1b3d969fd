package streams

import (
	"context"
	"io"
	"testing"
	"time"
)

var benchSink uint64

// BenchmarkSubscribe: a server stream of b.N logs of 64 data bytes, read
// with the typed Recv (a view per message); beside it, the floor: the same
// stream read with rpc.Stream.Recv into a reused buffer, no view. Both
// include the server's typed Send (encoding each Log).
func BenchmarkSubscribe(b *testing.B) {
	for _, arm := range []string{"typed", "raw"} {
		b.Run(arm, func(b *testing.B) {
			c, _ := start(b)
			ctx := context.Background()
			run := func(n int) int {
				s, err := c.Subscribe(ctx, &Filter{Count: uint32(n), Size: 64})
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				var buf []byte
				for {
					if arm == "typed" {
						v, err := s.Recv()
						if err == io.EOF {
							return got
						}
						if err != nil {
							b.Fatal(err)
						}
						benchSink += uint64(v.Index()) + uint64(len(v.Data()))
						got++
						continue
					}
					m, err := s.Stream().Recv(buf[:0])
					if err == io.EOF {
						return got
					}
					if err != nil {
						b.Fatal(err)
					}
					buf = m
					got++
				}
			}
			run(1000)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if n := run(b.N); n != b.N {
				b.Fatalf("%d messages, want %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
