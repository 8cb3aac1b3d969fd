package rpc

import "time"

// fdTimer is a wdTimer on a timerfd (timerfd_linux.go): the watchdog
// goroutine parks like one waiting for a socket, and no runtime timer is
// pending while it sleeps (see wdTimer).
type fdTimer struct {
	t *timerfd
	d time.Duration // of the last reset; negative when it could not be armed
}

// newOSTimer returns a timerfd timer, or nil when one cannot be made.
func newOSTimer() wdTimer {
	if t := newTimerfd("rpc-watchdog-timerfd"); t != nil {
		return &fdTimer{t: t}
	}
	return nil
}

func (t *fdTimer) reset(d time.Duration) {
	t.d = max(d, 1)
	if !t.t.set(t.d, 0) {
		t.d = -t.d // wait sleeps instead
	}
}

// wait returns when the timer has fired. A timer that could not be armed
// or read (it does not happen: a descriptor the kernel gave us and we
// alone use) sleeps for its delay instead, so that the watchdog never
// spins.
func (t *fdTimer) wait() {
	if t.d < 0 {
		time.Sleep(-t.d)
		return
	}
	if !t.t.read() {
		time.Sleep(t.d)
	}
}

func (t *fdTimer) close() { t.t.f.Close() }
