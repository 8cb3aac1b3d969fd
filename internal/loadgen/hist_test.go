package loadgen

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	vals := []uint64{0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 1 << 20, 1<<20 + 12345, 1<<40 - 1, math.MaxUint64 - 1, math.MaxUint64}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0,%d)", v, i, numBuckets)
		}
		hi := bucketHigh(i)
		if hi < v {
			t.Fatalf("bucketHigh(bucketOf(%d)) = %d, below the value", v, hi)
		}
		if v < 2*halfCount && hi != v {
			t.Fatalf("small value %d not exact: bucket high %d", v, hi)
		}
		if float64(hi-v) > float64(v)/halfCount {
			t.Fatalf("value %d: bucket high %d, relative error above 1/%d", v, hi, halfCount)
		}
		if i > 0 && bucketHigh(i-1) >= v {
			t.Fatalf("value %d: previous bucket %d already reaches %d", v, i-1, bucketHigh(i-1))
		}
	}
}

func TestQuantilesAgainstSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 10, 1000, 54321} {
		h := new(Histogram)
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = uint64(r.ExpFloat64() * 200000) // latency-like: ~200 µs mean
			h.Record(vals[i])
		}
		slices.Sort(vals)
		if h.Count() != uint64(n) || h.Min() != vals[0] || h.Max() != vals[n-1] {
			t.Fatalf("n=%d: count/min/max %d/%d/%d, want %d/%d/%d", n, h.Count(), h.Min(), h.Max(), n, vals[0], vals[n-1])
		}
		prev := uint64(0)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := int(math.Ceil(q * float64(n)))
			want := vals[rank-1]
			got := h.Quantile(q)
			if got < want || float64(got-want) > float64(want)/halfCount {
				t.Errorf("n=%d q=%v: got %d, exact %d (allowed +1/%d)", n, q, got, want, halfCount)
			}
			if got < prev {
				t.Errorf("n=%d q=%v: %d below the previous quantile %d", n, q, got, prev)
			}
			prev = got
		}
	}
}

func TestMergeEqualsOneHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	all, a, b := new(Histogram), new(Histogram), new(Histogram)
	for i := 0; i < 5000; i++ {
		v := r.Uint64N(1 << 30)
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	m := new(Histogram)
	m.Merge(a)
	m.Merge(b)
	m.Merge(new(Histogram)) // empty: no effect on min
	if m.counts != all.counts || m.Count() != all.Count() || m.Min() != all.Min() || m.Max() != all.Max() {
		t.Fatal("merged histogram differs from the one fed every value")
	}
	if math.Abs(m.Mean()-all.Mean()) > 1e-6*all.Mean() {
		t.Fatalf("mean %v, want %v", m.Mean(), all.Mean())
	}
}

func TestEmptyHistogram(t *testing.T) {
	h := new(Histogram)
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 || h.Min() != 0 {
		t.Fatal("empty histogram reads non-zero")
	}
	h.RecordDuration(-5)
	if h.Max() != 0 || h.Count() != 1 {
		t.Fatalf("negative duration: max %d count %d, want 0 and 1", h.Max(), h.Count())
	}
}

// BenchmarkRecord records latency-like values; BenchmarkRecordFloor does
// the bare minimum by hand (one counter increment per value) for comparison.
func BenchmarkRecord(b *testing.B) {
	h := new(Histogram)
	b.ReportAllocs()
	v := uint64(150000)
	for i := 0; i < b.N; i++ {
		h.Record(v + uint64(i&4095))
	}
}

func BenchmarkRecordFloor(b *testing.B) {
	counts := make([]uint64, 4096)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		counts[i&4095]++
	}
}

// TestQuantilesAtBucketEdges checks Quantile and WritePercentiles against
// the sorted values recorded when these sit on bucket edges (each
// bucket's highest value, the one above it and the one below), at the
// extremes (0, 1, 2^63, the largest uint64) and in tiny sets, where a
// rank that is off by one, or a bucket bound that is, shows: p99.9 and
// the maximum of a set whose top values share or straddle a bucket.
func TestQuantilesAtBucketEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var edges []uint64
	for i := 0; i < numBuckets; i++ {
		hi := bucketHigh(i)
		edges = append(edges, hi, hi+1)
		if hi > 0 {
			edges = append(edges, hi-1)
		}
	}
	edges = append(edges, 0, 1, math.MaxUint64, math.MaxUint64-1, 1<<63, 1<<63-1)
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(3000)
		if trial%4 == 0 {
			n = 1 + r.IntN(5)
		}
		lo := r.IntN(len(edges))
		span := 1 + r.IntN(len(edges)-lo) // some sets small values only, some huge only
		h := new(Histogram)
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = edges[lo+r.IntN(span)]
			h.Record(vals[i])
		}
		slices.Sort(vals)
		if h.Min() != vals[0] || h.Max() != vals[n-1] {
			t.Fatalf("n=%d: min %d max %d, want %d %d", n, h.Min(), h.Max(), vals[0], vals[n-1])
		}
		for _, q := range []float64{0, 0.001, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			rank := max(int(math.Ceil(q*float64(n))), 1)
			want := vals[rank-1]
			got := h.Quantile(q)
			if got < want || float64(got-want) > float64(want)/halfCount {
				t.Fatalf("n=%d q=%v: got %d, exact %d (allowed +1/%d)", n, q, got, want, halfCount)
			}
		}
		if got := h.Quantile(1); got != vals[n-1] {
			t.Fatalf("n=%d: quantile 1 is %d, max %d", n, got, vals[n-1])
		}
		var buf bytes.Buffer
		if err := h.WritePercentiles(&buf, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
		p, err := ReadPercentiles(&buf)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for _, l := range p.Lines {
			rank := max(int(math.Ceil(l.Percentile*float64(n)-1e-9)), 1)
			want := float64(vals[rank-1])
			// Values above 2^53 print with float64's rounding.
			if l.Value < want*(1-1e-15) || l.Value-want > want/halfCount+want*1e-15 {
				t.Fatalf("n=%d level %v: %v, exact %v", n, l.Percentile, l.Value, want)
			}
		}
		if last := p.Lines[len(p.Lines)-1]; last.Value != float64(vals[n-1]) {
			t.Fatalf("n=%d: last line %v, max %d", n, last.Value, vals[n-1])
		}
	}
}
