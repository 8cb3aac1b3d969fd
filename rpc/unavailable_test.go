package rpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// A 503 that a handler returns is an answer, not a go-away, even with the
// very words of the server's refusal: the call ran, so a cluster client
// (rpc/cluster) must not send it again and the error is not retryable. Only the not-run flag of the
// server's own refusal makes a call retryable.
func TestHandler503IsNotGoAway(t *testing.T) {
	s, addr, _ := testServer(t)
	var runs atomic.Int32
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		runs.Add(1)
		return resp, Errorf(StatusUnavailable, goAwayRefusal)
	})
	c := dial(t, addr)
	_, err := c.Call(context.Background(), mFail, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusUnavailable || se.Message != goAwayRefusal {
		t.Fatalf("Call: %v, want status 503 %q", err, goAwayRefusal)
	}
	if errors.Is(err, ErrGoAway) || IsRetryable(err) {
		t.Fatalf("a handler's 503 reads as a go-away refusal: %v", err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestHandleRefusesHugeOrdinal(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Handle(MaxMethod, echo) // the largest ordinal is fine
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Handle(1<<32-1) did not refuse the ordinal")
		}
	}()
	s.Handle(1<<32-1, echo)
}
