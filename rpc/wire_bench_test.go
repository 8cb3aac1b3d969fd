package rpc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchCallsCtx is benchCalls with the callers' ctx given.
func benchCallsCtx(b *testing.B, c Caller, ctx context.Context, method uint32, size, callers int) {
	req := make([]byte, size)
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		if _, err := c.Call(ctx, method, req, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(2 * size))
	b.ReportAllocs()
	b.ResetTimer()
	clk := startClock()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, 0, size+256)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				_, err := c.Call(ctx, method, req, resp[:0])
				lat[i] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	report(b, clk, lat)
}

// BenchmarkUnaryDeadline is BenchmarkUnary (64-byte echo) with a deadline
// on every call: the request carries it, the server computes the handler's
// deadline. handler=echo never looks at its ctx; handler=done arms the
// ctx's Done channel each call (timer Reset and Stop) and reads Err.
//
// ctx=cancel is the reference: a cancelable ctx without a deadline (the
// client then waits in a select on ctx.Done(), as it does with a
// deadline), so the difference is what the deadline itself costs.
//
// size=64/callers=256 is BenchmarkUnary's line with a deadline on every
// call, as real callers (gRPC's, examples/ethrpc) set one: each caller
// goroutine makes its own ctx with context.WithTimeout (an hour: under
// callgrind 10 s passed before a 300,000-call run ended) once,
// before its loop (the ctxs above are shared by all callers, which the
// client watches once for all, see ctxwatch.go; these are not shared and
// each call waits in a select on its own Done). Its floor is
// BenchmarkFloorMux's: a floor has no deadline to carry or watch.
// (internal/rounds/cgcount.sh TESTBINARY OUTDIR UnaryDeadline counts it.)
func BenchmarkUnaryDeadline(b *testing.B) {
	b.Run("size=64/callers=256", func(b *testing.B) {
		_, addr, _ := testServer(b)
		c := dial(b, addr)
		benchCallsTimeout(b, c, 64, 256, time.Hour)
	})
	for _, h := range []string{"cancel", "echo", "done"} {
		for _, callers := range benchCallers {
			name := fmt.Sprintf("ctx=deadline/handler=%s/callers=%d", h, callers)
			if h == "cancel" {
				name = fmt.Sprintf("ctx=cancel/handler=echo/callers=%d", callers)
			}
			b.Run(name, func(b *testing.B) {
				s, addr, _ := testServer(b)
				s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
					if ctx.Done() == nil || ctx.Err() != nil {
						return resp, Errorf(StatusBadRequest, "bad ctx")
					}
					return append(resp, req...), nil
				})
				c := dial(b, addr)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				if h == "cancel" {
					ctx, cancel = context.WithCancel(context.Background())
				}
				defer cancel()
				m := uint32(mEcho)
				if h == "done" {
					m = 5
				}
				benchCallsCtx(b, c, ctx, m, 64, callers)
			})
		}
	}
}

// BenchmarkUnaryMetadata is BenchmarkUnary (64-byte echo) with a W3C
// traceparent in the metadata (and, for cap=yes, a 32-byte cap token),
// read by the handler.
func BenchmarkUnaryMetadata(b *testing.B) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, withCap := range []bool{false, true} {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("cap=%v/callers=%d", withCap, callers), func(b *testing.B) {
				s, addr, _ := testServer(b)
				s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
					if len(MetadataFrom(ctx).Get("traceparent")) != len(tp) {
						return resp, Errorf(StatusBadRequest, "no traceparent")
					}
					return append(resp, req...), nil
				})
				c := dial(b, addr)
				ctx := WithMetadata(context.Background(), "traceparent", tp)
				if withCap {
					ctx = WithCap(ctx, make([]byte, 32))
				}
				benchCallsCtx(b, c, ctx, 5, 64, callers)
			})
		}
	}
}

// BenchmarkPipelined: a pair of calls, the second on the first's answer,
// as one pipelined round trip (Send, Promise.Call, Promise.Wait) and as
// two sequential calls, against the same pipelining server, one caller.
func BenchmarkPipelined(b *testing.B) {
	for _, mode := range []string{"pipelined", "sequential"} {
		b.Run(mode, func(b *testing.B) {
			_, addr, _ := testServer(b, WithPipelining(0))
			c := dial(b, addr)
			ctx := context.Background()
			req := make([]byte, 64)
			a, r := make([]byte, 0, 128), make([]byte, 0, 128)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if mode == "pipelined" {
					p, err := c.Send(ctx, mEcho, req, a[:0])
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.Call(ctx, mEcho, r[:0]); err != nil {
						b.Fatal(err)
					}
					if _, err := p.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					continue
				}
				out, err := c.Call(ctx, mEcho, req, a[:0])
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Call(ctx, mEcho, out, r[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
