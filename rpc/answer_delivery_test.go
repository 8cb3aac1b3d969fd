package rpc

import (
	"context"
	"errors"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// An answer reaches its caller appended to the caller's buffer (in place
// when it fits, after what the buffer held), with its status and not-run
// flag, whatever the buffer's capacity and the status. Each case answers
// one call by hand; sequential calls after it check that no slot of the
// table is lost.
func TestAnswerDelivery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		respCap  int // -1: a nil resp
		prefix   string
		status   uint32
		notRun   bool
		body     string
		wantCode uint32 // 0: no error
		inPlace  bool   // the answer fits resp: it must be appended in its array
	}{
		{name: "fits", respCap: 16, body: "pong", status: StatusOK, inPlace: true},
		{name: "after a prefix", respCap: 16, prefix: "ab", body: "pong", status: StatusOK, inPlace: true},
		{name: "empty body, nil resp", respCap: -1, status: StatusOK},
		{name: "error status", respCap: 16, body: "nope", status: StatusNotFound, wantCode: StatusNotFound, inPlace: true},
		{name: "not run", respCap: 16, body: "later", status: StatusUnavailable, notRun: true, wantCode: StatusUnavailable, inPlace: true},
		{name: "nil resp", respCap: -1, body: "pong", status: StatusOK},
		{name: "body does not fit", respCap: 2, body: "pong", status: StatusOK},
		{name: "status outside the known codes", respCap: 16, body: "odd", status: 70000, wantCode: 70000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pipeClient(t)
			var resp []byte
			if tc.respCap >= 0 {
				resp = append(make([]byte, 0, tc.respCap), tc.prefix...)
			}
			out, err := callAnswered(t, c, peer, resp, wire.Response{Status: tc.status, NotRun: tc.notRun, Body: []byte(tc.body)})
			if want := tc.prefix + tc.body; tc.wantCode == 0 && string(out) != want {
				t.Errorf("answer %q, want %q", out, want)
			}
			if tc.inPlace && &out[:1][0] != &resp[:1][0] {
				t.Error("the answer was not appended in place, in the caller's buffer")
			}
			var se *StatusError
			switch {
			case tc.wantCode == 0 && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantCode != 0 && (!errors.As(err, &se) || se.Code != tc.wantCode || se.Message != tc.body):
				t.Errorf("error %v, want a StatusError %d %q", err, tc.wantCode, tc.body)
			case tc.notRun && !errors.Is(err, ErrGoAway):
				t.Errorf("error %v does not match ErrGoAway, though the answer was marked not run", err)
			}

			// Sequential calls after it: one slot serves them all.
			for i := range 20 {
				out, err := callAnswered(t, c, peer, nil, wire.Response{Status: StatusOK, Body: []byte("again")})
				if err != nil || string(out) != "again" {
					t.Fatalf("call %d after: %q, %v", i, out, err)
				}
			}
			if n := len(*c.table.Load()); n != 1 {
				t.Errorf("%d slots for one call at a time, want 1", n)
			}
			if n := c.Pending(); n != 0 {
				t.Errorf("Pending() = %d with no call in progress", n)
			}
			if c.pending() {
				t.Error("the answer check sees a call waiting with none in progress")
			}
		})
	}
}

// busySlots, which tells a flusher whether other calls are under way,
// counts the slots off the free stack: calls waiting for their answers,
// abandoned calls until their late answers, and nothing once every call
// has returned.
func TestBusySlots(t *testing.T) {
	c, peer := pipeClient(t)
	// answer answers reqs, calls started by startCalls, and waits for
	// their results.
	answer := func(reqs []wire.Request, errs <-chan error) {
		t.Helper()
		for _, r := range reqs {
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID}))
			if err := receive(t, "an answered call", errs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := c.busySlots(); n != 0 {
		t.Fatalf("busySlots %d on a new client, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	abandoned := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mEcho, []byte("late"), nil)
		abandoned <- err
	}()
	late := peer.recvRequest()
	errs := startCalls(c, []byte("ping"), 2)
	reqs := []wire.Request{peer.recvRequest(), peer.recvRequest()}
	if n := c.busySlots(); n != 3 {
		t.Fatalf("busySlots %d with three calls waiting, want 3", n)
	}
	cancel()
	if err := receive(t, "the canceled call", abandoned); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v", err)
	}
	peer.recvCancelQuestion() // which a peer that reads nothing would block
	if n := c.busySlots(); n != 3 {
		t.Fatalf("busySlots %d after abandoning one of three, want 3 (its slot waits for the late answer)", n)
	}
	answer(reqs, errs)
	await(t, "the answered calls' slots back on the stack", func() bool { return c.busySlots() == 1 })
	peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: late.PromiseID}))
	await(t, "the abandoned call's slot freed by its late answer", func() bool { return c.busySlots() == 0 })
	if n, all := idleSlots(t, c), len(*c.table.Load()); n != all {
		t.Fatalf("%d of %d slots idle after every call returned", n, all)
	}
	// Calls that take idle slots off the stack.
	errs = startCalls(c, []byte("again"), 2)
	reqs = []wire.Request{peer.recvRequest(), peer.recvRequest()}
	if n := c.busySlots(); n != 2 {
		t.Fatalf("busySlots %d with two calls on reused slots, want 2", n)
	}
	answer(reqs, errs)
	await(t, "every slot back on the stack", func() bool { return c.busySlots() == 0 })
	if n := idleSlots(t, c); n != 3 {
		t.Fatalf("%d of 3 slots idle at the end", n)
	}
}
