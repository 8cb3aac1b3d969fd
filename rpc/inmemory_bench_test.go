package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// memConnStubs gives the in-memory connections below the rest of
// net.Conn: loopback addresses, and deadlines that are ignored (a
// benchmark's client and server close them when they are done, which
// ends a read that waits).
type memConnStubs struct{}

func (memConnStubs) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (memConnStubs) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (memConnStubs) SetDeadline(t time.Time) error      { return nil }
func (memConnStubs) SetReadDeadline(t time.Time) error  { return nil }
func (memConnStubs) SetWriteDeadline(t time.Time) error { return nil }

// replayConn is a net.Conn that plays a client which keeps a batch of
// requests in flight: its reads return one batch of request frames at a
// time, over and over, until it has served n requests, then io.EOF. What
// is written to it is counted and dropped. It measures a server's own work
// per request, without a socket.
type replayConn struct {
	memConnStubs
	batch   []byte // whole frames, the same request each
	left    int    // bytes still to serve
	off     int    // in batch
	written atomic.Int64
	closed  chan struct{}
	once    sync.Once
}

// newReplayConn serves n copies of the request frame f, perBatch frames
// per read.
func newReplayConn(f []byte, perBatch, n int) *replayConn {
	return &replayConn{
		batch:  bytes.Repeat(f, perBatch),
		left:   n * len(f),
		closed: make(chan struct{}),
	}
}

func (r *replayConn) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if r.off == len(r.batch) {
		r.off = 0
	}
	n := copy(p, r.batch[r.off:min(len(r.batch), r.off+r.left)])
	r.off += n
	r.left -= n
	return n, nil
}

func (r *replayConn) Write(p []byte) (int, error) {
	r.written.Add(int64(len(p)))
	return len(p), nil
}

func (r *replayConn) Close() error {
	r.once.Do(func() { close(r.closed) })
	return nil
}

// oneConnListener accepts c once, then waits for Close.
type oneConnListener struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{c: make(chan net.Conn, 1), done: make(chan struct{})}
	l.c <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// serverBenchBatch is the requests a read returns in the in-memory server
// benchmarks: about the batches a server reads from 256 callers on one
// loopback connection (117–141 answers per write, rpc/PERF-HISTORY.md).
const serverBenchBatch = 128

// echoRequestFrame is the frame of an echo call of a size-byte payload.
func echoRequestFrame(size int) []byte {
	env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 7, Payload: make([]byte, size)})
	return frameBytes(wire.KindRequest, env)
}

// echoAnswerLen is the length of the answer frame to echoRequestFrame.
func echoAnswerLen(size int) int64 { return int64(5 + wire.ResponseOverhead + size) }

