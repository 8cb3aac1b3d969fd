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

// A front whose handler returns, wrapped or not, the 404 "no such method"
// its call to a backend got does not answer its own client 404 "no such
// method": that would say the front lacks the method (IsNoSuchMethod,
// which rpc/cluster reads as a replica deployed without it), when the
// method is there and its backend lacks one. The front answers 500 with
// the backend's text. A handler's own 404 "no such method" (a dispatcher
// that knows the method is not served) stays as it is, and so does the
// server's own answer to a method it has no handler for.
func TestBackendNoSuchMethodNotPassedThrough(t *testing.T) {
	const mOwn404 = 51
	_, backAddr, _ := testServer(t, WithLogger(discardLogger()))
	bc := dial(t, backAddr)
	front, frontAddr, _ := testServer(t, WithLogger(discardLogger()))
	front.Handle(mHop, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		_, err := bc.Call(ctx, mSeen, nil, nil) // the backend has no mSeen
		if len(req) > 0 {
			return nil, fmt.Errorf("asking the backend: %w", err)
		}
		return nil, err
	})
	front.Handle(mOwn404, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return nil, Errorf(StatusNotFound, NoSuchMethod)
	})
	c := dial(t, frontAddr)
	for _, tc := range []struct {
		req  []byte
		want string
	}{{nil, NoSuchMethod}, {[]byte("wrap"), "asking the backend: " + NoSuchMethod}} {
		_, err := c.Call(context.Background(), mHop, tc.req, nil)
		var se *StatusError
		if IsNoSuchMethod(err) || !errors.As(err, &se) || se.Code != StatusInternal || se.Message != tc.want {
			t.Errorf("Call(%q): %v (IsNoSuchMethod %v); want status 500 with %q", tc.req, err, IsNoSuchMethod(err), tc.want)
		}
	}
	if _, err := c.Call(context.Background(), mOwn404, nil, nil); !IsNoSuchMethod(err) {
		t.Errorf("a handler's own 404 %q: %v; want it passed as it is", NoSuchMethod, err)
	}
	if _, err := c.Call(context.Background(), mSeen, nil, nil); !IsNoSuchMethod(err) {
		t.Errorf("a method the front has no handler for: %v; want IsNoSuchMethod", err)
	}
}

// A server lacking a stream method refuses its open with 404 "no such
// stream method", and IsNoSuchMethod reports it as it reports a call's
// 404 "no such method": the caller (and rpc/cluster) has one test for a
// server without the method. A front whose handler returns that end of a
// stream it opened to a backend answers 500, as for a call's.
func TestStreamNoSuchMethod(t *testing.T) {
	const mMissing = 999
	_, backAddr, _ := testServer(t, WithLogger(discardLogger()))
	bc := dial(t, backAddr)
	open := func(ctx context.Context) error {
		st, err := bc.OpenStream(ctx, mMissing, nil)
		if err != nil {
			return err
		}
		_, err = recvAll(st)
		return err
	}
	err := open(context.Background())
	var se *StatusError
	if !IsNoSuchMethod(err) || !errors.As(err, &se) || se.Code != StatusNotFound {
		t.Fatalf("a stream method the server lacks: %v (IsNoSuchMethod %v); want 404 and IsNoSuchMethod", err, IsNoSuchMethod(err))
	}
	if other := Errorf(StatusInternal, streamNoHandler); IsNoSuchMethod(other) {
		t.Fatalf("IsNoSuchMethod(%v) is true", other)
	}
	front, frontAddr, _ := testServer(t, WithLogger(discardLogger()))
	front.Handle(mHop, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return nil, open(ctx)
	})
	c := dial(t, frontAddr)
	_, err = c.Call(context.Background(), mHop, nil, nil)
	if IsNoSuchMethod(err) || !errors.As(err, &se) || se.Code != StatusInternal || se.Message != streamNoHandler {
		t.Fatalf("a front passing on its backend's stream refusal: %v (IsNoSuchMethod %v); want status 500 with %q", err, IsNoSuchMethod(err), streamNoHandler)
	}
}
