package rpc

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// queueRequest queues a request's frame in one step only when the general
// way (beginCtx, end) would queue it without waiting: anything else is
// left to that way, with nothing queued.
func TestQueueRequest(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 100)
	r := wire.Request{Method: 3, PromiseID: 9, Payload: payload}
	frameLen := 1 + wire.RequestOverhead + len(payload)
	for _, tc := range []struct {
		name   string
		max    int   // the outbox's largest frame
		queued int   // bytes already queued (a writer holds the role)
		broken error // the stream's error
		stop   bool  // the client was told to go away
		wantOK bool
	}{
		{name: "room", max: 1 << 20, wantOK: true},
		{name: "frame of the largest length", max: frameLen, wantOK: true},
		{name: "behind queued frames", max: 1 << 20, queued: 1000, wantOK: true},
		{name: "frame too large", max: frameLen - 1},
		{name: "queue full", max: 2 * outboxLimit, queued: outboxLimit},
		{name: "stream broken", max: 1 << 20, broken: net.ErrClosed},
		{name: "go-away", max: 1 << 20, stop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			o := &outbox{}
			o.setup(a, 0, tc.max)
			var before []byte
			if tc.queued > 0 {
				o.mu.Lock()
				buf := o.start(wire.KindRequest)
				buf = append(buf, make([]byte, tc.queued-frameHeader)...)
				o.end(buf) // unlocks; o.claimed is set: the queue has its flusher
				o.mu.Lock()
				before = bytes.Clone(o.cur.B)
				o.mu.Unlock()
			}
			o.err = tc.broken
			var stop atomic.Bool
			stop.Store(tc.stop)

			lead, ok := o.queueRequest(&r, &stop)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !o.mu.TryLock() {
				t.Fatal("queueRequest returned with the outbox locked")
			}
			defer o.mu.Unlock()
			var got []byte
			if o.cur != nil {
				got = o.cur.B
			}
			want := before
			if tc.wantOK {
				want = append(bytes.Clone(before), 0, 0, 0, 0, wire.KindRequest)
				want[len(before)] = byte(frameLen)
				want[len(before)+1] = byte(frameLen >> 8)
				want = wire.AppendRequest(want, &r)
				if lead != (tc.queued == 0) {
					t.Errorf("lead = %v, want %v (the first frame's appender flushes)", lead, tc.queued == 0)
				}
			} else if lead {
				t.Error("lead with nothing queued")
			}
			if !bytes.Equal(got, want) {
				t.Errorf("queue holds %d bytes, want %d (%x…)", len(got), len(want), want[len(before):min(len(want), len(before)+16)])
			}
			if tc.broken != nil && !errors.Is(o.err, tc.broken) {
				t.Errorf("stream error changed to %v", o.err)
			}
		})
	}
}
