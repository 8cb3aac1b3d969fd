package cluster

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// budget is the retry budget, a token bucket counted in billionths of a
// retry (so that a ratio or a rate of a ten-thousandth still adds up):
// every call deposits ratio of a retry (at most 1), every second adds
// perSecond retries (reckoned lazily, when a retry asks, at most once a
// millisecond), a retry takes a whole one (given back when the retry found
// no replica, and nothing was sent), and the bucket holds at most
// max(10 s of perSecond, 10) retries, so a long calm spell cannot save up
// a burst that multiplies the load of an outage. It starts holding one
// second's worth. perSecond is held to maxRetryRate, so that the bucket
// (10 s of it, 1e18) and a deposit on top of it stay far inside an int64.
type budget struct {
	tokens atomic.Int64 // billionths of a retry
	// last is the time, in nanoseconds since origin, up to which perSecond
	// has been added: a refill moves it by the time it turned into whole
	// billionths, so that the rest counts towards the next one.
	last    atomic.Int64
	deposit int64 // per call, at most unit
	rate    int64 // billionths of a retry a second, at most maxRetryRate*unit
	cap     int64
	origin  time.Time
}

const (
	// unit is one retry in the budget's tokens.
	unit = 1_000_000_000
	// maxRetryRate is the most retries a second the budget counts (a
	// larger perSecond is taken as this): far more than any client sends,
	// and 10 s of it in billionths (1e18) fits an int64 with room over.
	maxRetryRate = 100_000_000
)

// init sets the budget up for ratio and perSecond, both >= 0 (options
// refuses negative ones); a ratio above 1 counts as 1, a perSecond above
// maxRetryRate as maxRetryRate (+Inf too).
func (b *budget) init(ratio, perSecond float64) {
	b.deposit = int64(math.Round(min(ratio, 1) * unit))
	b.rate = int64(math.Round(min(perSecond, maxRetryRate) * unit))
	b.cap = max(10*b.rate, 10*unit)
	b.origin = time.Now()
	b.last.Store(0)
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
		if el := now - last; el >= int64(time.Millisecond) {
			b.refill(last, el)
		}
	}
	for {
		t := b.tokens.Load()
		if t < unit {
			return false
		}
		if b.tokens.CompareAndSwap(t, t-unit) {
			return true
		}
	}
}

// refund gives back a retry that retry took and that was not sent (it
// found no replica), as far as the bucket holds.
func (b *budget) refund() {
	for {
		t := b.tokens.Load()
		if t >= b.cap || b.tokens.CompareAndSwap(t, min(t+unit, b.cap)) {
			return
		}
	}
}

// refill adds what el nanoseconds after last are worth, and moves last on
// by the time that made whole billionths (unless another refill moved
// it first). el*rate is reckoned in 128 bits: neither a long calm spell
// nor a large rate overflows it.
func (b *budget) refill(last, el int64) {
	hi, lo := bits.Mul64(uint64(el), uint64(b.rate))
	add, used := b.cap, el // worth more than the bucket holds: fill it
	if hi < uint64(time.Second) {
		q, rem := bits.Div64(hi, lo, uint64(time.Second))
		if q < uint64(b.cap) {
			// rem/rate nanoseconds (less than a billionth's worth) are left over.
			add, used = int64(q), el-int64(rem/uint64(b.rate))
		}
	}
	if add == 0 || !b.last.CompareAndSwap(last, last+used) {
		return
	}
	for {
		t := b.tokens.Load()
		if t >= b.cap || b.tokens.CompareAndSwap(t, min(t+add, b.cap)) {
			return
		}
	}
}
