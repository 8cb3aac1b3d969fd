package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The health service over TCP: the whole server, mounted services, set
// statuses (unknown too) and services never known.
func TestHealth(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("pkg.A", 3)
	s.Mount("pkg.B", 2, At(10))
	c := dial(t, addr)
	ctx := context.Background()
	check := func(service string, want HealthStatus, wantCode uint32) {
		t.Helper()
		st, err := CheckHealth(ctx, c, service)
		if st != want || Code(err) != wantCode {
			t.Fatalf("CheckHealth(%q) = %v, %v; want %v, status %d", service, st, err, want, wantCode)
		}
	}
	check("", HealthServing, 200)
	check("pkg.A", HealthServing, 200)
	check("pkg.B", HealthServing, 200)
	check("pkg.C", HealthUnknown, StatusNotFound)
	s.Health().Set("pkg.A", HealthNotServing)
	check("pkg.A", HealthNotServing, 200)
	check("pkg.B", HealthServing, 200)
	s.Health().Set("", HealthNotServing)
	check("", HealthNotServing, 200)
	s.Health().Set("pkg.C", HealthServing)
	check("pkg.C", HealthServing, 200)
	// A status set to unknown is answered as such, not as a service the
	// server does not know; only a name never known is a 404.
	s.Health().Set("pkg.C", HealthUnknown)
	check("pkg.C", HealthUnknown, 200)
	s.Health().Set("pkg.A", HealthUnknown)
	check("pkg.A", HealthUnknown, 200)
	check("pkg.D", HealthUnknown, StatusNotFound)
	s.Health().Set("", HealthUnknown)
	check("", HealthUnknown, 200)
	s.Health().Set("", HealthNotServing)

	// A malformed request is a 400, and the connection goes on.
	if _, err := c.Call(ctx, HealthMethod, []byte("not a message"), nil); Code(err) != StatusBadRequest {
		t.Fatalf("malformed health request: %v", err)
	}
	// The raw wire: an empty payload asks for the whole server; the answer
	// is a HealthCheckResponse.
	r := rawDial(t, addr)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: HealthMethod, PromiseID: 9}))
	resp := r.recvResponse()
	var hr HealthCheckResponse
	if resp.Status != StatusOK || resp.PromiseID != 9 || hr.DecodeZAP(resp.Body) != nil || hr.Status != uint32(HealthNotServing) {
		t.Fatalf("raw health answer: %+v %+v", resp, hr)
	}
	if HealthDraining.String() != "draining" || HealthStatus(9).String() != "HealthStatus(9)" {
		t.Fatal("HealthStatus.String")
	}
}

// SetAll sets the server and every service it knows at once (gRPC-go's
// health.Server Shutdown and Resume), so that a program that stops taking
// calls before Shutdown need not list its services; a name never known
// stays unknown, and a service mounted later starts serving.
func TestHealthSetAll(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("pkg.A", 3)
	s.Mount("pkg.B", 2, At(10))
	s.Health().Set("group", HealthServing) // known, not mounted
	c := dial(t, addr)
	ctx := context.Background()
	check := func(service string, want HealthStatus, wantCode uint32) {
		t.Helper()
		st, err := CheckHealth(ctx, c, service)
		if st != want || Code(err) != wantCode {
			t.Fatalf("CheckHealth(%q) = %v, %v; want %v, status %d", service, st, err, want, wantCode)
		}
	}
	s.Health().SetAll(HealthNotServing)
	for _, svc := range []string{"", "pkg.A", "pkg.B", "group"} {
		check(svc, HealthNotServing, 200)
	}
	check("pkg.C", HealthUnknown, StatusNotFound)
	s.Mount("pkg.D", 1, At(20))
	check("pkg.D", HealthServing, 200)
	s.Health().SetAll(HealthServing)
	for _, svc := range []string{"", "pkg.A", "pkg.B", "group", "pkg.D"} {
		check(svc, HealthServing, 200)
	}
	check("pkg.C", HealthUnknown, StatusNotFound)
}

