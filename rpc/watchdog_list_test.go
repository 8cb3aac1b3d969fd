package rpc

import (
	"context"
	"testing"
	"time"
)

// A connection that runs calls inline stays on the watchdog's list while
// calls keep coming, though no scan finds one running (each is far
// shorter than the scans' interval), and leaves it after wdForget scans
// with none. The scans here are the test's own, at times an hour ahead
// (so that the server's own scans, which come at least wdTick after the
// latest, wait for them): each call ends before the scan after it. The
// first one comes before the calls: until it, the server's scans run on
// the real clock, and under load (-race, busy cores) three of them,
// between the first call's answer and the test's first scan (whose wait
// for the answer's write polls), had counted the connection quiet, and
// the test's scan took it off the list ("off the watchdog's list after 1
// calls", about 5 runs in 1,000).
// Before serverConn.ran, the connection left the list at the third scan
// and came back at the next call, about 300 times a second under load.
func TestBusyConnStaysListed(t *testing.T) {
	// No read limits: a scan an hour ahead would end the waits they
	// bound (pokeRead), which keeps a connection listed on its own.
	s, addr, _ := testServer(t, WithReadTimeout(0), WithIdleTimeout(0))
	c := dial(t, addr)
	call := func() {
		if out, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
			t.Fatalf("call: %q %v", out, err)
		}
	}
	call()
	sc := serverConnOf(t, s)
	at := monoNow() + int64(time.Hour)
	scan := func() {
		// Once the answer's write has returned: a scan an hour ahead
		// would take a write under way for stuck (pokeWrite), which
		// keeps a connection listed on its own.
		await(t, "the answer's write over", func() bool { return sc.out.wsince.Load() == 0 })
		at += int64(2 * wdTick)
		s.wdMu.Lock()
		s.scanLocked(at)
		s.wdMu.Unlock()
	}
	// The clock is the test's from here on. The server's scans may have
	// taken the connection off the list already, or this one may: the
	// next call puts it back.
	scan()
	for i := range 4 * wdForget {
		call()
		scan()
		if !sc.wdListed.Load() {
			t.Fatalf("off the watchdog's list after %d calls, each followed by a scan", i+1)
		}
	}
	for i := range wdForget {
		if !sc.wdListed.Load() {
			t.Fatalf("off the list after %d quiet scans, want %d", i, wdForget)
		}
		scan()
	}
	if sc.wdListed.Load() {
		t.Fatalf("still listed after %d quiet scans", wdForget)
	}
	call() // listed again, and answered
	if !sc.wdListed.Load() {
		t.Fatal("not listed after a call")
	}
}
