package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Expectations a service moved from gRPC-go brings with it, checked end
// to end: a front server whose handlers call a backend server with their
// own ctx, as a gRPC handler calls another service.

const (
	mHop     = 40 // front: calls the backend's mSeen with the handler's ctx
	mSeen    = 41 // backend: records what the call carried
	mHopSet  = 42 // front: adds metadata and a cap of its own, then calls
	sHop     = 43 // front stream: calls the backend's mSeen with its ctx
	mHopOpen = 44 // front: opens the backend's sSeen with the handler's ctx
	sSeen    = 45 // backend stream: records what the open carried
)

// seen is what the backend's handler found on its ctx.
type seen struct {
	md    []string // key=value in order
	cap   string
	dl    time.Time
	hasDL bool
}

// hopServers starts a backend that records what its calls and streams
// carry, and a front server whose handlers call the backend with their
// own ctx; it returns a client of the front and the backend's records.
func hopServers(t *testing.T) (*Client, <-chan seen) {
	t.Helper()
	got := make(chan seen, 16)
	record := func(ctx context.Context) {
		var s seen
		MetadataFrom(ctx).Range(func(k, v []byte) bool {
			s.md = append(s.md, string(k)+"="+string(v))
			return true
		})
		s.cap = string(CapFrom(ctx))
		s.dl, s.hasDL = ctx.Deadline()
		got <- s
	}
	back, backAddr, _ := testServer(t)
	back.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		record(ctx)
		return resp, nil
	})
	back.HandleStream(sSeen, func(ctx context.Context, init []byte, st *Stream) error {
		record(ctx)
		return nil
	})
	bc := dial(t, backAddr)

	front, frontAddr, _ := testServer(t)
	front.Handle(mHop, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		// The handler sees what its caller sent...
		if got := string(MetadataFrom(ctx).Get("authorization")); got != "Bearer client-token" {
			return nil, fmt.Errorf("handler read authorization %q", got)
		}
		if got := string(CapFrom(ctx)); got != "client-cap" {
			return nil, fmt.Errorf("handler read cap %q", got)
		}
		// ...and calls its backend with its own ctx.
		return bc.Call(ctx, mSeen, nil, resp)
	})
	front.Handle(mHopSet, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ctx = WithCap(WithMetadata(ctx, "x-from", "front"), []byte("front-cap"))
		return bc.Call(ctx, mSeen, nil, resp)
	})
	front.Handle(mHopOpen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		st, err := bc.OpenStream(ctx, sSeen, nil)
		if err != nil {
			return nil, err
		}
		if _, err := st.Recv(nil); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return resp, nil
	})
	front.HandleStream(sHop, func(ctx context.Context, init []byte, st *Stream) error {
		if got := string(MetadataFrom(ctx).Get("authorization")); got != "Bearer client-token" {
			return fmt.Errorf("stream handler read authorization %q", got)
		}
		_, err := bc.Call(ctx, mSeen, nil, nil)
		return err
	})
	return dial(t, frontAddr), got
}

// A handler's ctx carries its caller's metadata and cap for the handler to
// read (MetadataFrom, CapFrom), not for the calls it makes: a call or a
// stream opened with it carries neither, as gRPC keeps incoming and
// outgoing metadata apart, so that a client's credentials do not reach the
// backends of the server it called.
func TestIncomingMetadataNotForwarded(t *testing.T) {
	c, got := hopServers(t)
	ctx := WithCap(WithMetadata(context.Background(), "authorization", "Bearer client-token"), []byte("client-cap"))
	for _, m := range []uint32{mHop, mHopOpen} {
		if _, err := c.Call(ctx, m, nil, nil); err != nil {
			t.Fatalf("method %d: %v", m, err)
		}
		s := receive(t, "the backend's record", got)
		if len(s.md) != 0 || s.cap != "" {
			t.Errorf("method %d: the backend got metadata %q and cap %q of the front's caller; want none", m, s.md, s.cap)
		}
	}
	// A stream handler's ctx neither.
	st, err := c.OpenStream(ctx, sHop, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("stream: %v", err)
	}
	s := receive(t, "the backend's record", got)
	if len(s.md) != 0 || s.cap != "" {
		t.Errorf("stream: the backend got metadata %q and cap %q of the front's caller; want none", s.md, s.cap)
	}
}

