package rpc

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestEchoAndStatus(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mFail, func(_ context.Context, req, resp []byte) ([]byte, error) {
		switch string(req) {
		case "plain":
			return resp, errors.New("secret internal detail")
		case "zero":
			return resp, Errorf(0, "no status")
		}
		return resp, Errorf(StatusForbidden, "no access to %s", req)
	})
	c := dial(t, addr)
	ctx := context.Background()
	for _, n := range []int{0, 1, 64, 4096, 70000, 1 << 20} {
		req := bytes.Repeat([]byte{byte(n)}, n)
		out, err := c.Call(ctx, mEcho, req, []byte("pre"))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if string(out[:3]) != "pre" || !bytes.Equal(out[3:], req) {
			t.Fatalf("n=%d: echo mismatch (len %d)", n, len(out))
		}
	}
	_, err := c.Call(ctx, mFail, []byte("x"), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusForbidden || se.Message != "no access to x" {
		t.Fatalf("status error: %v", err)
	}
	out, err := c.Call(ctx, mFail, []byte("plain"), []byte("keep"))
	if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != "secret internal detail" || string(out) != "keepsecret internal detail" {
		t.Fatalf("plain error: %q %v", out, err)
	}
	if Code(err) != StatusInternal || IsRetryable(err) {
		t.Fatal("Code/IsRetryable")
	}
	// Code 0 is no status: answered as a plain error.
	if _, err := c.Call(ctx, mFail, []byte("zero"), nil); !errors.As(err, &se) || se.Code != StatusInternal || se.Message != "rpc: status 0: no status" {
		t.Fatalf("error with code 0: %v", err)
	}
	_, err = c.Call(ctx, 77, nil, nil)
	if !errors.As(err, &se) || se.Code != StatusNotFound || se.Message != "no such method" || !IsNoSuchMethod(err) {
		t.Fatalf("unknown method: %v", err)
	}
	for _, other := range []error{nil, Errorf(StatusNotFound, "no such account"), Errorf(StatusInternal, NoSuchMethod)} {
		if IsNoSuchMethod(other) {
			t.Fatalf("IsNoSuchMethod(%v) is true", other)
		}
	}
	_, err = c.Call(ctx, 0, nil, nil)
	if !errors.As(err, &se) || se.Code != StatusNotFound {
		t.Fatalf("method 0: %v", err)
	}
	// The connection still works after all that.
	if out, err := c.Call(ctx, mEcho, []byte("ok"), nil); err != nil || string(out) != "ok" {
		t.Fatalf("after errors: %q %v", out, err)
	}
	// The server counts an answer around the time it writes it: wait for
	// the counters rather than read them the moment the answers arrived.
	await(t, "the status counters", func() bool {
		st := s.Stats()
		return st.OK >= 7 && st.NotFound >= 2 && st.Internal >= 2 && st.OtherStatus >= 1
	})
	st := s.Stats()
	if st.Calls < 12 || st.OK < 7 || st.NotFound != 2 || st.Internal != 2 || st.OtherStatus != 1 || st.Active != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCallInfo(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		m, p, ok := CallInfo(ctx)
		if !ok || m != 5 || p == 0 || ctx.Err() != nil {
			return resp, Errorf(StatusBadRequest, "CallInfo %d %d %v", m, p, ok)
		}
		return resp, nil
	})
	c := dial(t, addr)
	if _, err := c.Call(context.Background(), 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := CallInfo(context.Background()); ok {
		t.Fatal("CallInfo on a plain context")
	}
}
