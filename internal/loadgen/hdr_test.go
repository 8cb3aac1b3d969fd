package loadgen

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWritePercentiles writes latency-like distributions, reads them back
// and checks every line against the exact values recorded.
func TestWritePercentiles(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 10, 1000, 54321} {
		h := new(Histogram)
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = uint64(r.ExpFloat64()*200000) + 1000 // ~200 µs mean
			h.Record(vals[i])
		}
		slices.Sort(vals)
		var buf bytes.Buffer
		if err := h.WritePercentiles(&buf, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		p, err := ReadPercentiles(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("n=%d: %v\n%s", n, err, buf.String())
		}
		if p.TotalCount != uint64(n) || p.Lines[len(p.Lines)-1].TotalCount != uint64(n) {
			t.Fatalf("n=%d: total count %d, last line %d", n, p.TotalCount, p.Lines[len(p.Lines)-1].TotalCount)
		}
		if got, want := p.Max, float64(vals[n-1])/1e6; math.Abs(got-want) > 1e-9 {
			t.Errorf("n=%d: footer max %v ms, want %v", n, got, want)
		}
		if last := p.Lines[len(p.Lines)-1]; last.Value != p.Max {
			t.Errorf("n=%d: last line value %v, max %v", n, last.Value, p.Max)
		}
		if math.Abs(p.Mean-h.Mean()/1e6) > 1e-6 {
			t.Errorf("n=%d: mean %v ms, histogram %v ns", n, p.Mean, h.Mean())
		}
		// The exact standard deviation, against the bucket estimate.
		var ss float64
		for _, v := range vals {
			d := float64(v) - h.Mean()
			ss += d * d
		}
		if exact := math.Sqrt(ss/float64(n)) / 1e6; math.Abs(p.StdDev-exact) > exact/100+1e-6 {
			t.Errorf("n=%d: std deviation %v ms, exact %v", n, p.StdDev, exact)
		}
		for i, l := range p.Lines[:len(p.Lines)-1] {
			rank := max(int(math.Ceil(l.Percentile*float64(n)-1e-9)), 1)
			exact := float64(vals[rank-1]) / 1e6
			if l.Value < exact-1e-9 || l.Value-exact > exact/halfCount+1e-9 {
				t.Errorf("n=%d line %d: %v at %v, exact value %v (allowed +1/%d)", n, i, l.Value, l.Percentile, exact, halfCount)
			}
			// TotalCount counts the values at most Value: at least the
			// rank, and exactly the values up to the end of the bucket.
			var below uint64
			for _, v := range vals {
				if float64(v)/1e6 <= l.Value+1e-9 {
					below++
				}
			}
			if l.TotalCount < uint64(rank) || l.TotalCount != below {
				t.Errorf("n=%d line %d: total count %d, rank %d, values at most %v: %d", n, i, l.TotalCount, rank, l.Value, below)
			}
		}
		// The levels are HdrHistogram's: 0, 0.1, ... 0.5, 0.55, ... 0.75, 0.775 ...
		want := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.775}
		for i, w := range want {
			if i >= len(p.Lines)-1 {
				break
			}
			if math.Abs(p.Lines[i].Percentile-w) > 1e-12 {
				t.Errorf("n=%d: level %d is %v, want %v", n, i, p.Lines[i].Percentile, w)
			}
		}
		if n == 54321 && len(p.Lines) < 60 {
			t.Errorf("n=%d: only %d lines: the tail is not reported", n, len(p.Lines))
		}
	}
}

// TestWritePercentilesFormat pins the text itself: the columns' widths,
// the decimals the unit calls for, and the footer.
func TestWritePercentilesFormat(t *testing.T) {
	t.Parallel()
	h := new(Histogram)
	for _, v := range []uint64{100, 200, 200, 250} { // below 256: exact
		h.Record(v)
	}
	var buf bytes.Buffer
	if err := h.WritePercentiles(&buf, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	want := `       Value     Percentile TotalCount 1/(1-Percentile)

       0.100 0.000000000000          1           1.00
       0.100 0.100000000000          1           1.11
       0.100 0.200000000000          1           1.25
       0.200 0.300000000000          3           1.43
       0.200 0.400000000000          3           1.67
       0.200 0.500000000000          3           2.00
       0.200 0.550000000000          3           2.22
       0.200 0.600000000000          3           2.50
       0.200 0.650000000000          3           2.86
       0.200 0.700000000000          3           3.33
       0.200 0.750000000000          3           4.00
       0.250 1.000000000000          4
#[Mean    =        0.188, StdDeviation   =        0.054]
#[Max     =        0.250, Total count    =            4]
#[Buckets =           57, SubBuckets     =          256]
`
	if got := buf.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWritePercentilesEmpty(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := new(Histogram).WritePercentiles(&buf, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPercentiles(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Lines) != 0 || p.TotalCount != 0 {
		t.Fatalf("empty histogram: %+v", p)
	}
	if err := new(Histogram).WritePercentiles(&buf, 0); err == nil {
		t.Fatal("unit 0: no error")
	}
}

// TestReadPercentilesRefuses: the checks a plotter depends on.
func TestReadPercentilesRefuses(t *testing.T) {
	t.Parallel()
	h := new(Histogram)
	for v := uint64(1000); v < 50000; v += 7 {
		h.Record(v)
	}
	var buf bytes.Buffer
	h.WritePercentiles(&buf, time.Millisecond)
	good := buf.String()
	lines := strings.Split(good, "\n")
	swap := slices.Clone(lines)
	swap[3], swap[4] = swap[4], swap[3]
	for name, in := range map[string]string{
		"no header":           strings.Join(lines[1:], "\n"),
		"levels out of order": strings.Join(swap, "\n"),
		"no footer":           strings.Join(lines[:len(lines)-4], "\n") + "\n",
		"count mismatch":      strings.Replace(good, fmt.Sprintf("%12d]", h.Count()), fmt.Sprintf("%12d]", h.Count()+1), 1),
		"bad inverse":         strings.Replace(good, "1.11\n", "1.50\n", 1),
		"no last line":        strings.Join(append(slices.Clone(lines[:len(lines)-5]), lines[len(lines)-4:]...), "\n"),
		"data after footer":   good + "       0.100 1.000000000000          4\n",
	} {
		if _, err := ReadPercentiles(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func FuzzReadPercentiles(f *testing.F) {
	h := new(Histogram)
	for v := uint64(1); v < 1e6; v = v*3/2 + 1 {
		h.Record(v)
	}
	var buf bytes.Buffer
	h.WritePercentiles(&buf, time.Millisecond)
	f.Add(buf.Bytes())
	f.Add([]byte("Value Percentile TotalCount 1/(1-Percentile)\n\n#[Mean = 0, StdDeviation = 0]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadPercentiles(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 1; i < len(p.Lines); i++ {
			if p.Lines[i].Percentile <= p.Lines[i-1].Percentile || p.Lines[i].TotalCount < p.Lines[i-1].TotalCount {
				t.Fatalf("accepted out-of-order lines %+v, %+v", p.Lines[i-1], p.Lines[i])
			}
		}
	})
}
