//go:build !race

package main

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
)

// TestHandlerAndCheckAllocateNothing: the demo's own per-call work (client:
// build the request, check the answer; server: the lookup) allocates
// nothing, so allocations in the table are the library's.
func TestHandlerAndCheckAllocateNothing(t *testing.T) {
	tb := newTable()
	srv := ethServer{tb}
	req := make([]byte, 0, 256)
	out := make([]byte, 0, 256)
	var resp ethzap.GetBalanceResponse
	i := uint64(0)
	n := testing.AllocsPerRun(1000, func() {
		req = tb.request(i, req[:0])
		q, err := ethzap.ReadGetBalanceRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.GetBalance(context.Background(), q, &resp); err != nil {
			t.Fatal(err)
		}
		out = resp.AppendZAP(out[:0])
		if err := tb.check(req, out); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}
