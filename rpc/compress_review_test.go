package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// heapInUse returns the heap's live bytes after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A peer that pipelines small compressed requests which each inflate to
// nearly the largest frame, to a handler that holds its call: the
// requests the server inflated and holds for running calls take memory
// bounded by the connection's answer budget (plus the request being
// inflated), not the in-flight limit times the frame size, though the
// peer sent a few KiB. Once the handlers return, every call is answered.
func TestCompressionRequestBombsBounded(t *testing.T) {
	const (
		maxFrame = 1 << 20
		budget   = 2 << 20
		calls    = 32
	)
	s, addr := compressServer(t, WithFrameOptions(frame.WithMaxFrameSize(maxFrame)),
		WithAnswerBudget(budget, 4*budget), WithMaxInFlight(calls))
	entered, release := handleZerosHeld(s)
	bomb := deflateBytes(t, make([]byte, maxFrame-1-wire.RequestOverhead-64))
	peer := rawDial(t, addr)
	before := heapInUse()
	for i := range calls {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 74, PromiseID: uint32(i + 1), Payload: bomb, PayloadDeflated: true}))
	}
	// Every call runs (no bound), or the server stopped taking them.
	await(t, "the calls to run or to wait", func() bool {
		return entered.Load() == calls || (entered.Load() > 0 && s.Stats().AnswerWaits > 0)
	})
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d calls running, %d waiting; heap grew %d KiB for %d bytes sent", entered.Load(), s.Stats().AnswerWaits, grown>>10, calls*len(bomb))
	if limit := int64(budget + 3*maxFrame); grown > limit {
		t.Errorf("the heap grew %d KiB for %d compressed requests of %d bytes: want at most %d KiB (the budget and a few frames)",
			grown>>10, calls, len(bomb), limit>>10)
	}
	close(release)
	for range calls {
		if a := peer.recvResponse(); a.Status != StatusOK || atoi(a.Body) != maxFrame-1-wire.RequestOverhead-64 {
			t.Fatalf("answer %d %q", a.Status, a.Body)
		}
	}
	await(t, "the budget back", func() bool { return s.Stats().AnswerBytes == 0 })
}

// goroutinesIn counts the goroutines whose stack shows fn (a function's
// name as a stack shows it) and the text under.
func goroutinesIn(fn, under string) int {
	buf := make([]byte, 8<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, fn+"(") && strings.Contains(g, under) {
			n++
		}
	}
	return n
}

// Peers that ask for large compressed answers and never read them: each
// holds the write of its answer (a net.Pipe takes nothing until read),
// and with it the compressed bytes, but not a compressor (1.2 MiB each):
// those go back once the answer is compressed. The heap grows by about
// the answers held, and a peer that reads still gets its answer
// compressed.
func TestCompressionSlowReadersHoldNoCompressor(t *testing.T) {
	const (
		peers = 16
		size  = 1 << 20 // compresses to some 125 KiB: written, not queued
	)
	l := newPipeListener()
	s, _ := testServerOn(t, l, WithCompression(0))
	s.Handle(mLogs, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, logRecords(atoi(req))...), nil
	})
	ask := func(nc net.Conn) {
		env := wire.AppendRequest(nil, &wire.Request{Method: mLogs, PromiseID: 1, Payload: []byte(strconv.Itoa(size)), AcceptDeflate: true})
		if _, err := nc.Write(frameBytes(wire.KindRequest, env)); err != nil {
			t.Fatal(err)
		}
	}
	// A reading peer first, so that the compressors are made before
	// the heap is measured.
	reader := &rawConn{t, l.dial(t)}
	ask(reader)
	if a := reader.recvResponse(); !a.Deflated {
		t.Fatal("the first answer went plain")
	}
	before := heapInUse()
	for range peers {
		ask(l.dial(t))
	}
	await(t, "every answer's write to wait for its peer", func() bool {
		return goroutinesIn("net.(*pipe).write", "rpc.(*serverConn).") == peers
	})
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d peers not reading: the heap grew %d KiB", peers, grown>>10)
	if limit := int64(peers * (size + 3*size/4)); grown > limit {
		t.Errorf("%d peers that do not read their answers of %d KiB: the heap grew %d KiB, want at most %d KiB (the answers, not a compressor each)",
			peers, size>>10, grown>>10, limit>>10)
	}
	ask(reader)
	if a := reader.recvResponse(); a.Status != StatusOK || !a.Deflated {
		t.Errorf("beside peers that do not read: status %d, deflated %v; want a compressed answer", a.Status, a.Deflated)
	}
}

// Many compressions at once (goroutines preempted in the middle of
// one): at most maxCompressors compressors exist (1.2 MiB each); a
// compression that finds them all at work goes plain. Measured by the
// bytes allocated: with GOMAXPROCS 2 the bound is the 4 the pool keeps,
// so none is made twice.
func TestCompressorsBounded(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const goroutines = 64
	body := make([]byte, 16<<20) // compresses to some 16 KiB, slowly enough to be preempted
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	var wg sync.WaitGroup
	var compressed atomic.Int32
	start := make(chan struct{})
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d := getDeflater()
			if d.deflate(body) {
				compressed.Add(1)
			}
			putDeflater(d)
		}()
	}
	close(start)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	got := ms.TotalAlloc - before
	t.Logf("%d compressions at once (%d compressed): %d KiB allocated", goroutines, compressed.Load(), got>>10)
	if limit := uint64(4*1300<<10 + goroutines*64<<10 + 4<<20); got > limit {
		t.Errorf("%d compressions at once allocated %d KiB, want at most %d KiB (4 compressors and the outputs)", goroutines, got>>10, limit>>10)
	}
	if compressed.Load() == 0 {
		t.Error("nothing was compressed")
	}
}

