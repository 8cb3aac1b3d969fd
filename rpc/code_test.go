package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/internal/unavailable"
)

// TestCodeIsTheAnswerStatus: Code of a handler's error is the status the
// client gets for it, as Code's doc says, codes 0 and 200 included (no
// error status: the call is answered 500, Code said 0 and 200).
func TestCodeIsTheAnswerStatus(t *testing.T) {
	errs := []error{
		Errorf(0, "no status"),
		Errorf(StatusOK, "ok is no error"),
		fmt.Errorf("wrapped: %w", Errorf(0, "no status")),
		Errorf(StatusForbidden, "no"),
		fmt.Errorf("wrapped: %w", Errorf(StatusNotFound, "gone")),
		errors.New("plain"),
	}
	s, addr, _ := testServer(t)
	s.Handle(mFail, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return resp, errs[req[0]]
	})
	c := dial(t, addr)
	for i, herr := range errs {
		_, err := c.Call(context.Background(), mFail, []byte{byte(i)}, nil)
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%v: the call returned %v", herr, err)
		}
		if got := Code(herr); got != se.Code {
			t.Errorf("Code(%v) = %d, the call was answered %d", herr, got, se.Code)
		}
	}
	if Code(nil) != StatusOK {
		t.Errorf("Code(nil) = %d", Code(nil))
	}
}

// TestCodeOfErrorsWithoutAnswer: Code names the failures no answer
// carried as a gRPC client names them (Unavailable, DeadlineExceeded,
// Canceled), wrapped or not, and allocates nothing for any of them.
func TestCodeOfErrorsWithoutAnswer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want uint32
	}{
		{ErrClosed, StatusUnavailable},
		{closedBy(io.EOF), StatusUnavailable},
		{closedBy(context.DeadlineExceeded), StatusUnavailable},
		{closedBy(fmt.Errorf("%w: %w", ErrProtocol, ErrMalformed)), StatusInternal},
		{ErrGoAway, StatusUnavailable},
		{fmt.Errorf("op: %w", ErrGoAway), StatusUnavailable},
		{unavailable.New("no replica"), StatusUnavailable},
		{context.DeadlineExceeded, StatusDeadlineExceeded},
		{fmt.Errorf("op: %w", context.DeadlineExceeded), StatusDeadlineExceeded},
		{context.Canceled, StatusCanceled},
		{ErrTooManyPending, StatusTooManyRequests},
		{ErrTooManyStreams, StatusTooManyRequests},
		{errors.New("plain"), StatusInternal},
		{newStatusError(StatusNotFound, []byte("no"), false), StatusNotFound},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%q) = %d, want %d", tc.err, got, tc.want)
		}
		if n := testing.AllocsPerRun(100, func() { Code(tc.err) }); n != 0 {
			t.Errorf("Code(%q): %v allocations, want 0", tc.err, n)
		}
	}
}
