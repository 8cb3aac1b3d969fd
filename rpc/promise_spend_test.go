package rpc

import (
	"context"
	"testing"
)

// A copy of a promise whose Wait (or Release) found it unspent (owned)
// and was then held up, while another copy's Wait took the answer and
// the slot went to the client's next promise, must not claim that
// promise's call: its Wait would take the next call's answer (and hand
// back its own buffer, already back in the pool, a second time), its
// Release would put its buffer back a second time, and the next
// promise's Wait would wait on a slot whose signal was taken.
func TestPromiseSpendAfterSlotReused(t *testing.T) {
	cl, _ := pipelineServer(t, func() error { return nil })
	c := dial(t, cl.Addr().String())
	ctx := context.Background()
	p, err := c.Send(ctx, mLookup, []byte("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := p // a copy whose Wait has passed its owned check
	if !stale.owned() {
		t.Fatal("a new promise is not owned")
	}
	if out, err := p.Wait(ctx); err != nil || string(out) != "id:a" {
		t.Fatalf("Wait = %q, %v", out, err)
	}
	q, err := c.Send(ctx, mLookup, []byte("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.s != p.s {
		t.Fatal("the next promise did not reuse the slot") // the free stack is LIFO
	}
	if stale.spend() {
		t.Error("a copy of a promise waited for claimed the call of the promise that reused its slot")
	}
	if out, err := q.Wait(ctx); err != nil || string(out) != "id:b" {
		t.Fatalf("Wait of the next promise = %q, %v", out, err)
	}
}
