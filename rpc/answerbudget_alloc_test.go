//go:build !race

package rpc

import (
	"context"
	"testing"
)

// A warm call whose handler reserves its answer (and gets it at once)
// allocates nothing, on either side: the reservation is two counters
// under two locks, given back as the answer leaves.
func TestAllocsReserveAnswer(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mReserve, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := ReserveAnswer(ctx, 4096); err != nil {
			return resp, err
		}
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	req := []byte("0123456789abcdef")
	resp := make([]byte, 0, 64)
	call := func() {
		if out, err := c.Call(context.Background(), mReserve, req, resp[:0]); err != nil || len(out) != len(req) {
			t.Fatalf("call: %q %v", out, err)
		}
	}
	for range 100 {
		call()
	}
	if n := testing.AllocsPerRun(2000, call); n != 0 {
		t.Errorf("call whose handler reserves its answer: %v allocs, want 0", n)
	}
	if st := s.Stats(); st.AnswerBytes != 0 {
		t.Fatalf("%d bytes still reserved after the calls", st.AnswerBytes)
	}
}
