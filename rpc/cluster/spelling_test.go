package cluster

import (
	"net"
	"testing"
)

// Spellings of one IP address and port (an IPv4-mapped IPv6 address, in
// full or in hex, a port with leading zeros) make one replica: each made
// a replica of its own, so the server got a share of the calls per
// spelling, and the ejection cap counted it as several replicas.
func TestAddressSpellingsOneReplica(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, "spellings", WithResolver(Static(
		r.addr,
		"[::ffff:127.0.0.1]:"+port,
		"[::ffff:7f00:1]:"+port,
		"127.0.0.1:0"+port,
	)))
	st := c.Stats()
	if len(st.Replicas) != 1 || st.Replicas[0].Addr != r.addr {
		t.Fatalf("replicas %+v, want one, %s", st.Replicas, r.addr)
	}
	if _, err := c.Call(t.Context(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
}

// The canonical spelling of an address: an IP address and port as
// net/netip writes them (an IPv4-mapped IPv6 address as IPv4), a host name
// and port with the name in lower case, anything else (a socket path,
// garbage) as given.
func TestCanonicalAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.0.0.1:7700", "10.0.0.1:7700"},
		{"10.0.0.1:07700", "10.0.0.1:7700"},
		{"[::ffff:10.0.0.1]:7700", "10.0.0.1:7700"},
		{"[0:0:0:0:0:0:0:1]:7700", "[::1]:7700"},
		{"[2001:DB8::1]:7700", "[2001:db8::1]:7700"},
		{"[fe80::1%eth0]:7700", "[fe80::1%eth0]:7700"},
		{"eth.svc:7700", "eth.svc:7700"},
		{"Eth.SVC:7700", "eth.svc:7700"},
		{"Example.com:http", "example.com:http"},
		{"[FE80::1%Eth0]:7700", "[fe80::1%Eth0]:7700"},
		{"[FE80::1%Eth0]:x", "[FE80::1%Eth0]:x"},
		{"Example.com", "Example.com"},
		{"/tmp/A.sock:80", "/tmp/A.sock:80"},
		{"/tmp/a.sock", "/tmp/a.sock"},
		{"", ""},
		{"10.0.0.1", "10.0.0.1"},
	} {
		if got := canonicalAddr(tc.in); got != tc.want {
			t.Errorf("canonicalAddr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Host names that differ only in case name one host (DNS names are
// case-insensitive): one replica, keyed by the name in lower case. Each
// spelling was a replica of its own.
func TestHostNameCaseOneReplica(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, "host case", WithResolver(Static(
		"LocalHost:"+port,
		"localhost:"+port,
		"LOCALHOST:"+port,
	)))
	st := c.Stats()
	if want := "localhost:" + port; len(st.Replicas) != 1 || st.Replicas[0].Addr != want {
		t.Fatalf("replicas %+v, want one, %s", st.Replicas, want)
	}
}
