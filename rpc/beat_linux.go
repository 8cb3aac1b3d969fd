package rpc

import "time"

// timerClock is the beat's clock on Linux: a timerfd (timerfd_linux.go).
// While the beat waits for it no runtime timer is pending.
type timerClock struct{ t *timerfd }

// newBeatClock returns a timerfd clock, or a ticker when the kernel
// refuses a timerfd.
func newBeatClock() beatClock {
	if t := newTimerfd("rpc-beat"); t != nil {
		return &timerClock{t}
	}
	return newTickerClock()
}

// set makes wait return every d from now (0: never). It worked at
// creation, with the same descriptor and arguments of the same form: it
// does not fail now.
func (c *timerClock) set(d time.Duration) { c.t.set(d, d) }

func (c *timerClock) wait() {
	if !c.t.read() {
		time.Sleep(beatMin) // not expected from a timerfd; do not spin
	}
}
