package rpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// trace records what the interceptors of a test saw, in order.
type trace struct {
	mu  sync.Mutex
	evs []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.evs = append(tr.evs, s)
	tr.mu.Unlock()
}

func (tr *trace) take() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := strings.Join(tr.evs, " ")
	tr.evs = nil
	return s
}

func namedInterceptor(tr *trace, name string) Interceptor {
	return func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		tr.add(name + ">" + string(rune('0'+method)))
		out, err := next(ctx, req, resp)
		tr.add("<" + name)
		return out, err
	}
}

// Server interceptors run first-outermost around the handler, over TCP,
// see the wire method, can answer by themselves, replace the handler's
// error, and a panic in one answers 500 without hurting the connection.
func TestServerInterceptors(t *testing.T) {
	tr := &trace{}
	deny := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		if string(req) == "deny" {
			tr.add("denied")
			return resp, Errorf(403, "forbidden")
		}
		if string(req) == "boom" {
			panic("interceptor panic")
		}
		out, err := next(ctx, req, resp)
		if err != nil && err.Error() == "handler failed" {
			return append(out[:0], "replaced"...), Errorf(418, "teapot")
		}
		if err == nil {
			out = append(out, '!')
		}
		return out, err
	}
	s, addr, logs := testServer(t, WithInterceptors(namedInterceptor(tr, "a"), namedInterceptor(tr, "b")), WithInterceptors(deny))
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		tr.add("h")
		if _, pid, ok := CallInfo(ctx); !ok || pid == 0 {
			t.Error("CallInfo lost through the interceptors")
		}
		return resp, errors.New("handler failed")
	})
	c := dial(t, addr)
	ctx := context.Background()

	out, err := c.Call(ctx, mEcho, []byte("hi"), nil)
	if err != nil || string(out) != "hi!" {
		t.Fatalf("echo: %q %v", out, err)
	}
	if got := tr.take(); got != "a>1 b>1 <b <a" {
		t.Fatalf("order: %q", got)
	}
	_, err = c.Call(ctx, mEcho, []byte("deny"), nil)
	if Code(err) != 403 {
		t.Fatalf("deny: %v", err)
	}
	if got := tr.take(); got != "a>1 b>1 denied <b <a" {
		t.Fatalf("deny order: %q", got)
	}
	out, err = c.Call(ctx, mFail, nil, nil)
	if Code(err) != 418 || string(out) != "teapot" {
		t.Fatalf("replaced error: %q %v", out, err)
	}
	if got := tr.take(); got != "a>2 b>2 h <b <a" {
		t.Fatalf("fail order: %q", got)
	}
	_, err = c.Call(ctx, mEcho, []byte("boom"), nil)
	if Code(err) != StatusInternal {
		t.Fatalf("panic: %v", err)
	}
	tr.take()
	if !contains(logs.String(), "interceptor panic") {
		t.Errorf("panic not logged: %s", logs)
	}
	if out, err := c.Call(ctx, mEcho, []byte("ok"), nil); err != nil || string(out) != "ok!" {
		t.Fatalf("after panic: %q %v", out, err)
	}
	// Unknown methods and the health service run no interceptor.
	tr.take()
	if _, err := c.Call(ctx, 99, nil, nil); Code(err) != StatusNotFound {
		t.Fatalf("unknown method: %v", err)
	}
	if st, err := CheckHealth(ctx, c, ""); err != nil || st != HealthServing {
		t.Fatalf("health: %v %v", st, err)
	}
	if got := tr.take(); got != "" {
		t.Fatalf("interceptors ran for a 404 or health: %q", got)
	}
}

func namedClientInterceptor(tr *trace, name string) ClientInterceptor {
	return func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		tr.add(name + ">" + string(rune('0'+method)))
		out, err := invoke(ctx, method, req, resp)
		tr.add("<" + name)
		return out, err
	}
}

type icKey struct{}

// Client interceptors run first-outermost around the call on a Client;
// they can change ctx, req and the result.
func TestClientInterceptors(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(409, "conflict")
	})
	tr := &trace{}
	rewrite := func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		if ctx.Value(icKey{}) != "from a" {
			t.Error("ctx of the outer interceptor lost")
		}
		if string(req) == "short" {
			return append(resp, "cached"...), nil
		}
		out, err := invoke(ctx, method, append([]byte("pre-"), req...), resp)
		if Code(err) == 409 {
			return out, errors.New("mapped: " + err.Error())
		}
		return out, err
	}
	withValue := func(ctx context.Context, method uint32, req, resp []byte, invoke Invoker) ([]byte, error) {
		return invoke(context.WithValue(ctx, icKey{}, "from a"), method, req, resp)
	}
	opts := []ClientOption{WithClientInterceptors(namedClientInterceptor(tr, "a"), withValue), WithClientInterceptors(namedClientInterceptor(tr, "b"), rewrite)}
	c := dial(t, addr, opts...)
	ctx := context.Background()
	for _, cl := range []Caller{c} {
		out, err := cl.Call(ctx, mEcho, []byte("x"), nil)
		if err != nil || string(out) != "pre-x" {
			t.Fatalf("%T echo: %q %v", cl, out, err)
		}
		if got := tr.take(); got != "a>1 b>1 <b <a" {
			t.Fatalf("%T order: %q", cl, got)
		}
		out, err = cl.Call(ctx, mEcho, []byte("short"), nil)
		if err != nil || string(out) != "cached" {
			t.Fatalf("%T short-circuit: %q %v", cl, out, err)
		}
		tr.take()
		_, err = cl.Call(ctx, mFail, nil, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "mapped: rpc: status 409") {
			t.Fatalf("%T mapped error: %v", cl, err)
		}
		tr.take()
	}
	if n := s.Stats().Calls; n != 2 {
		t.Fatalf("server saw %d calls, want 2 (1 echo + 1 fail; short-circuits send none)", n)
	}
}
