package rpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Benchmark stream methods: sBench sends init's u32 count of messages of
// init's u32 size; sBig sends init's u32 total bytes in chunks of init's
// second u32 (a zero chunk: one message).
const (
	sBench = 20
	sBig   = 21
	mBig   = 22 // unary: answers init's u32 bytes whole
)

func benchStreamServer(b *testing.B, opts ...ServerOption) string {
	b.Helper()
	s, addr, _ := testServer(b, opts...)
	s.HandleStream(sBench, func(ctx context.Context, init []byte, st *Stream) error {
		n, size := binary.LittleEndian.Uint32(init), binary.LittleEndian.Uint32(init[4:])
		msg := make([]byte, size)
		for range n {
			if err := st.Send(msg); err != nil {
				return err
			}
		}
		return nil
	})
	s.HandleStream(sBig, func(ctx context.Context, init []byte, st *Stream) error {
		total, chunk := int(binary.LittleEndian.Uint32(init)), int(binary.LittleEndian.Uint32(init[4:]))
		data := bigResult(total)
		for len(data) > 0 {
			n := min(chunk, len(data))
			if err := st.Send(data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
		return nil
	})
	s.Handle(mBig, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, bigResult(int(binary.LittleEndian.Uint32(req)))...), nil
	})
	return addr
}

// bigResult stands for a result the server has at hand (a cached answer):
// both arms send the same bytes.
var bigData = make([]byte, 16<<20)

func bigResult(n int) []byte { return bigData[:n] }

func streamInit(a, b uint32) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, a), b)
}

// BenchmarkStreamServerMessages: a server stream of b.N messages of 64 B
// and 4 KiB over loopback TCP, read by one client goroutine with Recv
// into a reused buffer; msgs/s. Beside it, BenchmarkStreamFloor.
func BenchmarkStreamServerMessages(b *testing.B) {
	benchStreamServerMessages(b, nil, nil)
}

// BenchmarkStreamServerMessagesObserved is BenchmarkStreamServerMessages
// with a stream observer on both sides and a tap on both ends of the
// stream that counts its messages (atomically): what observing and
// intercepting streams cost per message.
func BenchmarkStreamServerMessagesObserved(b *testing.B) {
	var n atomic.Int64
	count := func([]byte) error { n.Add(1); return nil }
	tap := StreamTap{Send: count, Recv: count}
	obs := func(StreamEvent) {}
	benchStreamServerMessages(b,
		[]ServerOption{WithStreamObserver(obs), WithStreamInterceptors(func(ctx context.Context, m uint32, init []byte, s *Stream, next StreamHandler) error {
			s.Tap(tap)
			return next(ctx, init, s)
		})},
		[]ClientOption{WithStreamObserver(obs), WithStreamClientInterceptors(func(ctx context.Context, m uint32, init []byte, open Streamer) (*Stream, error) {
			st, err := open(ctx, m, init)
			if err == nil {
				st.Tap(tap)
			}
			return st, err
		})})
}

