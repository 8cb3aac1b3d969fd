package rpc

import (
	"context"
	"strconv"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A cancel read during Shutdown's grace still ends the handler it names:
// the server keeps reading the connection after its go-away, so a caller
// that gives up on a draining server's call frees it before the grace
// ends; the call is answered 499 and Shutdown returns once the
// connection is drained.
func TestCancelDuringShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"workers", []ServerOption{WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, logs := testServer(t, tc.opts...)
			started, ended := make(chan struct{}, 1), make(chan error, 1)
			s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				started <- struct{}{}
				<-ctx.Done()
				ended <- ctx.Err()
				return resp, ctx.Err()
			})
			r := rawDial(t, addr)
			r.send(wire.KindRequest, cancelTestCall(mBlock, 7, nil))
			receive(t, "the handler's start", started)
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(context.Background()) }()
			if kind, env, ok := r.recv(); !ok || kind != wire.KindGoAway {
				t.Fatalf("got frame kind %d (%x) ok %v, want a go-away", kind, env, ok)
			}
			r.send(wire.KindCancel, wire.AppendCancel(nil, 7))
			if err := receive(t, "the handler's ctx's end after the cancel", ended); err != context.Canceled {
				t.Fatalf("the handler's ctx ended with %v, want context.Canceled", err)
			}
			if a := r.recvResponse(); a.Status != StatusCanceled || a.PromiseID != 7 {
				t.Fatalf("answer: status %d promise %d %q, want 499 for promise 7", a.Status, a.PromiseID, a.Body)
			}
			if err := receive(t, "Shutdown's return", shut); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if l := logs.String(); l != "" {
				t.Errorf("logged: %s", l)
			}
		})
	}
}

// A cancel naming a stream's id does not touch the stream: streams have
// their own cancel (a stream end from the peer), and a unary cancel
// matches only a running call's promise id. The stream's handler, given
// a message after the cancel was read, finds its ctx live.
func TestCancelNotForStreams(t *testing.T) {
	s, addr, logs := testServer(t)
	const sRecv = 142
	got := make(chan error, 1)
	s.HandleStream(sRecv, func(ctx context.Context, init []byte, st *Stream) error {
		if _, err := st.Recv(nil); err != nil {
			got <- err
			return err
		}
		got <- ctx.Err()
		return nil
	})
	s.Handle(mCheck, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, req...), ctx.Err()
	})
	r := rawDial(t, addr)
	r.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sRecv, PromiseID: 3}))
	r.send(wire.KindCancel, wire.AppendCancel(nil, 3))
	// Read in order after the cancel: once it is answered, the cancel was
	// handled.
	r.send(wire.KindRequest, cancelTestCall(mCheck, 3, []byte("u")))
	if a := r.recvResponse(); a.Status != StatusOK || a.PromiseID != 3 {
		t.Fatalf("the call after the cancel: status %d promise %d %q", a.Status, a.PromiseID, a.Body)
	}
	r.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 3, []byte("m")))
	if err := receive(t, "the stream handler's message", got); err != nil {
		t.Fatalf("the stream handler's ctx after a unary cancel of its id: %v, want live", err)
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged: %s", l)
	}
}

// A cancel of a call pipelined on a promise that is still running ends
// that call alone: the promise's call goes on and is answered 200, then
// the pipelined call is answered 499 (its handler returned its canceled
// ctx's error), nothing hangs, and the connection goes on. A cancel of
// the promise's own call then ends it, and the call pipelined on it is
// refused as on any failed promise.
func TestCancelPipelinedTarget(t *testing.T) {
	s, addr, logs := testServer(t, WithPipelining(0))
	started, release := make(chan struct{}, 1), make(chan struct{}, 1)
	s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return resp, ctx.Err()
	})
	s.Handle(mCheck, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, req...), ctx.Err()
	})
	r := rawDial(t, addr)
	answers := func(want map[uint32]uint32) {
		t.Helper()
		seen := map[uint32]uint32{}
		for range want {
			a := r.recvResponse()
			seen[a.PromiseID] = a.Status
		}
		for pid, st := range want {
			if seen[pid] != st {
				t.Errorf("answers %v, want %v", seen, want)
				return
			}
		}
	}
	// The pipelined call canceled, its promise not.
	r.send(wire.KindRequest, cancelTestCall(mBlock, 5, nil))
	receive(t, "the promise's handler start", started)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mCheck, PromiseID: 6, Target: 5}))
	r.send(wire.KindCancel, wire.AppendCancel(nil, 6))
	// Read in order after the cancel: once answered, the cancel was read.
	r.send(wire.KindRequest, cancelTestCall(mCheck, 7, nil))
	answers(map[uint32]uint32{7: StatusOK})
	release <- struct{}{}
	answers(map[uint32]uint32{5: StatusOK, 6: StatusCanceled})

	// The promise's call canceled.
	r.send(wire.KindRequest, cancelTestCall(mBlock, 5, nil))
	receive(t, "the promise's handler start", started)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mCheck, PromiseID: 6, Target: 5}))
	r.send(wire.KindCancel, wire.AppendCancel(nil, 5))
	answers(map[uint32]uint32{5: StatusCanceled, 6: StatusBadRequest})

	r.send(wire.KindRequest, cancelTestCall(mCheck, 9, []byte("b")))
	if a := r.recvResponse(); a.Status != StatusOK || a.PromiseID != 9 {
		t.Fatalf("the call after: status %d promise %d %q", a.Status, a.PromiseID, a.Body)
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged: %s", l)
	}
}

// BenchmarkCancelScan is the read loop's cost of a cancel frame that names
// no running call, on a connection that holds jobs jobs (as many as its
// in-flight limit allows), each running a call: a look at one bucket of
// the connection's index of its jobs by promise id (cancel.go; before
// the index, a scan of every job).
func BenchmarkCancelScan(b *testing.B) {
	for _, n := range []int{DefaultMaxInFlight, 65536} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			c := runningJobs(n, func(i int) uint32 { return uint32(i + 1) })
			c.indexCancels()
			p := wire.AppendCancel(nil, 1<<31)
			b.ReportAllocs()
			for b.Loop() {
				c.cancelCall(p)
			}
		})
	}
}

// runningJobs returns a connection (no socket: for its read loop's
// bookkeeping only) that holds n jobs, the i-th running a call of
// promise id pid(i), taken on as the read loop does (acquire, then the
// request's promise id and live word).
func runningJobs(n int, pid func(i int) uint32) *serverConn {
	c := &serverConn{s: &Server{}}
	c.s.opts.maxInFlight = n
	for i := range n {
		j := c.acquire()
		j.pid = pid(i)
		j.canceled.Store(false) // a pooled job's mark of its last call
		if c.cx != nil {
			c.indexJob(j)
		}
		j.live.Store(1<<32 | uint64(j.pid))
	}
	return c
}
