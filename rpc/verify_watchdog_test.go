package rpc

import "testing"

// The watchdog's scan before it parks must see a handler that started
// inline after the latest scan, even when that scan is less than wdTick
// old (a read loop's, or the watchdog's own a moment before): the read
// loop running it checked wdParked before the watchdog set it, so it did
// not wake the watchdog, and with the watchdog parked nothing would take
// the stuck handler's read loop over (the calls behind it on the
// connection would wait for it, for ever if it waits for one of them).
// scan answered from the previous scan when it was less than wdTick
// old: it reported no handler, and the watchdog parked.
func TestWatchdogParkScanSeesNewHandler(t *testing.T) {
	s := NewServer(WithLogger(discardLogger()))
	c := &serverConn{s: s}
	s.watch(c)
	now := monoNow() + int64(wdTick) // after any scan so far
	if s.scan(now) {
		t.Fatal("a handler runs inline on an idle connection")
	}
	// A handler starts inline on c; the watchdog is about to park and
	// scans once more, 1 ns later.
	c.seq++
	c.inl.Store(c.seq)
	if !s.scan(now + 1) {
		t.Fatal("the scan before parking did not see the handler that started after the previous scan")
	}
	// Too soon to take it over: two scans at least wdTick apart see it first.
	if c.inl.Load() == readerTaken {
		t.Fatal("taken over by two scans 1 ns apart")
	}
	if !s.scan(now+int64(wdTick)+1) || c.inl.Load() != c.seq {
		t.Fatal("first scan a tick later: want the handler seen, not taken over")
	}
}
