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

// benchClock is when a benchmark's timed loop started, by the wall clock
// and by the process's CPU time (see report).
type benchClock struct {
	start time.Time
	cpu   int64
}

func startClock() benchClock { return benchClock{time.Now(), cpuTime()} }

// report adds to b calls/s, latency percentiles (µs), and cpu-ns/call:
// the CPU time (user and system, both ends: client and server run in
// this process) spent per call since clk. On a shared machine whose
// cores are taken away at times, calls/s drops with them; CPU time per
// call does not, which makes it the steadier figure to compare.
func report(b *testing.B, clk benchClock, lat []time.Duration) {
	elapsed := time.Since(clk.start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	if cpu := cpuTime(); cpu != 0 {
		b.ReportMetric(float64(cpu-clk.cpu)/float64(b.N), "cpu-ns/call")
	}
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
	benchCallsTimeout(b, c, size, callers, 0)
}

// benchCallsTimeout is benchCalls whose callers each call with a ctx of
// their own with that timeout (made once per caller, before its loop,
// so that the ctx's allocation is not the calls'), when timeout is not
// 0.
func benchCallsTimeout(b *testing.B, c Caller, size, callers int, timeout time.Duration) {
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
	clk := startClock()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, 0, size)
			ctx := ctx
			if timeout != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
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
	b.StopTimer()
	report(b, clk, lat)
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

// BenchmarkFloorMuxEnv is BenchmarkFloorMux doing by hand, besides, the
// envelope work of BenchmarkUnary on both sides: the server checks each
// request envelope as ParseRequest does one laid out canonically, checks
// its method, and answers with a response envelope built in place; the
// client's read loop checks the answer envelope, takes the caller from
// its promise id and appends the body to the caller's buffer. What is
// left to BenchmarkUnary alone: slots (a call's promise id is its
// caller's index here), the handler table, jobs, the outbox's bounds,
// and the server's deadlines (the timers they keep pending cost every
// scheduling on their P a clock read; a healthy client keeps none, see
// beat.go). Not a pass line (the floor is BenchmarkFloorMux): it
// tells how much of the gap is the envelope.
func BenchmarkFloorMuxEnv(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				benchMux(b, size+wire.RequestOverhead, callers, true)
			})
		}
	}
}

// BenchmarkUnaryFloorServer is BenchmarkUnary's client (rpc's) against
// BenchmarkFloorMuxEnv's hand-written envelope server: its distance to
// BenchmarkFloorMuxEnv is the cost of rpc's client alone.
func BenchmarkUnaryFloorServer(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				c := dial(b, rawEnvServer(b))
				benchCalls(b, c, size, callers)
			})
		}
	}
}

// BenchmarkFloorClientUnary is BenchmarkFloorMuxEnv's hand-written client
// against BenchmarkUnary's server (rpc's): its distance to
// BenchmarkFloorMuxEnv is the cost of rpc's server alone.
func BenchmarkFloorClientUnary(b *testing.B) {
	for _, size := range benchSizes {
		for _, callers := range benchCallers {
			b.Run(fmt.Sprintf("size=%d/callers=%d", size, callers), func(b *testing.B) {
				_, addr, _ := testServer(b)
				benchMuxOn(b, addr, size+wire.RequestOverhead, callers, true)
			})
		}
	}
}

// rawEnvServer is rawEchoServer for envelopes: each request envelope is
// checked by hand and answered with its payload in a response envelope.
func rawEnvServer(b *testing.B) string {
	return rawServer(b, envAnswer)
}

// envAnswer returns rawEnvServer's answer function for one connection.
func envAnswer() func(*bufio.Writer, []byte, []byte) bool {
	var out []byte // the connection's: one answer's header
	return func(bw *bufio.Writer, hdr, body []byte) bool {
		n := len(body)
		if n < wire.RequestOverhead ||
			binary.LittleEndian.Uint64(body) != envHeader0 ||
			binary.LittleEndian.Uint64(body[8:]) != 16|uint64(n)<<32 ||
			binary.LittleEndian.Uint64(body[16+12:]) != 0 ||
			binary.LittleEndian.Uint64(body[16+20:]) != 8|uint64(n-wire.RequestOverhead)<<32 ||
			binary.LittleEndian.Uint32(body[16:]) != mEcho {
			return false
		}
		pid := binary.LittleEndian.Uint32(body[16+4:])
		payload := body[wire.RequestOverhead:]
		out = binary.LittleEndian.AppendUint32(out[:0], uint32(1+wire.ResponseOverhead+len(payload)))
		out = append(out, wire.KindResponse)
		out = wire.AppendResponseHeader(out, 200, pid, len(payload))
		bw.Write(out)
		bw.Write(payload)
		return true
	}
}

// muxConn is BenchmarkFloorMux's hand-written client (and, with env,
// BenchmarkFloorMuxEnv's).
type muxConn struct {
	nc       net.Conn
	mu       sync.Mutex
	cur, out []byte
	flushing bool
	err      atomic.Pointer[error]
	wake     []chan struct{}
	// env: frames are envelopes; the read loop takes the caller's index
	// from the answer's promise id and copies the body into resp[index].
	env  bool
	resp [][]byte
}

