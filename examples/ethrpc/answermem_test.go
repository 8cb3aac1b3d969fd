package main

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// hostileCalls is how many getLogs calls each hostile peer pipelines. The
// review's peer sent 256 (the default in-flight limit); 16 of the largest
// range show the same thing at a sixteenth of the memory.
const hostileCalls = 16

// pipelineGetLogs opens a raw connection to addr and sends n getLogs
// calls, each of the largest range the demo allows, without reading a
// byte of their answers, and returns the connection, which closes with
// the test if not before.
func pipelineGetLogs(t *testing.T, addr string, n int) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	req := ethzap.LogFilter{FromBlock: demoBlock, ToBlock: demoBlock + maxLogBlocks - 1, ID: 1}
	var frames []byte
	for i := range n {
		env := wire.AppendRequest(nil, &wire.Request{Method: logsBase + ethzap.EthLogsGetLogsOrdinal, PromiseID: uint32(i + 1), Payload: req.AppendZAP(nil)})
		frames = binary.LittleEndian.AppendUint32(frames, uint32(len(env)+1))
		frames = append(append(frames, wire.KindRequest), env...)
	}
	if _, err := nc.Write(frames); err != nil {
		t.Fatal(err)
	}
	return nc
}

// liveHeap returns the live heap after two collections.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// waitFor polls cond until it holds; after a generous guard it fails the
// test with every goroutine's stack.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(guard) {
			buf := make([]byte, 1<<20)
			t.Fatalf("still waiting for %s after 60 s\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// The review's finding: a peer that pipelines getLogs calls of the
// largest range and never reads its answers made the server build every
// answer (the in-flight limit lets 256 handlers run) and hold each until
// it could be written, which is never: the heap grew by the answers'
// size times the calls, and a second such peer doubled it. Memory must
// follow the bytes a peer sent, not what its calls ask for: each peer
// costs the server at most its connection's answer budget (one answer of
// the largest range), however many calls it pipelines, and a
// well-behaved client on another connection is still answered meanwhile.
func TestGetLogsUnreadAnswersBounded(t *testing.T) {
	// gate holds every getLogs call of a peer at its start until all of
	// them have started, so that the handlers run at once, as the
	// review's 256 did, whichever goroutine runs each (the first one may
	// run on the read loop, which reads the others only once the
	// server's watchdog has taken the loop from it).
	type gate struct {
		calls int64
		open  chan struct{}
	}
	var (
		phase          atomic.Pointer[gate]
		started, built atomic.Int64 // getLogs calls started, answers built (encoded)
		// getLogs calls entered and returned, the gated and the others
		entered, returned atomic.Int64
	)
	count := func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		if method != logsBase+ethzap.EthLogsGetLogsOrdinal {
			return next(ctx, req, resp)
		}
		entered.Add(1)
		defer returned.Add(1)
		if g := phase.Load(); g != nil {
			if started.Add(1) == g.calls {
				close(g.open)
			}
			select {
			case <-g.open:
			case <-ctx.Done():
				return resp, ctx.Err()
			}
		}
		out, err := next(ctx, req, resp)
		if err == nil {
			built.Add(1)
		}
		return out, err
	}
	s, addr := serveDemoServer(t, rpc.WithInterceptors(count))

	// Warm the server up with one answer of the largest range read by a
	// well-behaved client, so that what is measured is the peers'.
	c, err := rpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := ethzap.NewEthLogsClient(c, rpc.At(logsBase))
	largest := ethzap.LogFilter{FromBlock: demoBlock, ToBlock: demoBlock + maxLogBlocks - 1, ID: 9}
	var logs ethzap.Logs
	if err := cli.GetLogs(context.Background(), &largest, &logs); err != nil {
		t.Fatal(err)
	}
	answerBytes := uint64(len(logs.AppendZAP(nil)))
	logs = ethzap.Logs{}
	built.Store(0)
	base := liveHeap()

	// peer pipelines a peer's calls and waits until each of them has
	// been built or waits for answer budget (which a peer that does not
	// read never frees): the server does nothing more for it.
	var peers []net.Conn
	peer := func(total int64) uint64 {
		phase.Store(&gate{calls: total, open: make(chan struct{})})
		peers = append(peers, pipelineGetLogs(t, addr, hostileCalls))
		waitFor(t, "the peer's calls to be built or wait for budget", func() bool {
			return started.Load() == total && built.Load()+s.Stats().AnswerWaits == total
		})
		return liveHeap() - base
	}
	one := peer(hostileCalls)
	two := peer(2 * hostileCalls)
	phase.Store(nil)
	st := s.Stats()
	t.Logf("largest answer %d B; heap growth: one peer %d B (%.1f answers), two peers %d B (%.1f answers); answers built %d, calls waiting for budget %d, budget reserved %d B",
		answerBytes, one, float64(one)/float64(answerBytes), two, float64(two)/float64(answerBytes), built.Load(), st.AnswerWaits, st.AnswerBytes)

	// A peer may hold its share: one answer of the largest range, being
	// written, plus its connection's queue (4 MiB) and slack.
	limit := func(peers uint64) uint64 { return peers * (answerBytes + 8<<20) }
	if one > limit(1) || two > limit(2) {
		t.Fatalf("heap grew by %d B for one peer that does not read (limit %d), %d B for two (limit %d): answers are built whatever the peer reads", one, limit(1), two, limit(2))
	}

	// The peers do not hold up a well-behaved client: its getLogs of the
	// largest range is answered whole meanwhile.
	if err := cli.GetLogs(context.Background(), &largest, &logs); err != nil {
		t.Fatal(err)
	}
	if len(logs.Items) != maxLogBlocks*logsPerBlock {
		t.Fatalf("getLogs beside the peers: %d logs, want %d", len(logs.Items), maxLogBlocks*logsPerBlock)
	}

	// The peers go, and with them their calls, before the next test: a
	// handler left building an answer would count in another test's
	// allocations (TestLogsHugeChunkSize's, under -race).
	for _, nc := range peers {
		nc.Close()
	}
	waitFor(t, "the peers' calls to end and give their budget back", func() bool {
		st := s.Stats()
		return returned.Load() == entered.Load() && st.AnswerBytes == 0 && st.AnswerWaits == 0
	})
}
