package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power-of-two range of values
// is split into 1<<subBits buckets, so a recorded value is known to within
// 1/128 of itself (0.8%); values below 256 are exact.
const subBits = 7

const (
	halfCount  = 1 << subBits                   // buckets per power of two
	numBuckets = (64 - subBits + 1) * halfCount // covers every uint64
)

// Histogram counts values (nanoseconds, for latencies) in log-linear
// buckets, in the manner of HdrHistogram: exact below 256, then 128 buckets
// per power of two. Record allocates nothing. The zero value is ready to
// use; a Histogram is about 60 KB, so keep it behind a pointer. Not safe
// for concurrent use: give each goroutine its own and Merge them.
type Histogram struct {
	counts [numBuckets]uint64
	total  uint64
	sum    float64
	min    uint64
	max    uint64
}

// bucketOf returns the index of v's bucket: with shift = the number of low
// bits dropped (0 for v < 256), index = shift*halfCount + v>>shift.
func bucketOf(v uint64) int {
	shift := bits.Len64(v) - (subBits + 1)
	if shift < 0 {
		shift = 0
	}
	return shift*halfCount + int(v>>uint(shift))
}

// bucketHigh returns the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < 2*halfCount {
		return uint64(i)
	}
	shift := uint(i/halfCount - 1)
	top := uint64(i - int(shift)*halfCount)
	return (top+1)<<shift - 1
}

// Record adds one value.
func (h *Histogram) Record(v uint64) {
	h.counts[bucketOf(v)]++
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.total++
	h.sum += float64(v)
}

// recordSpan adds n values of one bucket, the least lo and the greatest
// hi, whose sum is sum.
func (h *Histogram) recordSpan(lo, hi, n uint64, sum float64) {
	if n == 0 {
		return
	}
	h.counts[bucketOf(lo)] += n
	if h.total == 0 || lo < h.min {
		h.min = lo
	}
	if hi > h.max {
		h.max = hi
	}
	h.total += n
	h.sum += sum
}

// RecordDuration adds d in nanoseconds; a negative d counts as 0.
func (h *Histogram) RecordDuration(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.Record(uint64(d))
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.total += o.total
	h.sum += o.sum
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count returns the number of values recorded.
func (h *Histogram) Count() uint64 { return h.total }

// Min returns the smallest value recorded (exact), 0 when empty.
func (h *Histogram) Min() uint64 { return h.min }

// Max returns the largest value recorded (exact), 0 when empty.
func (h *Histogram) Max() uint64 { return h.max }

// Mean returns the mean of the values recorded (exact up to float64
// rounding), 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}

// Quantile returns the value at quantile q (0..1): the upper end of the
// bucket holding the ceil(q*count)-th smallest value, capped at Max, so it
// overstates by at most 1/128 and never understates. Quantiles are
// monotonic in q. It returns 0 when empty.
func (h *Histogram) Quantile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank > h.total {
		rank = h.total
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketHigh(i)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}