func (m *muxConn) call(id int, frame []byte) error {
	m.mu.Lock()
	start := len(m.cur)
	m.cur = append(m.cur, frame...)
	if m.env {
		// The promise id of the request envelope (frame is one).
		binary.LittleEndian.PutUint32(m.cur[start+5+16+4:], uint32(id))
	} else {
		binary.LittleEndian.PutUint32(m.cur[start+5:], uint32(id))
	}
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
				// A variable of its own: storing &err itself would move
				// err to the heap, an allocation per write.
				e := err
				m.err.Store(&e)
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
	buf := body
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			select {
			case <-stop:
			default:
				b.Error(err)
			}
			return
		}
		if m.env {
			n := int(binary.LittleEndian.Uint32(hdr[:])) - 1
			if n < wire.ResponseOverhead || n > cap(buf) {
				b.Error("floor: bad answer length")
				return
			}
			body = buf[:n]
		}
		if _, err := io.ReadFull(br, body); err != nil {
			b.Error(err)
			return
		}
		if !m.env {
			m.wake[binary.LittleEndian.Uint32(body)] <- struct{}{}
			continue
		}
		// The answer envelope by hand: the checks ParseResponse makes of
		// an answer laid out canonically, then the body appended to the
		// caller's buffer.
		if binary.LittleEndian.Uint64(body) != envHeader0 ||
			binary.LittleEndian.Uint64(body[8:]) != 16|uint64(len(body))<<32 ||
			binary.LittleEndian.Uint64(body[16+12:]) != 8|uint64(len(body)-wire.ResponseOverhead)<<32 {
			b.Error("floor: bad answer envelope")
			return
		}
		id := binary.LittleEndian.Uint32(body[16+4:])
		if id >= uint32(len(m.wake)) {
			b.Error("floor: bad promise id")
			return
		}
		m.resp[id] = append(m.resp[id][:0], body[wire.ResponseOverhead:]...)
		m.wake[id] <- struct{}{}
	}
}

// envHeader0 is the first 8 bytes of an envelope's header (magic,
// version 2, flags 0xC800) as a little-endian uint64.
const envHeader0 = uint64('Z') | uint64('A')<<8 | uint64('P')<<16 | 2<<32 | 0xC800<<48

func benchFloorMux(b *testing.B, size, callers int) {
	benchMux(b, size, callers, false)
}

// benchMux runs BenchmarkFloorMux (env false: size-byte frames, the raw
// echo server) or BenchmarkFloorMuxEnv (env true: request envelopes with
// a payload of size less the envelope's overhead, the envelope echo
// server).
func benchMux(b *testing.B, size, callers int, env bool) {
	var addr string
	if env {
		addr = rawEnvServer(b)
	} else {
		addr = rawEchoServer(b)
	}
	benchMuxOn(b, addr, size, callers, env)
}

// benchMuxOn runs the hand-written client of benchMux against the server
// at addr (with env, one that answers request envelopes).
func benchMuxOn(b *testing.B, addr string, size, callers int, env bool) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	benchMuxConn(b, nc, size, callers, env)
}

// benchMuxConn runs the hand-written client of benchMux on nc.
func benchMuxConn(b *testing.B, nc net.Conn, size, callers int, env bool) {
	m := &muxConn{nc: nc, cur: make([]byte, 0, 64<<10), out: make([]byte, 0, 64<<10), env: env}
	for i := 0; i < callers; i++ {
		m.wake = append(m.wake, make(chan struct{}, 1))
		m.resp = append(m.resp, make([]byte, 0, size))
	}
	stop := make(chan struct{})
	readDone := make(chan struct{})
	go func() { defer close(readDone); m.readLoop(b, size, stop) }()
	defer func() { close(stop); nc.Close(); <-readDone }()
	frame := make([]byte, 5+size)
	binary.LittleEndian.PutUint32(frame, uint32(size+1))
	frame[4] = wire.KindRequest
	if env {
		frame = wire.AppendRequest(frame[:5], &wire.Request{Method: mEcho, Payload: make([]byte, size-wire.RequestOverhead)})
	}
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
	clk := startClock()
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
	b.StopTimer()
	report(b, clk, lat)
}

func rawEchoServer(b *testing.B) string {
	return rawServer(b, echoFrames)
}

// echoFrames is rawEchoServer's answer function: each frame comes back as it
// came.
func echoFrames() func(*bufio.Writer, []byte, []byte) bool {
	return func(bw *bufio.Writer, hdr, body []byte) bool {
		bw.Write(hdr)
		bw.Write(body)
		return true
	}
}

// rawServer serves the floors' loopback connections by hand: it reads
// frames (a 5-byte header and a body of at most 64 KiB), lets the
// connection's answer function (from newAnswer) write the reply of each
// into bw, flushes bw when its read buffer is empty, and closes the
// connection when answer reports false. answer must not keep hdr or body.
func rawServer(b *testing.B, newAnswer func() func(bw *bufio.Writer, hdr, body []byte) bool) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go rawAccept(l, newAnswer)
	return l.Addr().String()
}

// rawAccept serves each connection l accepts with rawServe, until l is
// closed.
func rawAccept(l net.Listener, newAnswer func() func(bw *bufio.Writer, hdr, body []byte) bool) {
	for {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		go rawServe(nc, newAnswer())
	}
}

// rawServe is rawServer's loop for one connection: it reads frames, lets
// answer write the reply of each into a buffered writer, flushes that
// when its read buffer is empty, and closes nc when a read or write fails
// or answer reports false.
func rawServe(nc net.Conn, answer func(bw *bufio.Writer, hdr, body []byte) bool) {
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
		if n < 0 || n > cap(body) {
			return
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		if !answer(bw, hdr[:], body) {
			return
		}
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
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
	clk := startClock()
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
	b.StopTimer()
	report(b, clk, lat)
}
