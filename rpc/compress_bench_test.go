package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
)

// BenchmarkCompressedAnswer: calls from one caller whose answer is 1 MiB
// of getLogs-like records (logRecords), over loopback TCP, without and
// with WithCompression on both sides; wire-B/call is what the client
// read per call (the answer's frame), cpu-ns/call the CPU time of
// both ends. floor is compress/flate by hand on the same bytes: a reused
// flate.Writer at BestSpeed and a reused reader, deflate then inflate,
// no connection.
func BenchmarkCompressedAnswer(b *testing.B) {
	body := logRecords(1 << 20)
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"plain", nil}, {"deflate", []Option{WithCompression(0)}}} {
		b.Run(tc.name, func(b *testing.B) {
			var sopts []ServerOption
			var copts []ClientOption
			for _, o := range tc.opts {
				sopts, copts = append(sopts, o), append(copts, o)
			}
			s, addr, _ := testServer(b, sopts...)
			s.Handle(mLogs, func(_ context.Context, req, resp []byte) ([]byte, error) {
				return append(resp, body...), nil
			})
			var rx rxCountDialer
			c := dial(b, addr, append(copts, WithDialer(&rx))...)
			resp := make([]byte, 0, len(body))
			ctx := context.Background()
			call := func() {
				out, err := c.Call(ctx, mLogs, nil, resp[:0])
				if err != nil || len(out) != len(body) {
					b.Fatalf("call: %d bytes, %v", len(out), err)
				}
			}
			call()
			b.ReportAllocs()
			b.ResetTimer()
			read := rx.n.Load()
			clk := startClock()
			for range b.N {
				call()
			}
			report(b, clk, nil)
			b.ReportMetric(float64(rx.n.Load()-read)/float64(b.N), "wire-B/call")
		})
	}
	b.Run("floor", func(b *testing.B) {
		var comp bytes.Buffer
		w, _ := flate.NewWriter(&comp, flate.BestSpeed)
		var src bytes.Reader
		zr := flate.NewReader(&src)
		out := make([]byte, len(body)+1)
		b.ReportAllocs()
		b.ResetTimer()
		clk := startClock()
		for range b.N {
			comp.Reset()
			w.Reset(&comp)
			w.Write(body)
			w.Close()
			src.Reset(comp.Bytes())
			zr.(flate.Resetter).Reset(&src, nil)
			if n, err := io.ReadFull(zr, out); n != len(body) || err != io.ErrUnexpectedEOF {
				b.Fatalf("%d bytes, %v", n, err)
			}
		}
		report(b, clk, nil)
		b.ReportMetric(float64(comp.Len()), "wire-B/call")
	})
}

// rxCountDialer dials TCP and counts the bytes read from its
// connections.
type rxCountDialer struct{ n atomic.Int64 }

func (d *rxCountDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &rxCountConn{nc, &d.n}, nil
}

type rxCountConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *rxCountConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}
