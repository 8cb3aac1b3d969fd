package rpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// When the watchdog takes a connection's read loop from a stuck handler
// during Shutdown, and that handler returns at once, the connection must
// not count as drained before the new reader has written the answers the
// read loop holds (inline answers of the same read batch). The watchdog
// used to add the stuck call's unit of in-flight only after the take-over,
// so the handler's end could bring the count to zero in between: Shutdown
// closed the connection and the earlier call's answer was lost (seen as
// "connection closed: EOF" at the client, about once in 150 rolling
// restarts under -race).
func TestShutdownTakeoverKeepsHeldAnswers(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	s := NewServer(WithLogger(discardLogger()), WithShutdownGrace(time.Nanosecond))
	s.Handle(mEcho, echo)
	s.Handle(mSlow, func(_ context.Context, _, resp []byte) ([]byte, error) {
		close(started)
		<-release
		return append(resp, "slow"...), nil
	})
	s.takeoverHook = func(c *serverConn) {
		await(t, "the go-away", c.goAwaySent.Load)
		before := c.inflight.Load()
		close(release)
		await(t, "the released handler to end", func() bool { return c.inflight.Load() != before })
		if c.drained(monoNow() + int64(time.Hour)) {
			t.Error("the connection counts as drained while its read loop moves to a worker with an answer still held")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	defer func() {
		s.Close()
		<-served
	}()

	rc := rawDial(t, l.Addr().String())
	// One write, so the server reads both requests in one batch: the echo
	// runs inline and its answer waits in the read loop's buffer while
	// the slow call runs.
	batch := frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("a")}))
	batch = append(batch, frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 2}))...)
	if _, err := rc.Write(batch); err != nil {
		t.Fatal(err)
	}
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()

	rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := map[uint32]string{}
	for {
		kind, env, ok := rc.recv()
		if !ok {
			break
		}
		if kind != wire.KindResponse {
			continue // the go-away
		}
		resp, err := wire.ParseResponse(env)
		if err != nil {
			t.Fatal(err)
		}
		got[resp.PromiseID] = string(resp.Body)
	}
	if got[1] != "a" || got[2] != "slow" {
		t.Errorf("answers before the close: %v, want 1:a and 2:slow", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