// Many connections, each sending one small compressed request that
// inflates to nearly a frame, to a handler that holds its call: the
// bytes the server inflated for them are bounded by the server's
// answer budget (the requests past it wait, holding no inflated
// buffer), not the number of connections times the frame size.
func TestCompressionRequestBombsAcrossConnections(t *testing.T) {
	const (
		maxFrame = 1 << 20
		conns    = 24
		budget   = 4 << 20
	)
	s, addr := compressServer(t, WithFrameOptions(frame.WithMaxFrameSize(maxFrame)), WithAnswerBudget(maxFrame, budget))
	entered, release := handleZerosHeld(s)
	bomb := deflateBytes(t, make([]byte, maxFrame-1-wire.RequestOverhead-64))
	peers := make([]*rawConn, conns)
	for i := range peers {
		peers[i] = rawDial(t, addr)
	}
	before := heapInUse()
	for _, p := range peers {
		p.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 74, PromiseID: 1, Payload: bomb, PayloadDeflated: true}))
	}
	// Every call runs (no bound), or the calls the budget holds run and
	// the others wait.
	await(t, "the calls to run or to wait", func() bool {
		n := entered.Load()
		return n == conns || n > 0 && int64(n)+s.Stats().AnswerWaits == conns
	})
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d calls running, %d waiting; heap grew %d KiB for %d bytes sent", entered.Load(), s.Stats().AnswerWaits, grown>>10, conns*len(bomb))
	if limit := int64(budget + 2*maxFrame + conns*64<<10); grown > limit {
		t.Errorf("the heap grew %d KiB for %d connections' compressed requests of %d bytes: want at most %d KiB (the server's budget and a frame or two)",
			grown>>10, conns, len(bomb), limit>>10)
	}
	close(release)
	for _, p := range peers {
		if a := p.recvResponse(); a.Status != StatusOK || atoi(a.Body) != maxFrame-1-wire.RequestOverhead-64 {
			t.Fatalf("answer %d %q", a.Status, a.Body)
		}
	}
	await(t, "the budget back", func() bool { return s.Stats().AnswerBytes == 0 })
}

// With a connection's answer budget below the largest frame, a
// compressed request may grow by at most that budget when inflated
// (400 past it): else each connection's request took the frame while
// it held only the budget's worth of the server's, and connections
// times the frame size in all. One within the budget is served.
func TestCompressionRequestPastSmallBudget(t *testing.T) {
	const (
		maxFrame = 1 << 20
		perConn  = 64 << 10
		conns    = 12
	)
	s, addr := compressServer(t, WithFrameOptions(frame.WithMaxFrameSize(maxFrame)), WithAnswerBudget(perConn, 16*perConn))
	release := make(chan struct{})
	s.Handle(74, func(_ context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return strconv.AppendInt(resp, int64(len(req)), 10), nil
	})
	defer close(release)
	big := deflateBytes(t, make([]byte, maxFrame/2))
	peers := make([]*rawConn, conns)
	for i := range peers {
		peers[i] = rawDial(t, addr)
	}
	before := heapInUse()
	for _, p := range peers {
		p.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 74, PromiseID: 1, Payload: big, PayloadDeflated: true}))
	}
	var refused int
	for _, p := range peers {
		p.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard: a call that runs is never answered
		kind, env, ok := p.recv()
		if !ok {
			break
		}
		if a, err := wire.ParseResponse(env); kind == wire.KindResponse && err == nil && a.Status == StatusBadRequest && strings.Contains(string(a.Body), "inflates past") {
			refused++
		}
	}
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d of %d refused; heap grew %d KiB", refused, conns, grown>>10)
	if refused != conns || grown > 16*perConn+conns*64<<10 {
		t.Errorf("requests inflating to %d KiB with a %d KiB connection budget: %d of %d refused, heap grew %d KiB",
			maxFrame/2>>10, perConn>>10, refused, conns, grown>>10)
	}
	// Within the budget: served.
	p := rawDial(t, addr)
	p.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 2, Payload: deflateBytes(t, make([]byte, perConn/2)), PayloadDeflated: true}))
	if a := p.recvResponse(); a.Status != StatusOK || len(a.Body) != perConn/2 {
		t.Fatalf("a request within the budget: %d, %d bytes", a.Status, len(a.Body))
	}
}

// handleZerosHeld makes method 74 of s a handler that counts itself in
// entered, waits for release to close, checks that its request is all
// zeros (the bombs' bytes) and answers the request's length.
func handleZerosHeld(s *Server) (entered *atomic.Int32, release chan struct{}) {
	entered, release = new(atomic.Int32), make(chan struct{})
	s.Handle(74, func(_ context.Context, req, resp []byte) ([]byte, error) {
		entered.Add(1)
		<-release
		if bytes.Count(req, []byte{0}) != len(req) {
			return resp, errors.New("not the zeros sent")
		}
		return strconv.AppendInt(resp, int64(len(req)), 10), nil
	})
	return entered, release
}
