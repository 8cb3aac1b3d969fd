package cluster

import (
	"sync/atomic"
	"time"
)

// budget is the retry budget, a token bucket counted in thousandths of a
// retry: every call deposits ratio of a retry, every second adds
// perSecond retries (reckoned lazily, when a retry asks), a retry takes a
// whole one, and the bucket holds at most max(10 s of perSecond, 10)
// retries, so a long calm spell cannot save up a burst that multiplies the
// load of an outage. It starts holding one second's worth.
type budget struct {
	tokens  atomic.Int64 // milli-retries
	last    atomic.Int64 // nanoseconds since origin when perSecond was last added
	deposit int64        // per call
	rate    int64        // milli-retries a second
	cap     int64
	origin  time.Time
}

const milli = 1000

func (b *budget) init(ratio, perSecond float64) {
	b.deposit = int64(ratio * milli)
	b.rate = int64(perSecond * milli)
	b.cap = max(10*b.rate, 10*milli)
	b.origin = time.Now()
	b.tokens.Store(min(b.rate, b.cap))
}

// call records a call (a first attempt).
func (b *budget) call() {
	if b.deposit != 0 && b.tokens.Load() < b.cap {
		b.tokens.Add(b.deposit)
	}
}

// retry takes one retry from the budget; false when it is spent.
func (b *budget) retry() bool {
	if b.rate > 0 {
		now := int64(time.Since(b.origin))
		last := b.last.Load()
		if el := now - last; el >= int64(time.Millisecond) && b.last.CompareAndSwap(last, now) {
			add := el / int64(time.Millisecond) * b.rate / 1000
			for {
				t := b.tokens.Load()
				if t >= b.cap || b.tokens.CompareAndSwap(t, min(t+add, b.cap)) {
					break
				}
			}
		}
	}
	for {
		t := b.tokens.Load()
		if t < milli {
			return false
		}
		if b.tokens.CompareAndSwap(t, t-milli) {
			return true
		}
	}
}
