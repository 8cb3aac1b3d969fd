package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// The error of a call that failed on a replica names the replica, and
// still matches what the connection's error matched; a ctx's error is
// ctx's error itself, comparable with ==, as an rpc.Client gives it.
func TestReplicaErrorNamesReplica(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+r.addr, WithEjection(-1, 0, 0))

	_, err := c.Call(context.Background(), mFail, []byte("x"), nil)
	var re *ReplicaError
	var se *rpc.StatusError
	if !errors.As(err, &re) || re.Addr != r.addr || !strings.Contains(err.Error(), r.addr) {
		t.Fatalf("a handler's 500: %v, does not name the replica %s", err, r.addr)
	}
	if !errors.As(err, &se) || se.Code != 500 {
		t.Fatalf("a handler's 500: %v, not a StatusError of 500", err)
	}

	r.delay.Store(int64(2 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err = c.Call(ctx, mEcho, []byte("x"), nil)
	cancel()
	if err != context.DeadlineExceeded {
		t.Fatalf("a call past its deadline: %#v, want context.DeadlineExceeded itself", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = c.Call(ctx, mEcho, []byte("x"), nil)
	if err != context.Canceled {
		t.Fatalf("a canceled call: %#v, want context.Canceled itself", err)
	}
	r.delay.Store(0)

	r.kill()
	_, err = c.Call(context.Background(), mEcho, []byte("x"), nil)
	if errors.As(err, &re) {
		if re.Addr != r.addr || !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("a call on a broken connection: %v", err)
		}
	} else if !errors.Is(err, ErrNoReplica) {
		t.Fatalf("a call on a broken connection, or once it is known broken: %v", err)
	}
}

// A call on a connection that Close closed gets the error of a call made
// after Close: the replica had no part in it. It named the replica.
func TestCloseDuringCallSaysClosed(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	r.delay.Store(int64(2 * time.Second))
	c := dialT(t, "static:///"+r.addr)
	errs := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, []byte("x"), nil)
		errs <- err
	}()
	await(t, "the call on the replica", func() bool { return r.calls.Load() == 1 })
	c.Close()
	err := receive(t, "the call's end", errs)
	var re *ReplicaError
	if !errors.Is(err, rpc.ErrClosed) || errors.As(err, &re) || !strings.Contains(err.Error(), "client is closed") {
		t.Fatalf("a call in flight at Close: %v", err)
	}
	_, after := c.Call(context.Background(), mEcho, []byte("x"), nil)
	if after == nil || after.Error() != err.Error() {
		t.Fatalf("after Close: %v; during: %v", after, err)
	}
}
