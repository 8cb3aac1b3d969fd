package dnstest

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestResolveAddrs(t *testing.T) {
	s := start(t)
	r := s.Resolver()
	ctx := ctx30(t)
	s.SetAddrs("Eth.Svc.Test.", netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("::1"))
	got, err := r.LookupNetIP(ctx, "ip", "eth.svc.test")
	if err != nil {
		t.Fatal(err)
	}
	var ss []string
	for _, a := range got {
		ss = append(ss, a.String())
	}
	slices.Sort(ss)
	if want := []string{"127.0.0.2", "127.0.0.3", "::1"}; !slices.Equal(ss, want) {
		t.Fatalf("got %v, want %v", ss, want)
	}
	v4, err := r.LookupNetIP(ctx, "ip4", "eth.svc.test")
	if err != nil || len(v4) != 2 {
		t.Fatalf("ip4: %v %v", v4, err)
	}

	// Records change at run time.
	s.SetAddrs("eth.svc.test", netip.MustParseAddr("127.0.0.9"))
	got, err = r.LookupNetIP(ctx, "ip4", "eth.svc.test")
	if err != nil || len(got) != 1 || got[0].String() != "127.0.0.9" {
		t.Fatalf("after the change: %v %v", got, err)
	}

	s.SetAddrs("eth.svc.test")
	_, err = r.LookupNetIP(ctx, "ip", "eth.svc.test")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("removed name: %v, want not found", err)
	}
	if s.Queries() == 0 {
		t.Fatal("no query counted")
	}
}

func TestResolveSRV(t *testing.T) {
	s := start(t)
	r := s.Resolver()
	ctx := ctx30(t)
	s.SetSRV("_zap._tcp.eth.svc.test",
		SRV{Priority: 1, Weight: 10, Port: 7701, Target: "r1.eth.svc.test"},
		SRV{Priority: 1, Weight: 10, Port: 7702, Target: "r2.eth.svc.test."})
	_, srvs, err := r.LookupSRV(ctx, "", "", "_zap._tcp.eth.svc.test")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range srvs {
		got = append(got, net.JoinHostPort(v.Target, itoa(v.Port)))
	}
	slices.Sort(got)
	if want := []string{"r1.eth.svc.test.:7701", "r2.eth.svc.test.:7702"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	_, srvs, err = r.LookupSRV(ctx, "zap", "tcp", "eth.svc.test")
	if err != nil || len(srvs) != 2 {
		t.Fatalf("service form: %v %v", srvs, err)
	}
}

func itoa(p uint16) string { return netip.AddrPortFrom(netip.IPv4Unspecified(), p).String()[8:] }

func query(name string, typ uint16) []byte {
	m := binary.BigEndian.AppendUint16(nil, 0x1234)
	m = binary.BigEndian.AppendUint16(m, 0x0100)
	m = binary.BigEndian.AppendUint16(m, 1)
	m = append(m, 0, 0, 0, 0, 0, 0)
	m = appendName(m, name)
	m = binary.BigEndian.AppendUint16(m, typ)
	return binary.BigEndian.AppendUint16(m, ClassIN)
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(query("A.b.C", TypeSRV))
	if err != nil || q.Name != "a.b.c" || q.Type != TypeSRV || q.Class != ClassIN || q.ID != 0x1234 {
		t.Fatalf("%+v %v", q, err)
	}
	good := query("a.b", TypeA)
	for i := 0; i < len(good); i++ {
		if _, err := ParseQuery(good[:i]); err == nil {
			t.Fatalf("a query cut to %d bytes parsed", i)
		}
	}
	ptr := append(append([]byte(nil), good[:12]...), 0xC0, 12, 0, 1, 0, 1)
	if _, err := ParseQuery(ptr); !errors.Is(err, ErrName) {
		t.Fatalf("compressed question: %v", err)
	}
	resp := append([]byte(nil), good...)
	resp[2] |= 0x80
	if _, err := ParseQuery(resp); !errors.Is(err, ErrNotQuery) {
		t.Fatalf("response: %v", err)
	}
}

func FuzzParseQuery(f *testing.F) {
	f.Add(query("eth.svc.test", TypeA))
	f.Add(query("_zap._tcp.eth.svc", TypeSRV))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		q, err := ParseQuery(msg)
		if err != nil {
			return
		}
		if q.QuestionEnd > len(msg) || len(q.Name) > 254 {
			t.Fatalf("%+v out of bounds for %d bytes", q, len(msg))
		}
		// The answer to any parsed query is built without panicking.
		s := &Server{addrs: map[string][]netip.Addr{q.Name: {netip.MustParseAddr("127.0.0.1")}}, srvs: map[string][]SRV{q.Name: {{Target: "x"}}}}
		out := s.answer(nil, msg, q)
		if len(out) < q.QuestionEnd {
			t.Fatal("short answer")
		}
	})
}
