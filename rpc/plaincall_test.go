package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Call's own ways of sending (Call queues the request itself for a ctx
// that never ends, the plain call, and for one that can end with nothing
// else in it: a deadline, or a cancel alone) write the bytes that the
// general way (send, as c.call takes it) writes for the same method,
// payload and ctx, promise id and the timeout's value aside (time passes
// between the two; both must carry one exactly when ctx has a deadline,
// within it); and take the answer as wait does. Random methods and
// payloads, both ways in turn on one connection, for each kind of ctx.
func TestFastCallsMatchGeneral(t *testing.T) {
	c, peer := pipeClient(t)
	timed, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cancelable, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	type result struct {
		out []byte
		err error
	}
	// call makes one call under ctx (general: by c.call), answers it at
	// peer with the request's payload reversed, and returns the request's
	// envelope with its promise id and timeout zeroed, and what the call
	// returned.
	call := func(general bool, ctx context.Context, method uint32, payload, resp []byte) ([]byte, result) {
		t.Helper()
		done := make(chan result, 1)
		go func() {
			var out []byte
			var err error
			if general {
				out, err = c.call(ctx, method, payload, resp)
			} else {
				out, err = c.Call(ctx, method, payload, resp)
			}
			done <- result{out, err}
		}()
		kind, env, ok := peer.recv()
		if !ok || kind != wire.KindRequest {
			t.Fatalf("got frame kind %d (ok %v), want a request", kind, ok)
		}
		r, err := wire.ParseRequest(env)
		if err != nil {
			t.Fatal(err)
		}
		_, hasDL := ctx.Deadline()
		if hasDL != (r.Timeout != 0) || r.Timeout > uint64(time.Hour/time.Microsecond) {
			t.Fatalf("ctx with a deadline %v: the request's timeout %d µs", hasDL, r.Timeout)
		}
		body := bytes.Clone(r.Payload)
		for i, j := 0, len(body)-1; i < j; i, j = i+1, j-1 {
			body[i], body[j] = body[j], body[i]
		}
		peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: body}))
		// The promise id: the u32 after the method, at the start of the
		// fixed section (docs/wire.md §6); the timeout: the u64 at 28 in
		// it (§8), when present.
		binary.LittleEndian.PutUint32(env[16+4:], 0)
		if hasDL {
			binary.LittleEndian.PutUint64(env[16+28:], 0)
		}
		return env, receive(t, "the call's result", done)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		seed uint64
	}{
		{"no deadline, no cancel (the plain call)", context.Background(), 5},
		{"a deadline", timed, 6},
		{"a cancel alone", cancelable, 7},
	} {
		rng := rand.New(rand.NewPCG(28, tc.seed))
		for i := range 200 {
			method := rng.Uint32()
			payload := make([]byte, rng.IntN(300))
			if i%50 == 0 {
				payload = make([]byte, 16<<10+rng.IntN(1000))
			}
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			resp := make([]byte, rng.IntN(4), 4+rng.IntN(600))
			for j := range resp {
				resp[j] = byte(rng.Uint32())
			}
			fastEnv, fast := call(false, tc.ctx, method, payload, bytes.Clone(resp))
			generalEnv, general := call(true, tc.ctx, method, payload, bytes.Clone(resp))
			if !bytes.Equal(fastEnv, generalEnv) {
				t.Fatalf("%s: method %d, payload %d bytes: Call's request\n%x\nthe general way's\n%x", tc.name, method, len(payload), fastEnv, generalEnv)
			}
			if fast.err != nil || general.err != nil || !bytes.Equal(fast.out, general.out) || !bytes.HasPrefix(fast.out, resp) || len(fast.out) != len(resp)+len(payload) {
				t.Fatalf("%s: method %d, payload %d bytes, resp %d bytes: Call returned %d bytes, %v; the general way %d bytes, %v",
					tc.name, method, len(payload), len(resp), len(fast.out), fast.err, len(general.out), general.err)
			}
		}
	}
	if n := c.Pending(); n != 0 {
		t.Fatalf("Pending %d after the calls, want 0", n)
	}
}