// What a handler adds to its ctx (WithMetadata, WithCap) is sent, and only
// that: not its caller's pairs before it.
func TestHandlerSetMetadataSent(t *testing.T) {
	c, got := hopServers(t)
	ctx := WithCap(WithMetadata(context.Background(), "authorization", "Bearer client-token"), []byte("client-cap"))
	if _, err := c.Call(ctx, mHopSet, nil, nil); err != nil {
		t.Fatal(err)
	}
	s := receive(t, "the backend's record", got)
	if strings.Join(s.md, ",") != "x-from=front" || s.cap != "front-cap" {
		t.Errorf("the backend got metadata %q and cap %q; want x-from=front and front-cap", s.md, s.cap)
	}
}

// The deadline crosses hops: the backend's ctx has a deadline no later than
// the caller's, and not much earlier (the time the call took to get there,
// nothing subtracted on purpose). The wire carries the time left, so the
// hosts' clocks need not agree.
func TestDeadlineCrossesHops(t *testing.T) {
	c, got := hopServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	callerDL, _ := ctx.Deadline()
	ctx = WithCap(WithMetadata(ctx, "authorization", "Bearer client-token"), []byte("client-cap"))
	if _, err := c.Call(ctx, mHop, nil, nil); err != nil {
		t.Fatal(err)
	}
	s := receive(t, "the backend's record", got)
	if !s.hasDL {
		t.Fatal("the backend's ctx has no deadline")
	}
	// As in gRPC, the time each request spends on its way is not taken
	// off (see deadline.go): the backend's deadline is the caller's give
	// or take that. A minute is a generous margin for a slow machine; what
	// it catches is a deadline cut, lost or extended on the way.
	if d := s.dl.Sub(callerDL); d < -time.Minute || d > time.Minute {
		t.Errorf("the backend's deadline is %v from the caller's; want about the same", d)
	}
}

// A call whose ctx's deadline has passed does not run its handler, and
// fails with context.DeadlineExceeded, whether the client notices first
// or the server does.
func TestPastDeadlineNotRun(t *testing.T) {
	var ran atomic.Int32
	s, addr, _ := testServer(t)
	s.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		return resp, nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := c.Call(ctx, mSeen, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call with a past deadline: %v; want context.DeadlineExceeded", err)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the handler ran %d times for calls whose deadline had passed", n)
	}
}

// Metadata keys are bytes compared exactly, values any bytes; a key may
// repeat (Get: the first, Range: all in order); metadata beyond the limit
// is refused with a clear error and without running the handler.
func TestMetadataKeysValuesLimit(t *testing.T) {
	var ran atomic.Int32
	var mu sync.Mutex
	var pairs []string
	var first, upper string
	s, addr, _ := testServer(t, WithMaxMetadata(1024))
	s.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		ran.Add(1)
		md := MetadataFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		pairs = pairs[:0]
		md.Range(func(k, v []byte) bool {
			pairs = append(pairs, fmt.Sprintf("%q=%q", k, v))
			return true
		})
		first, upper = string(md.Get("k")), string(md.Get("K"))
		return resp, nil
	})
	c := dial(t, addr)
	bin := string([]byte{0, 0xff, '\n', 0x80})
	ctx := WithMetadata(context.Background(), "k", "1", "K", "2")
	ctx = WithMetadata(ctx, "k", "3", "k-bin", bin)
	if _, err := c.Call(ctx, mSeen, nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := fmt.Sprintf(`"k"="1","K"="2","k"="3","k-bin"=%q`, bin)
	if got := strings.Join(pairs, ","); got != want {
		t.Errorf("Range: %s; want %s", got, want)
	}
	if first != "1" || upper != "2" {
		t.Errorf(`Get("k") = %q, Get("K") = %q; want "1", "2"`, first, upper)
	}
	mu.Unlock()

	ran.Store(0)
	big := WithMetadata(context.Background(), "x", strings.Repeat("v", 1024))
	_, err := c.Call(big, mSeen, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusMetadataTooLarge || !strings.Contains(err.Error(), "metadata too large") {
		t.Errorf("oversize metadata: %v; want 431 metadata too large", err)
	}
	if IsRetryable(err) {
		t.Errorf("oversize metadata: %v is retryable", err)
	}
	if ran.Load() != 0 {
		t.Error("the handler ran for oversize metadata")
	}
}

// A handler's error reaches the client: a StatusError with its code and
// text, a plain error as 500 with its text, or "internal error" under
// WithHideErrors (a StatusError is the handler's choice and is sent
// as it is).
func TestHandlerErrorsReachClient(t *testing.T) {
	for _, hide := range []bool{false, true} {
		var opts []ServerOption
		if hide {
			opts = append(opts, WithHideErrors(), WithLogger(discardLogger()))
		}
		s, addr, _ := testServer(t, opts...)
		s.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			if string(req) == "status" {
				return nil, Errorf(403, "no access to %s", "x")
			}
			return nil, errors.New("db password is hunter2")
		})
		c := dial(t, addr)
		_, err := c.Call(context.Background(), mSeen, []byte("status"), nil)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 403 || se.Message != "no access to x" {
			t.Errorf("hide=%v: StatusError: %v; want 403 no access to x", hide, err)
		}
		_, err = c.Call(context.Background(), mSeen, []byte("plain"), nil)
		wantMsg := "db password is hunter2"
		if hide {
			wantMsg = "internal error"
		}
		if !errors.As(err, &se) || se.Code != 500 || se.Message != wantMsg {
			t.Errorf("hide=%v: plain error: %v; want 500 %s", hide, err, wantMsg)
		}
	}
}

