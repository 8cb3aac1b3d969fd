package rpc

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The server's announcement that it takes cancels sends the cancels of
// the calls their callers abandoned meanwhile, and only theirs: not the
// cancel of a call whose caller saw its ctx end and has not abandoned it
// yet (it noted the call's pid in cancelPid, the first step of
// abandonCanceled and settle). Such a cancel ended the handler's ctx
// while the call was still its caller's; a handler that answers when its
// ctx ends then answered it, and the caller, whose abandon found the
// answer delivered, returned that answer instead of its ctx's error (CI:
// internal/loadgen's TestSecondsExcludeGrace/server_stops_answering saw
// 21 calls answered and 1 abandoned, not 20 and 2, as the second caller
// was preempted between the two steps for the round trip of the
// question, the announcement, the cancel and the answer). The caller
// sends the cancel itself once it has abandoned the call: it looks at
// the client's cancel state after its abandon, and the read loop sets
// that state before its look at the slots, so one of the two sends it.
//
// The test stops the second caller between the two steps by doing the
// first one for it: the interleaving of the CI failure, deterministic.
func TestCancelAnnouncementSparesCallNotAbandoned(t *testing.T) {
	c, peer := pipeClient(t)
	type result struct {
		out []byte
		err error
	}
	start := func(ctx context.Context) (uint32, <-chan result) {
		done := make(chan result, 1)
		go func() {
			out, err := c.Call(ctx, mEcho, []byte("x"), nil)
			done <- result{out, err}
		}()
		return peer.recvRequest().PromiseID, done
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	pidA, doneA := start(ctxA)
	pidB, doneB := start(ctxB)

	// A's caller gives its call up: the first cancel on the connection
	// asks the question.
	cancelA()
	if r := receive(t, "call A's return", doneA); r.err != context.Canceled {
		t.Fatalf("call A: %q, %v; want context.Canceled", r.out, r.err)
	}
	peer.recvCancelQuestion()

	// B's ctx ended too, and its caller has taken the first step of its
	// abandon (abandonCanceled), not the second: the slot is waiting.
	s := (*c.table.Load())[pidB&0xFFFF-1]
	if st := s.st.Load(); st != uint64(pidB)<<32|slotWaiting {
		t.Fatalf("call B's slot: state %#x, want %#x (waiting)", st, uint64(pidB)<<32|slotWaiting)
	}
	s.cancelPid.Store(pidB)

	// The announcement, then a ping whose pong marks the end of what the
	// client sends for it: A's cancel, not B's.
	peer.send(wire.KindCancel, wire.AppendCancel(nil, 0))
	peer.send(wire.KindPing, []byte("mark"))
	var cancels []uint32
	for {
		kind, env, ok := peer.recv()
		if !ok {
			t.Fatal("connection closed, want the cancels and the pong")
		}
		if kind == wire.KindPong && string(env) == "mark" {
			break
		}
		pid, ok := wire.ParseCancel(env)
		if kind != wire.KindCancel || !ok {
			t.Fatalf("frame kind %d %x, want a cancel or the pong", kind, env)
		}
		cancels = append(cancels, pid)
	}
	if len(cancels) != 1 || cancels[0] != pidA {
		t.Fatalf("the client sent cancels %v at the announcement, want call A's alone (%d); call B (%d) is not abandoned", cancels, pidA, pidB)
	}

	// B's caller takes the second step: it abandons the call and, the
	// server having announced, sends the cancel itself.
	cancelB()
	if r := receive(t, "call B's return", doneB); r.err != context.Canceled {
		t.Fatalf("call B: %q, %v; want context.Canceled", r.out, r.err)
	}
	kind, env, ok := peer.recv()
	if pid, pok := wire.ParseCancel(env); !ok || kind != wire.KindCancel || !pok || pid != pidB {
		t.Fatalf("after B's abandon: frame kind %d %x (ok %v), want B's cancel (%d)", kind, env, ok, pidB)
	}
}
