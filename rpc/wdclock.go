package rpc

import (
	"sync/atomic"
	"time"
)

// wdTimer is the watchdog's one-shot timer: reset arms it d from now,
// wait blocks until it fires, close releases it (only the watchdog
// goroutine uses it).
//
// Why not a plain time.Timer: while a runtime timer waits in a P's heap,
// every scheduling on that P reads the clock (runtime.(*timers).check),
// which costs some tens of ns on a virtual clock; a server answering
// calls schedules its goroutines about once per call, and the watchdog's
// timer is pending as long as calls flow. On Linux the watchdog sleeps on
// a timerfd read through the network poller instead (wdclock_linux.go):
// the kernel keeps that timer, and the scheduler's runtime timer heaps
// stay empty. Elsewhere, or when the timerfd cannot be made, it is a
// time.Timer.
type wdTimer interface {
	reset(d time.Duration)
	wait()
	close()
}

// wdGoTimerOnly, when set (tests), makes newWDTimer return the time.Timer
// one, so that both are tested on Linux.
var wdGoTimerOnly atomic.Bool

// newWDTimer returns an unarmed timer: the OS one when it can.
func newWDTimer() wdTimer {
	if !wdGoTimerOnly.Load() {
		if t := newOSTimer(); t != nil {
			return t
		}
	}
	t := &goTimer{t: time.NewTimer(time.Hour)}
	t.t.Stop()
	return t
}

// goTimer is a wdTimer on a time.Timer.
type goTimer struct{ t *time.Timer }

func (g *goTimer) reset(d time.Duration) { g.t.Reset(d) }
func (g *goTimer) wait()                 { <-g.t.C }
func (g *goTimer) close()                { g.t.Stop() }
