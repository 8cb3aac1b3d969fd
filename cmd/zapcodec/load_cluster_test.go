package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/internal/dnstest"
)

// -addr takes a cluster target: the calls go through one rpc/cluster
// client and are spread over the replicas; the wire bytes are counted
// from the calls, and equal those of a plain run.
func TestLoadClusterTarget(t *testing.T) {
	t.Parallel()
	var na, nb atomic.Int64
	a := loadServerHook(t, func() { na.Add(1) })
	b := loadServerHook(t, func() { nb.Add(1) })
	for _, target := range []string{"static:///" + a + "," + b, "static:///" + a} {
		code, out, errOut := loadRun(t, "-addr", target, "-n", "400", "-c", "2", "-concurrency", "4",
			"-method", "1", "-payload-hex", loadRequestHex, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", target, code, errOut)
		}
		rep := loadReport(t, out)
		loadCheckClean(t, rep)
		if rep.Calls != 400 || rep.Addr != target {
			t.Fatalf("%s: %d calls, addr %q", target, rep.Calls, rep.Addr)
		}
		// Request frame 5 + 44 + 74 bytes, answer 5 + 36 + 24, as in
		// TestLoadOneSecond, plus the health checks of the replicas.
		if rep.BytesOut < rep.Calls*123 || rep.BytesOut > rep.Calls*123+1024 ||
			rep.BytesIn < rep.Calls*65 || rep.BytesIn > rep.Calls*65+1024 {
			t.Fatalf("%s: bytes out %d in %d for %d calls", target, rep.BytesOut, rep.BytesIn, rep.Calls)
		}
		if !strings.Contains(errOut, "connections per replica") {
			t.Fatalf("%s: stderr %q", target, errOut)
		}
		if na.Load() == 0 || nb.Load() == 0 {
			t.Fatalf("%s: the replicas ran %d and %d calls: not spread", target, na.Load(), nb.Load())
		}
	}
	// No replica up: a clear error at once.
	code, _, errOut := loadRun(t, "-addr", "static:///127.0.0.1:1", "-n", "1", "-method", "1", "-payload-hex", "00")
	if code != 1 || !strings.Contains(errOut, "no replica of static:///127.0.0.1:1 is up") || strings.Contains(errOut, "-tls") {
		t.Fatalf("a cluster target with no replica up: exit %d, %q", code, errOut)
	}
	// A name that does not resolve: the resolver's error, not a guess.
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	target := "dns://" + dns.Addr() + "/nosuch.svc.test:1"
	code, _, errOut = loadRun(t, "-addr", target, "-n", "1", "-method", "1", "-payload-hex", "00")
	if code != 1 || !strings.Contains(errOut, "resolving") || strings.Contains(errOut, "no address resolved") {
		t.Fatalf("a cluster target whose name does not resolve: exit %d, %q", code, errOut)
	}
	code, _, errOut = loadRun(t, "-addr", "static:///"+a, "-client", "direct", "-concurrency", "1", "-method", "1", "-payload-hex", "00")
	if code != 2 || !strings.Contains(errOut, "cannot call a cluster target") {
		t.Fatalf("-client direct with a cluster target: exit %d, %q", code, errOut)
	}
	code, _, errOut = loadRun(t, "-addr", "nope:///x", "-n", "1", "-method", "1", "-payload-hex", "00")
	if code != 1 || !strings.Contains(errOut, "unknown scheme") {
		t.Fatalf("a bad target: exit %d, %q", code, errOut)
	}
}
