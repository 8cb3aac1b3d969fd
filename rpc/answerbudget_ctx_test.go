package rpc

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A call waiting for answer budget whose ctx ends just after bytes are
// handed to it, before it runs again (its connection closed, and with it
// the answer that held the bytes), must not keep them: it would build an
// answer nobody will read, holding them from the calls behind it. With
// one P, the test's goroutine hands the bytes over and ends the ctx
// before the waiting one runs again.
func TestAnswerBudgetGrantAfterCtxEnd(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var waits atomic.Int64
	b := &answerBudget{limit: 10}
	for i := range 200 {
		if err := b.acquire(context.Background(), 10, false, &waits); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- b.acquire(ctx, 10, false, &waits) }()
		guard := time.Now().Add(30 * time.Second)
		for waits.Load() != 1 {
			if time.Now().After(guard) {
				t.Fatal("gave up after 30 s waiting for the call to wait")
			}
			runtime.Gosched()
		}
		b.release(10)
		cancel()
		if err := <-errc; err == nil {
			t.Fatalf("round %d: a call whose ctx ended as the budget was handed to it got it", i)
		}
		if got := b.reserved(); got != 0 {
			t.Fatalf("round %d: %d bytes reserved after the canceled call left, want 0", i, got)
		}
	}
}
