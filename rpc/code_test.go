package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
