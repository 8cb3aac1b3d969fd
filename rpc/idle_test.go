package rpc

import (
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A peer that keeps sending, but whose writes end inside a frame (the next
// frame's first bytes arrive with the end of the previous one), is not
// idle: the idle timeout must count from the moment the server starts
// waiting, not from the last time its read buffer happened to be empty.
func TestIdleTimeoutStraddlingFrames(t *testing.T) {
	const idle = 500 * time.Millisecond
	s, addr, logs := testServer(t, WithIdleTimeout(idle))
	rc := rawDial(t, addr)

	const n = 40 // n × pause is well past the idle timeout
	const pause = 25 * time.Millisecond
	var stream []byte
	for i := uint32(1); i <= n; i++ {
		env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: i, Payload: []byte("straddle")})
		stream = append(stream, frameBytes(wire.KindRequest, env)...)
	}
	flen := len(stream) / n
	answers := make(chan uint32, n)
	go func() {
		defer close(answers)
		for {
			kind, env, ok := rc.recv()
			if !ok {
				return
			}
			if r, err := wire.ParseResponse(env); kind == wire.KindResponse && err == nil {
				answers <- r.PromiseID
			}
		}
	}()
	// Each write carries the second half of one frame and the first half
	// of the next: the server never sees its buffer empty between frames.
	at := flen / 2
	if _, err := rc.Write(stream[:at]); err != nil {
		t.Fatal(err)
	}
	for at < len(stream) {
		time.Sleep(pause)
		end := min(at+flen, len(stream))
		if _, err := rc.Write(stream[at:end]); err != nil {
			t.Fatalf("write after %d bytes: %v; stats %+v; log: %s", at, err, s.Stats(), logs)
		}
		at = end
	}
	for i := 0; i < n; i++ {
		if _, ok := <-answers; !ok {
			t.Fatalf("connection closed after %d answers of %d; stats %+v; log: %s", i, n, s.Stats(), logs)
		}
	}
}
