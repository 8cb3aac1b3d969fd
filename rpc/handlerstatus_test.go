package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A handler's error that wraps a *StatusError answers the status's code
// with the whole text (the wrapper's words around the status's message),
// as gRPC-go's status.FromError keeps a wrapper's message: the words the
// handler added used to be dropped, and the caller saw only "no user".
// Under WithHideErrors only the status's own message goes (the wrapper
// may carry what callers should not see), and the same holds for a
// stream handler's error end.
func TestWrappedStatusErrorKeepsText(t *testing.T) {
	const sWrapped = 50
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprintf("hide=%v", hide), func(t *testing.T) {
			opts := []ServerOption{WithLogger(discardLogger())}
			if hide {
				opts = append(opts, WithHideErrors())
			}
			s, addr, _ := testServer(t, opts...)
			s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				return nil, fmt.Errorf("loading user 7: %w", Errorf(StatusNotFound, "no user"))
			})
			s.HandleStream(sWrapped, func(ctx context.Context, init []byte, st *Stream) error {
				return fmt.Errorf("streaming user 7: %w", Errorf(StatusForbidden, "not yours"))
			})
			c := dial(t, addr)
			want, wantStream := "loading user 7: no user", "streaming user 7: not yours"
			if hide {
				want, wantStream = "no user", "not yours"
			}
			_, err := c.Call(context.Background(), mFail, nil, nil)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != StatusNotFound || se.Message != want {
				t.Errorf("Call: %v; want status 404 with %q", err, want)
			}
			st, err := c.OpenStream(context.Background(), sWrapped, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			if !errors.As(err, &se) || se.Code != StatusForbidden || se.Message != wantStream {
				t.Errorf("stream end: %v; want status 403 with %q", err, wantStream)
			}
		})
	}
}
