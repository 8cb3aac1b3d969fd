package cluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   any
	}{
		{"dns:///eth.svc:7700", &DNS{Host: "eth.svc", Port: 7700}},
		{"dns+srv:///_zap._tcp.eth.svc", &SRV{Name: "_zap._tcp.eth.svc"}},
		{"static:///a:1,b:2", static{"a:1", "b:2"}},
		{"a:1, b:2,", static{"a:1", "b:2"}},
		{"127.0.0.1:7700", static{"127.0.0.1:7700"}},
		// Socket paths (WithNetwork("unix")): the slash that ends
		// "static://" begins an absolute path.
		{"static:///tmp/a.sock,/tmp/b.sock", static{"/tmp/a.sock", "/tmp/b.sock"}},
		{"static:////tmp/a.sock", static{"/tmp/a.sock"}},
		{"static:///a.sock,b.sock", static{"a.sock", "b.sock"}},
		{"/tmp/a.sock,/tmp/b.sock", static{"/tmp/a.sock", "/tmp/b.sock"}},
	} {
		r, err := ParseTarget(tc.target)
		if err != nil {
			t.Fatalf("%q: %v", tc.target, err)
		}
		switch w := tc.want.(type) {
		case *DNS:
			g, ok := r.(*DNS)
			if !ok || g.Host != w.Host || g.Port != w.Port || g.Resolver != nil {
				t.Fatalf("%q: %#v", tc.target, r)
			}
		case *SRV:
			g, ok := r.(*SRV)
			if !ok || g.Name != w.Name || g.Resolver != nil {
				t.Fatalf("%q: %#v", tc.target, r)
			}
		case static:
			got, _ := r.Resolve(context.Background())
			if !slices.Equal(got, w) {
				t.Fatalf("%q: %v", tc.target, got)
			}
		}
	}
	// An authority names the DNS server to ask.
	r, err := ParseTarget("dns://10.0.0.2/eth.svc:7700")
	if err != nil || r.(*DNS).Resolver == nil {
		t.Fatalf("%#v %v", r, err)
	}
}

// A target's authority names the DNS server, on port 53 unless it gives
// one; an IPv6 address in brackets used to become "[[::1]]:53".
func TestDNSServerAuthority(t *testing.T) {
	for _, tc := range []struct{ authority, want string }{
		{"127.0.0.1", "127.0.0.1:53"},
		{"127.0.0.1:5353", "127.0.0.1:5353"},
		{"[::1]", "[::1]:53"},
		{"[::1]:5353", "[::1]:5353"},
		{"::1", "[::1]:53"},
		{"dns.example", "dns.example:53"},
	} {
		if got := dnsServer(tc.authority); got != tc.want {
			t.Errorf("dnsServer(%q) = %q, want %q", tc.authority, got, tc.want)
		}
	}
	// Through ParseTarget, to the address its resolver dials (a UDP
	// socket connects without a packet sent).
	if nc, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback (%v): the dial not checked", err)
	} else {
		nc.Close()
		r, err := ParseTarget("dns://[::1]/eth.svc:7700")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := r.(*DNS).Resolver.Dial(context.Background(), "udp", "ignored:53")
		if err != nil {
			t.Fatalf("the resolver of dns://[::1]/...: %v", err)
		}
		defer conn.Close()
		if got := conn.RemoteAddr().String(); got != "[::1]:53" {
			t.Fatalf("the resolver of dns://[::1]/... asks %s", got)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"dns:///eth.svc:7700", "dns://1.2.3.4:53/h:1", "dns+srv:///_a._tcp.b", "static:///a:1,b:2", "a:1", "", "://", "dns:///[::1]:80", "static:///tmp/a.sock,/tmp/b.sock", "dns://[::1]/h:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		r, err := ParseTarget(target)
		if err != nil {
			if !errors.Is(err, ErrTarget) {
				t.Fatalf("%q: error %v does not match ErrTarget", target, err)
			}
			return
		}
		if r == nil {
			t.Fatalf("%q: nil resolver and no error", target)
		}
		if s, ok := r.(static); ok {
			if len(s) == 0 {
				t.Fatalf("%q: an empty static list", target)
			}
		}
	})
}
