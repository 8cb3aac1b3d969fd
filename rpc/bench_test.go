package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

var benchSizes = []int{64, 4096}
var benchCallers = []int{1, 16, 256}

// report adds calls/s and latency percentiles (µs) to b.
func report(b *testing.B, elapsed time.Duration, lat []time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkUnary: echo calls over loopback TCP on one connection, from
// 1, 16 and 256 concurrent callers.
func BenchmarkUnary(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				_, addr, _ := testServer(b)
				c := dial(b, addr)
				benchCalls(b, c, size, callers)
			})
		}
	}
}

func benchCalls(b *testing.B, c Caller, size, callers int) {
	req := make([]byte, size)
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	// Warm up: every caller's buffers and the server's jobs.
	for i := 0; i < callers; i++ {
		if _, err := c.Call(ctx, mEcho, req, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(2 * size))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, 0, size)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				out, err := c.Call(ctx, mEcho, req, resp[:0])
				lat[i] = time.Since(t0)
				if err != nil || len(out) != size {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	report(b, elapsed, lat)
}

// BenchmarkFloor is the floor of BenchmarkUnary: the same bytes (a 5-byte
// header and a payload each way) echoed over a loopback TCP connection by
// hand, with `callers` requests kept in flight and the same batching (the
// server flushes when its read buffer is empty, the client when its window
// is full), and no envelopes, dispatch, or multiplexing bookkeeping.
func BenchmarkFloor(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				benchFloor(b, size+wire.RequestOverhead, callers)
			})
		}
	}
}

// BenchmarkFloorMux is the floor with the same shape as BenchmarkUnary:
// `callers` goroutines, each waiting for its own answer, multiplexed by hand
// over one loopback connection to the raw echo server. A frame carries a
// 4-byte caller index; a read goroutine wakes the caller its answer names
// (a channel per caller, as rpc does); requests are coalesced like rpc's
// (the first writer of a batch yields once, then writes until nothing new
// was appended). There are no envelopes, dispatch, handler goroutines or
// slot bookkeeping: the difference to BenchmarkUnary is rpc's own cost.
func BenchmarkFloorMux(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				benchFloorMux(b, size+wire.RequestOverhead, callers)
			})
		}
	}
}

// muxConn is BenchmarkFloorMux's hand-written client.
type muxConn struct {
	nc       net.Conn
	mu       sync.Mutex
	cur, out []byte
	flushing bool
	err      atomic.Pointer[error]
	wake     []chan struct{}
}

func (m *muxConn) call(id int, frame []byte) error {
	m.mu.Lock()
	start := len(m.cur)
	m.cur = append(m.cur, frame...)
	binary.LittleEndian.PutUint32(m.cur[start+5:], uint32(id))
	lead := !m.flushing
	m.flushing = true
	m.mu.Unlock()
	if lead {
		runtime.Gosched()
		m.mu.Lock()
		for len(m.cur) > 0 {
			m.cur, m.out = m.out[:0], m.cur
			m.mu.Unlock()
			_, err := m.nc.Write(m.out)
			m.mu.Lock()
			if err != nil {
				m.err.Store(&err)
				break
			}
		}
		m.flushing = false
		m.mu.Unlock()
	}
	if p := m.err.Load(); p != nil {
		return *p
	}
	<-m.wake[id]
	return nil
}

func (m *muxConn) readLoop(b *testing.B, size int, stop <-chan struct{}) {
	br := bufio.NewReaderSize(m.nc, 64<<10)
	var hdr [5]byte
	body := make([]byte, size)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			select {
			case <-stop:
			default:
				b.Error(err)
			}
			return
		}
		if _, err := io.ReadFull(br, body); err != nil {
			b.Error(err)
			return
		}
		m.wake[binary.LittleEndian.Uint32(body)] <- struct{}{}
	}
}

func benchFloorMux(b *testing.B, size, callers int) {
	addr := rawEchoServer(b)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	m := &muxConn{nc: nc, cur: make([]byte, 0, 64<<10), out: make([]byte, 0, 64<<10)}
	for i := 0; i < callers; i++ {
		m.wake = append(m.wake, make(chan struct{}, 1))
	}
	stop := make(chan struct{})
	readDone := make(chan struct{})
	go func() { defer close(readDone); m.readLoop(b, size, stop) }()
	defer func() { close(stop); nc.Close(); <-readDone }()
	frame := make([]byte, 5+size)
	binary.LittleEndian.PutUint32(frame, uint32(size+1))
	frame[4] = wire.KindRequest
	lat := make([]time.Duration, b.N)
	for id := 0; id < callers; id++ { // warm up
		if err := m.call(id, frame); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(int64(2 * (size - wire.RequestOverhead)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for id := 0; id < callers; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				err := m.call(id, frame)
				lat[i] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	report(b, elapsed, lat)
}

func rawEchoServer(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReaderSize(nc, 64<<10)
				bw := bufio.NewWriterSize(nc, 64<<10)
				var hdr [5]byte
				body := make([]byte, 0, 64<<10)
				for {
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						return
					}
					n := int(binary.LittleEndian.Uint32(hdr[:])) - 1
					body = body[:n]
					if _, err := io.ReadFull(br, body); err != nil {
						return
					}
					bw.Write(hdr[:])
					bw.Write(body)
					if br.Buffered() == 0 {
						if bw.Flush() != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func benchFloor(b *testing.B, size, callers int) {
	addr := rawEchoServer(b)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	frame := make([]byte, 5+size)
	binary.LittleEndian.PutUint32(frame, uint32(size+1))
	frame[4] = wire.KindRequest
	lat := make([]time.Duration, b.N)
	starts := make([]time.Time, b.N)
	tokens := make(chan struct{}, callers)
	for i := 0; i < callers; i++ {
		tokens <- struct{}{}
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	bw := bufio.NewWriterSize(nc, 64<<10)
	b.SetBytes(int64(2 * (size - wire.RequestOverhead)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	done := make(chan struct{})
	go func() { // reader: answers come back in order
		defer close(done)
		var hdr [5]byte
		body := make([]byte, size)
		for i := 0; i < b.N; i++ {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				b.Error(err)
				return
			}
			if _, err := io.ReadFull(br, body); err != nil {
				b.Error(err)
				return
			}
			lat[i] = time.Since(starts[i])
			tokens <- struct{}{}
		}
	}()
	for i := 0; i < b.N; i++ {
		select {
		case <-tokens:
		default:
			bw.Flush()
			<-tokens
		}
		starts[i] = time.Now()
		bw.Write(frame)
	}
	bw.Flush()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	report(b, elapsed, lat)
}
