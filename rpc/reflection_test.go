package rpc

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	reflSchemaA = "package a\nstruct R\n    X u32 @0\ninterface A {\n    x(req: R) returns (resp: R)\n    y()\n}\n"
	reflSchemaB = "package b\ninterface B {\n    z()\n}\n"
)

// TestReflection: a server made with WithReflection lists its services
// in the order mounted, with their bases, method counts and schemas, "" for
// one mounted without; a service mounted later shows in the next answer.
func TestReflection(t *testing.T) {
	s, addr, _ := testServer(t, WithReflection())
	s.MountNamed("a.A", 2, nameList("x", "y"), WithSchema(reflSchemaA))
	s.Mount("b.B", 1, At(100), WithSchema("replaced"), WithSchema(reflSchemaB))
	s.Mount("plain", 3, At(200))
	c := dial(t, addr)
	ctx := context.Background()
	got, err := Reflect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []ReflectedService{
		{Name: "a.A", Base: 0, Methods: 2, Schema: reflSchemaA},
		{Name: "b.B", Base: 100, Methods: 1, Schema: reflSchemaB},
		{Name: "plain", Base: 200, Methods: 3},
	}
	checkReflected(t, got, want)

	s.Mount("late", 1, At(300), WithSchema("package late\n"))
	got, err = Reflect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	checkReflected(t, got, append(want, ReflectedService{Name: "late", Base: 300, Methods: 1, Schema: "package late\n"}))
	if n := s.MethodName(ReflectionMethod); n != ReflectionMethodName {
		t.Errorf("MethodName(ReflectionMethod) = %q", n)
	}
	if n := c.MethodName(ReflectionMethod); n != ReflectionMethodName {
		t.Errorf("Client.MethodName(ReflectionMethod) = %q", n)
	}
}

// TestReflectionNoServices: a server with nothing mounted answers an
// empty list.
func TestReflectionNoServices(t *testing.T) {
	_, addr, _ := testServer(t, WithReflection())
	got, err := Reflect(context.Background(), dial(t, addr))
	if err != nil || len(got) != 0 {
		t.Fatalf("Reflect: %v, %v; want no service and no error", got, err)
	}
}

func checkReflected(t *testing.T, got, want []ReflectedService) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d services, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("service %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestReflectionOff: a server without WithReflection answers the
// reflection ordinal exactly as it answers an ordinal it does not serve,
// byte for byte on the canonical wire, and Reflect says so.
func TestReflectionOff(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("a.A", 1, WithSchema(reflSchemaA))
	_, err := Reflect(context.Background(), dial(t, addr))
	if err == nil || !IsNoSuchMethod(err) || !strings.Contains(err.Error(), "does not serve reflection") {
		t.Fatalf("Reflect: %v; want a 404 no such method saying the server does not serve reflection", err)
	}
	rc := rawDial(t, addr)
	answer := func(method uint32) []byte {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: 7}))
		kind, env, ok := rc.recv()
		if !ok || kind != wire.KindResponse {
			t.Fatalf("method %#x: kind %d, ok %v", method, kind, ok)
		}
		return env
	}
	if refl, other := answer(ReflectionMethod), answer(ReflectionMethod+1); !bytes.Equal(refl, other) {
		t.Errorf("the reflection ordinal is answered\n%x\nan unknown one\n%x", refl, other)
	}
}

// TestReflectionIntercepted: the server's interceptors run around the
// reflection service, so one that refuses a caller refuses it there too.
func TestReflectionIntercepted(t *testing.T) {
	var seen []uint32
	var mu sync.Mutex
	deny := func(ctx context.Context, method uint32, req, resp []byte, h Handler) ([]byte, error) {
		mu.Lock()
		seen = append(seen, method)
		mu.Unlock()
		return resp, Errorf(StatusForbidden, "no")
	}
	_, addr, _ := testServer(t, WithReflection(), WithInterceptors(deny))
	_, err := Reflect(context.Background(), dial(t, addr))
	if Code(err) != StatusForbidden {
		t.Fatalf("Reflect: %v; want 403", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != ReflectionMethod {
		t.Errorf("the interceptor saw %v, want [%d]", seen, ReflectionMethod)
	}
}

// TestReflectionBuiltOnce: callers racing after a mount get one answer,
// built once; a mount builds the next.
func TestReflectionBuiltOnce(t *testing.T) {
	s := NewServer(WithReflection())
	defer s.Close()
	s.Mount("a.A", 1, WithSchema(reflSchemaA))
	bodies := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = s.reflectionBody()
		}()
	}
	wg.Wait()
	for _, b := range bodies[1:] {
		if &b[0] != &bodies[0][0] {
			t.Fatal("the answer was built more than once")
		}
	}
	s.Mount("b.B", 1, At(10))
	if b := s.reflectionBody(); &b[0] == &bodies[0][0] {
		t.Fatal("the answer was not rebuilt after a mount")
	}
}