// During Shutdown the server reports draining: to Health().Status, and to
// CheckHealth on a connection that got the go-away (ErrGoAway is draining).
func TestHealthDrainingOnShutdown(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("pkg.A", 1)
	started, release := make(chan struct{}), make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-release
		return resp, nil
	})
	c := dial(t, addr)
	c2 := dial(t, addr)
	ctx := context.Background()
	if st, err := CheckHealth(ctx, c2, "pkg.A"); st != HealthServing || err != nil {
		t.Fatalf("before shutdown: %v %v", st, err)
	}
	r := rawDial(t, addr)
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: HealthMethod, PromiseID: 1}))
	if resp := r.recvResponse(); resp.Status != StatusOK {
		t.Fatalf("raw check before shutdown: %+v", resp)
	}
	go c.Call(ctx, mSlow, nil, nil)
	<-started
	shut := make(chan error)
	go func() { shut <- s.Shutdown(ctx) }()
	await(t, "c2.Draining()", func() bool { return c2.Draining() })
	// A probe that dials anew (zapcodec health, a load balancer's) is
	// refused: Shutdown closed the listener as it began, so only the
	// connections made before see draining (rpc/README.md, "Health").
	if _, err := Dial(ctx, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a dial during shutdown: %v, want connection refused", err)
	}
	for _, svc := range []string{"", "pkg.A"} {
		if st := s.Health().Status(svc); st != HealthDraining {
			t.Fatalf("Status(%q) during shutdown: %v", svc, st)
		}
		if st, err := CheckHealth(ctx, c2, svc); st != HealthDraining || err != nil {
			t.Fatalf("CheckHealth(%q) during shutdown: %v %v", svc, st, err)
		}
	}
	// A peer that ignores the go-away has its check refused as not run
	// (which CheckHealth, on a Client, reports as draining).
	if kind, _, ok := r.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("raw peer: frame kind %d ok %v, want a go-away", kind, ok)
	}
	r.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: HealthMethod, PromiseID: 2}))
	if resp := r.recvResponse(); resp.Status != StatusUnavailable || !resp.NotRun {
		t.Fatalf("raw check after go-away: %+v", resp)
	}
	close(release)
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return within 30 s")
	}
}

// Mounting: ranges at offsets, and panics with a clear message on overlap,
// a second mount of a name, and a range past MaxMethod.
func TestMountCollisions(t *testing.T) {
	s := NewServer()
	if b := s.Mount("pkg.A", 3); b != 0 {
		t.Fatalf("base %d", b)
	}
	if b := s.Mount("pkg.B", 2, At(3)); b != 3 {
		t.Fatalf("base %d", b)
	}
	s.Mount("pkg.Empty", 0) // no ordinals: overlaps nothing
	panics := func(want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			msg, _ := r.(string)
			if !strings.Contains(msg, want) {
				t.Fatalf("panic %v, want one containing %q", r, want)
			}
		}()
		f()
	}
	panics(`service "pkg.C" at ordinals 1..1 overlaps service "pkg.A" at ordinals 1..3`, func() { s.Mount("pkg.C", 1) })
	panics(`service "pkg.C" at ordinals 5..6 overlaps service "pkg.B" at ordinals 4..5`, func() { s.Mount("pkg.C", 2, At(4)) })
	panics(`service "pkg.A" is mounted already`, func() { s.Mount("pkg.A", 3, At(100)) })
	panics("goes past MaxMethod", func() { s.Mount("pkg.D", 2, At(MaxMethod-1)) })
	panics("empty service name", func() { s.Mount("", 1, At(200)) })
	s.Mount("pkg.C", 2, At(5))
	if got := strings.Join(s.Services(), ","); got != "pkg.A,pkg.B,pkg.C,pkg.Empty" {
		t.Fatalf("Services: %s", got)
	}
	if MountBase() != 0 || MountBase(At(7), nil, At(9)) != 9 {
		t.Fatal("MountBase")
	}
}

// A health check of an unknown service answers 404 quoting at most 128
// bytes of its name, cut between whole characters, and its length: the
// whole name, quoted, made the answer up to four times the request (a
// peer's request of the largest frame had the server format 64 MiB, and
// then answer an empty 500, the answer too large for a frame).
func TestHealthUnknownLongName(t *testing.T) {
	const quoted = 128 // maxHealthNameQuoted
	_, addr, _ := testServer(t)
	c := dial(t, addr)
	name := strings.Repeat("\xff", 1<<20)
	st, err := CheckHealth(context.Background(), c, name)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusNotFound || st != HealthUnknown {
		t.Fatalf("check: %v %v, want unknown and a 404", st, err)
	}
	const none = "" // no listing without WithHealthListing
	want := "rpc: health: no such service \"" + strings.Repeat(`\xff`, quoted) + "\"... (1048576 bytes)" + none
	if se.BodyLen != 0 || se.Message != want { // BodyLen: the message was cut
		t.Fatalf("404 (cut from %d bytes): %.300q, want %q", se.BodyLen, se.Message, want)
	}
	// Cut between characters: the 3-byte "€" across the 128th byte is
	// dropped whole.
	name = strings.Repeat("a", quoted-1) + "€" + strings.Repeat("b", 100)
	_, err = CheckHealth(context.Background(), c, name)
	want = "rpc: health: no such service \"" + strings.Repeat("a", quoted-1) + "\"... (230 bytes)" + none
	if !errors.As(err, &se) || se.Message != want {
		t.Fatalf("check: %v, want the 404 %q", err, want)
	}
	// A short name is quoted whole.
	_, err = CheckHealth(context.Background(), c, "no.Such")
	if !errors.As(err, &se) || se.Message != `rpc: health: no such service "no.Such"`+none {
		t.Fatalf("check: %v", err)
	}
}

