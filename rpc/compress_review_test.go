package rpc

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

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
	var entered atomic.Int32
	release := make(chan struct{})
	s.Handle(74, func(_ context.Context, req, resp []byte) ([]byte, error) {
		entered.Add(1)
		<-release
		return append(resp, byte(len(req)>>16)), nil
	})
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
		if a := peer.recvResponse(); a.Status != StatusOK {
			t.Fatalf("answer %d %q", a.Status, a.Body)
		}
	}
	await(t, "the budget back", func() bool { return s.Stats().AnswerBytes == 0 })
}