type grpcUserKey struct{}

// A server interceptor may hand next a ctx of its own (a value, a shorter
// deadline), a request of its own, and answer with a buffer of its own;
// the handler still reads the call's metadata, cap and identity through
// the derived ctx, and the shorter deadline is what its outgoing calls
// carry.
func TestInterceptorReplacesCtxAndBuffers(t *testing.T) {
	got := make(chan seen, 2)
	back, backAddr, _ := testServer(t)
	back.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		var s seen
		s.dl, s.hasDL = ctx.Deadline()
		got <- s
		return resp, nil
	})
	bc := dial(t, backAddr)
	swap := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		ctx = context.WithValue(ctx, grpcUserKey{}, "v")
		ctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		out, err := next(ctx, append([]byte("swapped-"), req...), resp)
		if err != nil {
			return out, err
		}
		// An answer of its own, not in resp.
		return append([]byte("own:"), out...), nil
	}
	s, addr, _ := testServer(t, WithInterceptors(swap))
	s.Handle(mHop, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if ctx.Value(grpcUserKey{}) != "v" {
			return nil, errors.New("the interceptor's ctx value is lost")
		}
		if m, _, ok := CallInfo(ctx); !ok || m != mHop {
			return nil, errors.New("CallInfo lost through the interceptor's ctx")
		}
		if string(MetadataFrom(ctx).Get("k")) != "v" || string(CapFrom(ctx)) != "c" {
			return nil, errors.New("metadata or cap lost through the interceptor's ctx")
		}
		if _, err := bc.Call(ctx, mSeen, nil, nil); err != nil {
			return nil, err
		}
		return append(resp, req...), nil
	})
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
	defer cancel()
	ctx = WithCap(WithMetadata(ctx, "k", "v"), []byte("c"))
	out, err := c.Call(ctx, mHop, []byte("req"), nil)
	if err != nil || string(out) != "own:swapped-req" {
		t.Fatalf("Call: %q, %v; want own:swapped-req", out, err)
	}
	b := receive(t, "the backend's record", got)
	// The interceptor's hour, not the caller's day (a generous margin).
	if left := time.Until(b.dl); !b.hasDL || left > 2*time.Hour {
		t.Errorf("the backend's deadline is %v away (has %v); want the interceptor's hour", left, b.hasDL)
	}
}

// WithHideErrors hides a handler's plain error, not a *StatusError, and
// the error of a call the handler made is one: returned, wrapped or not,
// it gives the front's caller the backend's code and message, as a gRPC
// status error a handler returns does in gRPC-go (see WithHideErrors).
func TestHideErrorsPassesBackendStatus(t *testing.T) {
	back, backAddr, _ := testServer(t, WithLogger(discardLogger()))
	back.Handle(mSeen, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return nil, errors.New("backend detail")
	})
	bc := dial(t, backAddr)
	front, frontAddr, _ := testServer(t, WithHideErrors(), WithLogger(discardLogger()))
	front.Handle(mHop, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		_, err := bc.Call(ctx, mSeen, nil, nil)
		return nil, fmt.Errorf("front: %w", err)
	})
	c := dial(t, frontAddr)
	_, err := c.Call(context.Background(), mHop, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != "backend detail" {
		t.Errorf("Call: %v; want the backend's 500 and text, as documented", err)
	}
}
