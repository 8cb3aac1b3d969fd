package rpc

import (
	"testing"
	"time"
)

// Re-arming a timerfd allocates nothing: a server's watchdog re-arms its
// timer at every tick, up to a thousand times a second (every 1 ms while
// no read loop scans for it: an inline handler running long, a
// connection on its list), the beat its clock when its period changes.
// The re-armed timer still fires.
func TestTimerfdSetAllocatesNothing(t *testing.T) {
	tf := newTimerfd("rpc-test-timerfd")
	if tf == nil {
		t.Skip("no timerfd on this machine")
	}
	defer tf.f.Close()
	wd := &fdTimer{t: tf}
	if n := testing.AllocsPerRun(100, func() { wd.reset(time.Hour) }); n != 0 {
		t.Errorf("re-arming the watchdog's timer: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { tf.set(time.Hour, time.Hour) }); n != 0 {
		t.Errorf("setting a periodic timerfd: %v allocs, want 0", n)
	}
	wd.reset(time.Millisecond)
	wd.wait()
	if wd.d != time.Millisecond {
		t.Errorf("the timer could not be armed (d %v): wait slept instead", wd.d)
	}
}
