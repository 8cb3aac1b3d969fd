package rpc

import (
	"context"
	"testing"
	"time"
)

// TestIdleSlotKeepsNoReceiver: once a call is over (answered, failed,
// abandoned and late-answered, a promise waited for or released), its
// slot keeps nothing of its caller: not the response buffer, not the
// response metadata's receiver, not the error. An idle slot holding them
// would keep the caller's memory alive until the slot's next use.
func TestIdleSlotKeepsNoReceiver(t *testing.T) {
	s, addr, _ := testServer(t)
	const mMD, mHeld = 2, 3
	s.Handle(mMD, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		SetResponseMetadata(ctx, "k", "v")
		if string(req) == "fail" {
			return resp, Errorf(StatusForbidden, "no")
		}
		return append(resp, "ok"...), nil
	})
	held := make(chan struct{})
	s.Handle(mHeld, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		SetResponseMetadata(ctx, "k", "v")
		<-held
		return append(resp, "late"...), nil
	})
	c := dial(t, addr)
	bg := context.Background()

	checkIdle := func(what string) {
		t.Helper()
		await(t, "the slots to be idle after "+what, func() bool {
			tp := c.table.Load()
			return tp != nil && idleSlots(t, c) == len(*tp)
		})
		for i, s := range *c.table.Load() {
			if s.resp != nil || s.rmd != nil || s.err != nil {
				t.Fatalf("after %s, idle slot %d keeps resp %v, rmd %p, err %v", what, i, s.resp != nil, s.rmd, s.err != nil)
			}
		}
	}

	var md Metadata
	ctx := WithResponseMetadata(bg, &md)
	resp := make([]byte, 0, 64)
	if out, err := c.Call(ctx, mMD, []byte("x"), resp); err != nil || string(out) != "ok" || md.Get("k") == nil {
		t.Fatalf("call: %q %v, metadata %v", out, err, md.Get("k"))
	}
	checkIdle("an answered call")

	if _, err := c.Call(ctx, mMD, []byte("fail"), resp); err == nil {
		t.Fatal("call answered 403 succeeded")
	}
	checkIdle("a call answered 403")

	p, err := c.Send(ctx, mMD, []byte("x"), resp)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Wait(bg); err != nil || string(out) != "ok" {
		t.Fatalf("promise: %q %v", out, err)
	}
	checkIdle("a promise waited for")

	p, err = c.Send(ctx, mMD, []byte("x"), resp)
	if err != nil {
		t.Fatal(err)
	}
	// Released once its answer came (delivered), or before (abandoned).
	await(t, "the promise's answer", func() bool { return p.s.st.Load()&slotStateMask == slotDelivered })
	p.Release()
	checkIdle("a promise released after its answer")

	cctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() {
		_, err := c.Call(cctx, mHeld, []byte("x"), resp)
		errs <- err
	}()
	await(t, "the held call to be sent", func() bool { return c.active() == 1 })
	time.Sleep(time.Millisecond) // the call waits for its answer (either way, the slot must end clean)
	cancel()
	if err := receive(t, "the abandoned call's return", errs); err == nil {
		t.Fatal("a call whose ctx was canceled succeeded")
	}
	p, err = c.Send(ctx, mHeld, []byte("x"), resp)
	if err != nil {
		t.Fatal(err)
	}
	p.Release() // abandoned: the late answer frees it
	close(held)
	checkIdle("an abandoned call's and a released promise's late answers")

	c.Close()
	checkIdle("the client's close")
}
