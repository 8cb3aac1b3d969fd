package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

func healthServer(t *testing.T) (*rpc.Server, string) {
	t.Helper()
	s := rpc.NewServer()
	s.Mount("pkg.A", 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

func runHealthCmd(args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = run(append([]string{"health"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// zapcodec health over TCP: exit 0 and "serving" only when serving.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	s, addr := healthServer(t)
	for _, tc := range []struct {
		args     []string
		set      func()
		code     int
		out, err string
	}{
		{args: []string{"-addr", addr}, code: 0, out: "serving\n"},
		{args: []string{"-addr", addr, "-service", "pkg.A"}, code: 0, out: "serving\n"},
		{args: []string{"-addr", addr, "-service", "pkg.B"}, code: 1, out: "unknown\n", err: "status 404"},
		{args: []string{"-addr", addr, "-service", "pkg.A"}, set: func() { s.Health().Set("pkg.A", rpc.HealthNotServing) }, code: 1, out: "not serving\n"},
		{args: []string{"-addr", addr}, code: 0, out: "serving\n"},
		{args: []string{"-addr", addr}, set: func() { s.Health().Set("", rpc.HealthDraining) }, code: 1, out: "draining\n"},
		{args: nil, code: 2, err: "-addr is required"},
		{args: []string{"-addr", addr, "-network", "udp"}, code: 2, err: "want tcp or unix"},
		{args: []string{"-addr", addr, "extra"}, code: 2, err: "-addr is required"},
		{args: []string{"-addr", "dns:///" + addr}, code: 2, err: "-addr dns:///" + addr + ": a cluster target (dns://); this command dials one address, host:port"},
	} {
		if tc.set != nil {
			tc.set()
		}
		code, out, errOut := runHealthCmd(tc.args...)
		if code != tc.code || out != tc.out || !strings.Contains(errOut, tc.err) {
			t.Errorf("health %v: exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
	// A server that is gone: the dial fails, and the command says so as a
	// failed check does: "unknown" on stdout, the error on stderr, exit 1.
	s.Close()
	if code, out, errOut := runHealthCmd("-addr", addr); code != 1 || out != "unknown\n" || errOut == "" {
		t.Errorf("closed server: exit %d, stdout %q, stderr %q; want 1, \"unknown\\n\", an error", code, out, errOut)
	}
}
