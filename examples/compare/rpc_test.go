package compare

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// poisoned is an answer with every bit of every field set: an arm's Call
// given it must overwrite each field, zeros included.
var poisoned = Response{
	Balance:   [32]byte(bytes.Repeat([]byte{0xff}, 32)),
	Nonce:     ^uint64(0),
	BlockHash: [32]byte(bytes.Repeat([]byte{0xff}, 32)),
	ID:        ^uint64(0),
}

// TestArmsSmoke runs every RPC arm for a moment: a handful of workers
// make calls, every answer is checked against the table (the floor's echo
// against what was sent) after a call given a poisoned answer, and a
// short load run must complete calls. No timing is asserted.
func TestArmsSmoke(t *testing.T) {
	f := NewFixture()
	for _, arm := range Arms() {
		t.Run(arm.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := arm.Start(f.Table)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c, err := s.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cl, err := c.NewCaller(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for i := range f.Requests {
				// A Call fills every field of the answer it is given,
				// whatever that held before (Load reuses one per worker).
				got := poisoned
				if err := cl.Call(ctx, &f.Requests[i], &got); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if !arm.Echo && got != f.Responses[i] {
					t.Fatalf("call %d: answer %+v, want %+v", i, got, f.Responses[i])
				}
			}
			if !arm.Echo {
				bad := f.Requests[0]
				bad.Method = "eth_call"
				var got Response
				if err := cl.Call(ctx, &bad, &got); err == nil {
					t.Errorf("method %q answered: %+v", bad.Method, got)
				}
				// The connection still serves after the refused call.
				if err := cl.Call(ctx, &f.Requests[1], &got); err != nil || got != f.Responses[1] {
					t.Fatalf("after a refused call: %v %+v", err, got)
				}
			}
			r, err := Load(ctx, c, f, arm.Echo, LoadOptions{Workers: 4, Duration: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if r.Calls == 0 {
				t.Fatal("no calls completed")
			}
		})
	}
}