func benchStreamServerMessages(b *testing.B, sopts []ServerOption, copts []ClientOption) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			addr := benchStreamServer(b, sopts...)
			c := dial(b, addr, copts...)
			// Warm: the hello, buffers.
			st, err := c.OpenStream(context.Background(), sBench, streamInit(1000, uint32(size)))
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, 64<<10)
			for {
				if _, err := st.Recv(buf[:0]); err != nil {
					break
				}
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			st, err = c.OpenStream(context.Background(), sBench, streamInit(uint32(b.N), uint32(size)))
			if err != nil {
				b.Fatal(err)
			}
			n := recvToEnd(b, st, buf)
			el := time.Since(start)
			if n != b.N {
				b.Fatalf("%d messages, want %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkStreamFloor is the same work written by hand on a raw
// loopback TCP connection: the sender writes each message as a kind 4
// frame, the receiver reads frames with a frame.Reader and copies each
// message into a reused buffer. flush=each writes every frame with its
// own write (as Send does when the socket is idle: no message waits for
// a later one); flush=batched lets frame.Writer coalesce 64 KiB (no flow
// control, no per-message write: the upper bound).
func BenchmarkStreamFloor(b *testing.B) {
	for _, size := range benchSizes {
		for _, mode := range []string{"each", "batched"} {
			b.Run(fmt.Sprintf("size=%d/flush=%s", size, mode), func(b *testing.B) {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				go func() {
					nc, err := l.Accept()
					if err != nil {
						return
					}
					defer nc.Close()
					var cmd [4]byte
					if _, err := io.ReadFull(nc, cmd[:]); err != nil {
						return
					}
					n := binary.LittleEndian.Uint32(cmd[:])
					w := frame.NewWriter(nc)
					body := make([]byte, 4+size)
					for range n {
						if err := w.WriteFrame(wire.KindStreamMsg, body); err != nil {
							return
						}
						if mode == "each" {
							w.Flush()
						}
					}
					w.Flush()
				}()
				nc, err := net.Dial("tcp", l.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				r := frame.NewReader(nc)
				buf := make([]byte, 0, 64<<10)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				nc.Write(binary.LittleEndian.AppendUint32(nil, uint32(b.N)))
				for range b.N {
					_, p, err := r.Next()
					if err != nil {
						b.Fatal(err)
					}
					buf = append(buf[:0], p[4:]...)
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkTimeToFirst: a 10 MiB result, returned whole by a unary call
// or streamed in chunks of 64 KiB: the time until the caller holds the
// first byte of it (ttfm-µs: for the call, when Call returns) and until
// it holds all of it (total-µs).
func BenchmarkTimeToFirst(b *testing.B) {
	const total = 10 << 20
	for _, arm := range []string{"unary", "stream-64KiB", "stream-1MiB"} {
		b.Run(arm, func(b *testing.B) {
			addr := benchStreamServer(b)
			c := dial(b, addr, WithStreamWindow(1<<20))
			ctx := context.Background()
			resp := make([]byte, 0, total+1024)
			buf := make([]byte, 0, 1<<20+1024)
			chunk := uint32(64 << 10)
			if arm == "stream-1MiB" {
				chunk = 1 << 20
			}
			one := func() (first, all time.Duration) {
				start := time.Now()
				if arm == "unary" {
					out, err := c.Call(ctx, mBig, binary.LittleEndian.AppendUint32(nil, total), resp[:0])
					if err != nil || len(out) != total {
						b.Fatal(len(out), err)
					}
					d := time.Since(start)
					return d, d
				}
				st, err := c.OpenStream(ctx, sBig, streamInit(total, chunk))
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					m, err := st.Recv(buf[:0])
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if got == 0 {
						first = time.Since(start)
					}
					got += len(m)
				}
				if got != total {
					b.Fatalf("%d bytes, want %d", got, total)
				}
				return first, time.Since(start)
			}
			one()
			b.ReportAllocs()
			b.SetBytes(total)
			b.ResetTimer()
			var firsts, alls []time.Duration
			for range b.N {
				f, a := one()
				firsts, alls = append(firsts, f), append(alls, a)
			}
			b.ReportMetric(float64(median(firsts).Microseconds()), "ttfm-µs")
			b.ReportMetric(float64(median(alls).Microseconds()), "total-µs")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// BenchmarkStreamOpen: the life of a short stream over loopback TCP, one
// after another: open it, receive its one 64-byte message and its end
// (io.EOF). trailer=1: its handler sets a trailer of one pair, which the
// caller asks for (WithResponseMetadata); trailer=0: neither. Its floor
// is a round trip by hand, BenchmarkFloor/size=64/callers=1; a stream
// costs more: its open, message and end are three frames, and its
// handler is handed to a worker goroutine.
func BenchmarkStreamOpen(b *testing.B) {
	const sOpen = sBig + 10
	for _, trailer := range []bool{false, true} {
		name := "trailer=0"
		if trailer {
			name = "trailer=1"
		}
		b.Run(name, func(b *testing.B) {
			s, addr, _ := testServer(b)
			msg := make([]byte, 64)
			s.HandleStream(sOpen, func(ctx context.Context, init []byte, st *Stream) error {
				if trailer {
					if err := SetResponseMetadata(ctx, "k", "v"); err != nil {
						return err
					}
				}
				return st.Send(msg)
			})
			c := dial(b, addr)
			ctx := context.Background()
			var md Metadata
			if trailer {
				ctx = WithResponseMetadata(ctx, &md)
			}
			buf := make([]byte, 0, 128)
			open := func() {
				st, err := c.OpenStream(ctx, sOpen, nil)
				if err != nil {
					b.Fatal(err)
				}
				n := recvToEnd(b, st, buf)
				if n != 1 || trailer && md.Len() != 1 {
					b.Fatalf("%d messages, trailer of %d pairs", n, md.Len())
				}
			}
			for range 100 { // warm: the hello, buffers
				open()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				open()
			}
		})
	}
}

// recvToEnd receives st's messages into buf until its clean end and
// returns how many came; any other end fails b.
func recvToEnd(b *testing.B, st *Stream, buf []byte) int {
	n := 0
	for {
		if _, err := st.Recv(buf[:0]); err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			return n
		}
		n++
	}
}
