package rpc

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"testing"
)

// nameList names a test service's methods by schema ordinal, as a
// generated <I>MethodName does: names[k-1] for method k, "" past them.
func nameList(names ...string) func(uint32) string {
	return func(k uint32) string {
		if k == 0 || uint64(k) > uint64(len(names)) {
			return ""
		}
		return names[k-1]
	}
}

// With several services mounted at different bases, a server interceptor
// and a stream interceptor get each method's full name from the server
// (Server.MethodName) and from ctx (MethodFrom), unary and streaming,
// and so does a handler through a ctx derived from its own; methods
// without a name (plain Handle, a service mounted with Mount, a method
// its name function leaves out) and ordinals nothing mounted give "".
func TestServerMethodName(t *testing.T) {
	tr := &trace{}
	var srv atomic.Pointer[Server]
	seen := func(ctx context.Context, method uint32) {
		tr.add(fmt.Sprintf("%d=%s|%s", method, srv.Load().MethodName(method), MethodFrom(ctx)))
	}
	ic := func(ctx context.Context, method uint32, req, resp []byte, next Handler) ([]byte, error) {
		seen(ctx, method)
		return next(ctx, req, resp)
	}
	sic := func(ctx context.Context, method uint32, init []byte, st *Stream, next StreamHandler) error {
		seen(ctx, method)
		return next(ctx, init, st)
	}
	s, addr, _ := testServer(t, WithInterceptors(ic), WithStreamInterceptors(sic))
	srv.Store(s)
	type key struct{}
	handled := func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, MethodFrom(context.WithValue(ctx, key{}, 1))...), nil
	}
	streamed := func(ctx context.Context, init []byte, st *Stream) error {
		return st.Send([]byte(MethodFrom(context.WithValue(ctx, key{}, 1))))
	}
	b := s.MountNamed("greet.Greeter", 2, nameList("hello", "chat"), At(100))
	s.Handle(b+1, handled)
	s.HandleStream(b+2, streamed)
	b = s.MountNamed("admin.Admin", 3, nameList("stop", "", "watch"), At(200))
	s.Handle(b+1, handled)
	s.Handle(b+2, handled)
	s.HandleStream(b+3, streamed)
	b = s.Mount("old.Old", 1, At(300)) // as code generated before MountNamed does
	s.Handle(b+1, handled)
	s.Handle(400, handled) // no mount at all
	s.MountNamed("none.None", 0, nameList("ghost"), At(500))

	c := dial(t, addr)
	ctx := context.Background()
	for _, tc := range []struct {
		method uint32
		stream bool
		want   string
	}{
		{101, false, "/greet.Greeter/hello"},
		{102, true, "/greet.Greeter/chat"},
		{201, false, "/admin.Admin/stop"},
		{202, false, ""},
		{203, true, "/admin.Admin/watch"},
		{301, false, ""},
		{400, false, ""},
		{mEcho, false, ""},
	} {
		var got string
		if tc.stream {
			st, err := c.OpenStream(ctx, tc.method, nil)
			if err != nil {
				t.Fatalf("open %d: %v", tc.method, err)
			}
			m, err := st.Recv(nil)
			if err != nil {
				t.Fatalf("stream %d: %v", tc.method, err)
			}
			got = string(m)
			if _, err := st.Recv(nil); err != io.EOF {
				t.Fatalf("stream %d end: %v", tc.method, err)
			}
		} else {
			out, err := c.Call(ctx, tc.method, []byte("x"), nil)
			if err != nil {
				t.Fatalf("call %d: %v", tc.method, err)
			}
			got = string(out)
			if tc.method == mEcho {
				got = "" // echo answers its request
			}
		}
		if got != tc.want {
			t.Errorf("method %d: the handler's MethodFrom gave %q, want %q", tc.method, got, tc.want)
		}
		if ev, want := tr.take(), fmt.Sprintf("%d=%s|%s", tc.method, tc.want, tc.want); ev != want {
			t.Errorf("method %d: interceptor saw %q, want %q", tc.method, ev, want)
		}
	}

	for _, m := range []uint32{0, 1, 100, 103, 199, 204, 300, 302, 500, 501, MaxMethod, HealthMethod - 1, ReflectionMethod + 1, math.MaxUint32} {
		if got := s.MethodName(m); got != "" {
			t.Errorf("MethodName(%d) = %q, want \"\"", m, got)
		}
	}
	if got := s.MethodName(HealthMethod); got != HealthMethodName {
		t.Errorf("MethodName(HealthMethod) = %q, want %q", got, HealthMethodName)
	}
	if got := MethodFrom(ctx); got != "" {
		t.Errorf("MethodFrom of a ctx of no handler: %q", got)
	}
	if got := NewServer().MethodName(1); got != "" {
		t.Errorf("MethodName on a server with no mounts: %q", got)
	}
	if got, want := s.Services(), []string{"admin.Admin", "greet.Greeter", "none.None", "old.Old"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Services() = %v, want %v", got, want)
	}
}

// The health method has a name, gRPC's health check's in this package's
// spelling, on every server (no mount needed), and an observer sees it.
func TestHealthMethodName(t *testing.T) {
	if HealthMethodName != "/rpc.Health/check" {
		t.Fatalf("HealthMethodName = %q", HealthMethodName)
	}
	if got := NewServer().MethodName(HealthMethod); got != HealthMethodName {
		t.Fatalf("MethodName(HealthMethod) on a server with no mounts = %q, want %q", got, HealthMethodName)
	}
	var srv atomic.Pointer[Server]
	names := make(chan string, 1)
	s, addr, _ := testServer(t, WithObserver(func(ev CallEvent) {
		if ev.Method == HealthMethod {
			names <- srv.Load().MethodName(ev.Method)
		}
	}))
	srv.Store(s)
	if st, err := CheckHealth(context.Background(), dial(t, addr), ""); err != nil || st != HealthServing {
		t.Fatalf("CheckHealth = %v, %v", st, err)
	}
	if got := <-names; got != HealthMethodName {
		t.Fatalf("the observer named the health check %q, want %q", got, HealthMethodName)
	}
}

// With many services mounted, in no order of their bases, with empty
// mounts inside the ranges of others and unnamed ones between them,
// MethodName finds every named method and nothing else (it looks the
// mount up by binary search over the named mounts, sorted by base).
func TestMethodNameManyMounts(t *testing.T) {
	s := NewServer()
	const n = 500
	want := map[uint32]string{}
	for i := range n {
		// Bases 10*k for k a permutation of 1..n: mounted out of order.
		k := uint32((i*211)%n + 1)
		base := 10 * k
		svc := fmt.Sprintf("s%d.S", k)
		switch k % 5 {
		case 0: // unnamed
			s.Mount(svc, 3, At(base))
		case 1: // empty, its range inside the next mount's below
			s.MountNamed(svc, 0, nameList("ghost"), At(base+12))
		default:
			s.MountNamed(svc, 4, nameList("a", "", "c", "d"), At(base))
			for j, m := range []string{"a", "", "c", "d"} {
				if m != "" {
					want[base+uint32(j)+1] = "/" + svc + "/" + m
				}
			}
		}
	}
	for m := uint32(0); m <= 10*n+20; m++ {
		if got := s.MethodName(m); got != want[m] {
			t.Fatalf("MethodName(%d) = %q, want %q", m, got, want[m])
		}
	}
}