// With WithHealthListing, the 404 of a check of a service the server
// does not know names those it does (mounted or set), so that a caller
// who asked for "Shop" learns the name is "shop.Shop": at most 8, the
// first in byte order, each cut to 64 bytes, within about 256 bytes, and
// a count of the rest.
func TestHealthUnknownNamesKnown(t *testing.T) {
	s, addr, _ := testServer(t, WithHealthListing())
	c := dial(t, addr)
	notFound := func(service string) string {
		t.Helper()
		st, err := CheckHealth(context.Background(), c, service)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != StatusNotFound || st != HealthUnknown {
			t.Fatalf("check %q: %v %v, want unknown and a 404", service, st, err)
		}
		return se.Message
	}
	if got, want := notFound("Shop"), `rpc: health: no such service "Shop" (no service is known by name; "" checks the server)`; got != want {
		t.Fatalf("404:\n got %s\nwant %s", got, want)
	}
	s.Mount("shop.Shop", 2, At(100))
	if got, want := notFound("Shop"), `rpc: health: no such service "Shop" (known services: "shop.Shop")`; got != want {
		t.Fatalf("404:\n got %s\nwant %s", got, want)
	}

	// A name set without a mount is known too; the first 8 in byte order
	// are listed, the rest counted.
	for i := range 11 {
		s.Health().Set(fmt.Sprintf("svc.S%02d", i), HealthServing)
	}
	want := `rpc: health: no such service "Shop" (known services: "shop.Shop", "svc.S00", "svc.S01", "svc.S02", "svc.S03", "svc.S04", "svc.S05", "svc.S06" and 4 more)`
	if got := notFound("Shop"); got != want {
		t.Fatalf("404:\n got %s\nwant %s", got, want)
	}

	// Long names: each cut to 64 bytes, and the list stops within 256
	// bytes (the first name is listed whatever its length).
	long := strings.Repeat("x", 1000)
	s.Health().Set("a."+long, HealthServing)
	s.Health().Set("b."+long, HealthServing)
	s.Health().Set("c."+long, HealthServing)
	s.Health().Set("d."+long, HealthServing)
	cut := func(p string) string { return `"` + p + strings.Repeat("x", 62) + `"...` }
	want = `rpc: health: no such service "Shop" (known services: ` + cut("a.") + ", " + cut("b.") + ", " + cut("c.") + " and 13 more)"
	if got := notFound("Shop"); got != want {
		t.Fatalf("404:\n got %s\nwant %s", got, want)
	}
}

// By default the 404 of a check of an unknown service names no other
// service: the health service answers any peer, before any interceptor
// (an authenticating one included), so a list of the server's services
// in it told every unauthenticated peer what the server runs. gRPC's
// health service answers NOT_FOUND without a list too.
func TestHealthUnknownListsNothingByDefault(t *testing.T) {
	s, addr, _ := testServer(t)
	s.Mount("shop.Shop", 2, At(100))
	s.Health().Set("secret.Admin", HealthServing)
	c := dial(t, addr)
	st, err := CheckHealth(context.Background(), c, "Shop")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusNotFound || st != HealthUnknown {
		t.Fatalf("check: %v %v, want unknown and a 404", st, err)
	}
	if want := `rpc: health: no such service "Shop"`; se.Message != want {
		t.Fatalf("404: %q, want %q", se.Message, want)
	}
	// The known ones are answered as before.
	for _, name := range []string{"", "shop.Shop", "secret.Admin"} {
		if st, err := CheckHealth(context.Background(), c, name); err != nil || st != HealthServing {
			t.Fatalf("check %q: %v %v", name, st, err)
		}
	}
}