// BenchmarkServerInMemory is the server's own work per request: 64-byte
// echo calls read in batches of serverBenchBatch from an in-memory
// connection, run inline by the read loop and answered, one write per
// batch. No socket, no client: what is left is parsing, dispatch, the
// handler, the answer and the bookkeeping around them.
func BenchmarkServerInMemory(b *testing.B) {
	const size = 64
	rc := newReplayConn(echoRequestFrame(size), serverBenchBatch, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	testServerOn(b, newOneConnListener(rc))
	<-rc.closed // the server closes it once every request read was answered
	b.StopTimer()
	if got, want := rc.written.Load(), int64(b.N)*echoAnswerLen(size); got != want {
		b.Fatalf("answered %d bytes, want %d", got, want)
	}
}

// BenchmarkServerInMemoryFloor is the floor of BenchmarkServerInMemory:
// the same requests from the same in-memory connection, read, checked and
// answered by hand in the same bytes (the envelope floor's server, see
// BenchmarkFloorMuxEnv), flushed when the read buffer is empty.
func BenchmarkServerInMemoryFloor(b *testing.B) {
	const size = 64
	rc := newReplayConn(echoRequestFrame(size), serverBenchBatch, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	rawServe(rc, envAnswer())
	b.StopTimer()
	if got, want := rc.written.Load(), int64(b.N)*echoAnswerLen(size); got != want {
		b.Fatalf("answered %d bytes, want %d", got, want)
	}
}

// echoPeer is a net.Conn whose peer is an envelope echo server that
// answers at once, in memory: each request frame written to it is checked
// and answered by envAnswer (the envelope floor's server) into a buffer
// that reads return. An envelope envAnswer refuses closes it. It measures
// a client's own work per call, without a socket.
type echoPeer struct {
	memConnStubs
	mu                    sync.Mutex
	ready                 sync.Cond // pending has bytes, or the conn closed
	in                    []byte    // written bytes short of a whole frame
	answer                func(*bufio.Writer, []byte, []byte) bool
	bw                    *bufio.Writer // into pending
	pending               []byte
	off                   int
	closed                bool
	writes, frames, reads int
}

func newEchoPeer() *echoPeer {
	p := &echoPeer{pending: make([]byte, 0, 64<<10), answer: envAnswer()}
	p.ready.L = &p.mu
	p.bw = bufio.NewWriterSize(pendingWriter{p}, 64<<10)
	return p
}

// pendingWriter appends to its peer's pending bytes (mu held).
type pendingWriter struct{ p *echoPeer }

func (w pendingWriter) Write(b []byte) (int, error) {
	w.p.pending = append(w.p.pending, b...)
	return len(b), nil
}

func (p *echoPeer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, net.ErrClosed
	}
	p.writes++
	p.in = append(p.in, b...)
	rest := p.in
	for len(rest) >= 5 {
		n := int(binary.LittleEndian.Uint32(rest)) - 1
		if n < 0 || len(rest) < 5+n {
			break // the rest of the frame comes with a later write
		}
		hdr, body := rest[:5], rest[5:5+n]
		rest = rest[5+n:]
		if hdr[4] != wire.KindRequest {
			continue // pings and the like: a floor peer does not answer them
		}
		p.frames++
		if !p.answer(p.bw, hdr, body) {
			p.closed = true
			break
		}
	}
	p.bw.Flush()
	p.in = append(p.in[:0], rest...)
	p.ready.Signal()
	return len(b), nil
}

// perCall reports the calls answered per write and per read so far.
func (p *echoPeer) perCall(b *testing.B) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.ReportMetric(float64(p.frames)/float64(p.writes), "calls/write")
	b.ReportMetric(float64(p.frames)/float64(p.reads), "calls/read")
}

func (p *echoPeer) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.off == len(p.pending) && !p.closed {
		p.ready.Wait()
	}
	if p.closed {
		return 0, net.ErrClosed
	}
	p.reads++
	n := copy(b, p.pending[p.off:])
	p.off += n
	if p.off == len(p.pending) {
		p.pending, p.off = p.pending[:0], 0
	}
	return n, nil
}

func (p *echoPeer) Close() error {
	p.mu.Lock()
	p.closed = true
	p.ready.Broadcast()
	p.mu.Unlock()
	return nil
}

// BenchmarkClientInMemory is the client's own work per call: 64-byte echo
// calls from 256 callers on one Client whose peer answers at once in
// memory (echoPeer). No socket, no server.
func BenchmarkClientInMemory(b *testing.B) {
	p := newEchoPeer()
	c := NewClient(p)
	defer c.Close()
	benchCalls(b, c, 64, 256)
	p.perCall(b)
}

// BenchmarkClientInMemoryFloor is the floor of BenchmarkClientInMemory:
// the hand-written client of BenchmarkFloorMuxEnv (a channel per caller,
// the promise id is the caller's index) on the same in-memory peer.
func BenchmarkClientInMemoryFloor(b *testing.B) {
	p := newEchoPeer()
	benchMuxConn(b, p, 64+wire.RequestOverhead, 256, true)
	p.perCall(b)
}

// BenchmarkClientInMemoryCtx is BenchmarkClientInMemory with the kind of
// ctx a handler of net/http or gRPC passes on to its calls: cancelable,
// with values on top of the cancel (here a cancel, two values, a cancel
// and three values, none of them this package's). Its distance to
// BenchmarkClientInMemory is what the call's looks at its ctx cost.
func BenchmarkClientInMemoryCtx(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type key int
	ctx = context.WithValue(context.WithValue(ctx, key(1), 1), key(2), 2)
	ctx, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	for i := range 3 {
		ctx = context.WithValue(ctx, key(3+i), i)
	}
	p := newEchoPeer()
	c := NewClient(p)
	defer c.Close()
	// The peer is no socket resumableConn knows, but its writes never
	// block (nor fail): let the callers write as over a socket, as they
	// would over TCP, rather than start a goroutine per flush.
	c.out.resumable = true
	benchCallsCtx(b, c, ctx, mEcho, 64, 256)
	p.perCall(b)
}
