package rpc

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A peer that pipelines calls and never reads their answers: once the
// connection's queue of answers is full, the read loop stops handing
// calls to workers (and reading) until room frees. It used to read on up
// to the in-flight limit, each of 256 calls taking a worker that ran its
// handler and then waited with its request and answer held. Another
// connection's calls meanwhile run as usual.
func TestPipelinedNonReaderBackpressure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServerOn(t, smallSendBuffers{l}, WithPipelining(0))
	const mBig = 61
	var ran atomic.Int64
	answer := bytes.Repeat([]byte{5}, 60<<10) // queued, not written with writev
	s.Handle(mBig, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		return append(resp, answer...), nil
	})
	rc := rawDial(t, l.Addr().String())
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	limit := int64(s.opts.maxInFlight)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// One call at a time, each sent once the one before ran: calls
		// that come once the answers stopped leaving (a burst read
		// together is taken on whole, up to the in-flight limit).
		for i := uint32(1); ; i++ {
			env := wire.AppendRequest(nil, &wire.Request{Method: mBig, PromiseID: i})
			if _, err := rc.Write(frameBytes(wire.KindRequest, env)); err != nil {
				return
			}
			for ran.Load() < int64(i) {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}
	}()
	sc := serverConnOf(t, s)
	await(t, "the read loop to wait for room, or the in-flight limit", func() bool {
		return sc.roomWaits.Load() > 0 || ran.Load() >= limit
	})
	// Another connection is served meanwhile.
	c := dial(t, l.Addr().String())
	if got, err := c.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(got) != "hi" {
		t.Fatalf("a call on another connection: %q, %v", got, err)
	}
	if sc.roomWaits.Load() == 0 {
		t.Fatalf("the read loop read on up to the in-flight limit (%d handlers ran) with the queue of answers full", ran.Load())
	}
	if n := ran.Load(); n >= limit/2 {
		t.Errorf("%d handlers ran for a peer that reads nothing, want far fewer than the in-flight limit %d", n, limit)
	}
	t.Logf("%d handlers ran, %d calls in flight", ran.Load(), sc.inflight.Load())
}
