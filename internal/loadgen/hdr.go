package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// hdrTicksPerHalf is how many percentile levels WritePercentiles reports
// in each half of the distance left to 100%: levels 0, 10, ... 50%, then
// 55, 60, ... 75%, then steps of 2.5% up to 87.5%, and so on, which is
// what HdrHistogram's own percentile output uses by default.
const hdrTicksPerHalf = 5

// WritePercentiles writes h's distribution in the text form of
// HdrHistogram's percentile output, which its plotter
// (HdrHistogram/plotFiles.html) and other HdrHistogram tools read: a
// header line "Value Percentile TotalCount 1/(1-Percentile)", a blank
// line, one line per reported level with the value at that level divided
// by unit (recorded values are nanoseconds: pass time.Millisecond for the
// plotter's default unit), the level as a fraction, how many values are
// at most that value, and 1/(1-level); a last line for level 1 (the
// maximum, without the 1/(1-level) column); and three "#[...]" footer
// lines with the mean, standard deviation, maximum, total count and the
// histogram's bucket geometry. Values carry enough decimals to keep
// nanoseconds (six for milliseconds).
//
// Reported values are, like [Histogram.Quantile], the upper end of the
// bucket that holds the level's rank, capped at the maximum: at most
// 1/128 above the value recorded. The standard deviation is computed from
// the bucket midpoints. An empty histogram writes the header and footers
// only. unit must be positive.
func (h *Histogram) WritePercentiles(w io.Writer, unit time.Duration) error {
	if unit <= 0 {
		return fmt.Errorf("loadgen: WritePercentiles: unit %v is not positive", unit)
	}
	decimals := 0
	for u := int64(unit); u >= 10; u /= 10 {
		decimals++
	}
	scale := float64(unit)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	if h.total > 0 {
		h.writeLevels(bw, scale, decimals)
		fmt.Fprintf(bw, "%12.*f %2.12f %10d\n", decimals, float64(h.max)/scale, 1.0, h.total)
	}
	mean, std := h.Mean(), h.stdDev()
	fmt.Fprintf(bw, "#[Mean    = %12.*f, StdDeviation   = %12.*f]\n", decimals, mean/scale, decimals, std/scale)
	fmt.Fprintf(bw, "#[Max     = %12.*f, Total count    = %12d]\n", decimals, float64(h.max)/scale, h.total)
	fmt.Fprintf(bw, "#[Buckets = %12d, SubBuckets     = %12d]\n", 64-subBits, 2*halfCount)
	return bw.Flush()
}

// writeLevels writes one line per percentile level below the one whose
// rank is the last value, walking the buckets once. Level tick of half
// h is (5·2^(h+1) - 10 + tick) / (5·2^(h+1)), kept as a fraction so that a
// level's rank is exact (0.3 of 10 values is rank 3, not 4).
func (h *Histogram) writeLevels(w io.Writer, scale float64, decimals int) {
	i := 0            // current bucket
	seen := uint64(0) // values in buckets up to and including i
	for ; i < numBuckets; i++ {
		if seen += h.counts[i]; seen > 0 {
			break
		}
	}
	for half := 0; half < 58; half++ {
		den := uint64(hdrTicksPerHalf) << (half + 1)
		for tick := uint64(0); tick < hdrTicksPerHalf; tick++ {
			num := den - 2*hdrTicksPerHalf + tick // den·(1-2^-half) + tick
			// rank = ceil(num*total/den), at least 1
			hi, lo := bits.Mul64(num, h.total)
			rank, rem := bits.Div64(hi, lo, den)
			if rem != 0 {
				rank++
			}
			rank = max(rank, 1)
			if rank >= h.total {
				return
			}
			for seen < rank {
				i++
				seen += h.counts[i]
			}
			level := float64(num) / float64(den)
			v := min(max(bucketHigh(i), h.min), h.max)
			fmt.Fprintf(w, "%12.*f %2.12f %10d %14.2f\n", decimals, float64(v)/scale, level, seen, 1/(1-level))
		}
	}
}

// stdDev returns the standard deviation of the recorded values, each
// taken at the middle of its bucket (clamped to the range recorded).
func (h *Histogram) stdDev() float64 {
	if h.total == 0 {
		return 0
	}
	mean := h.Mean()
	var sum float64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo := uint64(0)
		if i > 0 {
			lo = bucketHigh(i-1) + 1
		}
		lo, hi := max(lo, h.min), min(bucketHigh(i), h.max)
		d := (float64(lo)+float64(hi))/2 - mean
		sum += float64(c) * d * d
	}
	return math.Sqrt(sum / float64(h.total))
}

// PercentileLine is one line of a percentile distribution as
// [Histogram.WritePercentiles] writes it.
type PercentileLine struct {
	Value      float64 // in the unit the distribution was written in
	Percentile float64 // the level, a fraction in [0, 1]
	TotalCount uint64  // values at most Value
}

// Percentiles is a percentile distribution read back by
// [ReadPercentiles].
type Percentiles struct {
	Lines      []PercentileLine // in file order; the last has Percentile 1
	Mean       float64          // from the footer
	StdDev     float64
	Max        float64
	TotalCount uint64
}

// ReadPercentiles reads the text form [Histogram.WritePercentiles] writes
// (HdrHistogram's percentile output) and checks it the way a plotter
// depends on it: the header, then data lines of four columns whose
// fourth is 1/(1-Percentile), the last line at percentile 1 with three
// columns, levels strictly increasing from 0, values and counts never
// decreasing, and the footer's total count equal to the last line's. It
// is meant for tests and tools; it returns an error naming the line for
// anything else and never panics.
func ReadPercentiles(r io.Reader) (*Percentiles, error) {
	sc := bufio.NewScanner(r)
	var p Percentiles
	n := 0
	footer := 0
	ended := false
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case n == 1:
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != "Value" || f[1] != "Percentile" || f[2] != "TotalCount" || f[3] != "1/(1-Percentile)" {
				return nil, fmt.Errorf("line 1: not the percentile header: %q", line)
			}
			continue
		case n == 2:
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("line 2: want a blank line after the header, got %q", line)
			}
			continue
		case strings.HasPrefix(line, "#["):
			if err := p.readFooter(footer, line); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			footer++
			continue
		}
		if footer > 0 || ended {
			return nil, fmt.Errorf("line %d: data after the last line: %q", n, line)
		}
		f := strings.Fields(line)
		if len(f) != 3 && len(f) != 4 {
			return nil, fmt.Errorf("line %d: want 4 columns (3 on the last line), got %d", n, len(f))
		}
		var l PercentileLine
		var err error
		if l.Value, err = strconv.ParseFloat(f[0], 64); err != nil || l.Value < 0 || math.IsInf(l.Value, 0) {
			return nil, fmt.Errorf("line %d: bad value %q", n, f[0])
		}
		if l.Percentile, err = strconv.ParseFloat(f[1], 64); err != nil || !(l.Percentile >= 0 && l.Percentile <= 1) {
			return nil, fmt.Errorf("line %d: bad percentile %q", n, f[1])
		}
		if l.TotalCount, err = strconv.ParseUint(f[2], 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: bad total count %q", n, f[2])
		}
		if len(f) == 3 {
			if l.Percentile != 1 {
				return nil, fmt.Errorf("line %d: a line without 1/(1-Percentile) must be at percentile 1", n)
			}
			ended = true
		} else {
			inv, err := strconv.ParseFloat(f[3], 64)
			if err != nil || l.Percentile == 1 || math.Abs(inv-1/(1-l.Percentile)) > 0.005+1e-9*inv {
				return nil, fmt.Errorf("line %d: 1/(1-Percentile) %q does not match percentile %v", n, f[3], l.Percentile)
			}
		}
		if k := len(p.Lines); k == 0 {
			if l.Percentile != 0 && !ended {
				return nil, fmt.Errorf("line %d: the first level is %v, want 0", n, l.Percentile)
			}
		} else if prev := p.Lines[k-1]; l.Percentile <= prev.Percentile || l.Value < prev.Value || l.TotalCount < prev.TotalCount {
			return nil, fmt.Errorf("line %d: %+v does not follow %+v (levels must rise, values and counts must not fall)", n, l, prev)
		}
		p.Lines = append(p.Lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case n < 2:
		return nil, errors.New("no header")
	case footer != 3:
		return nil, fmt.Errorf("%d footer lines, want 3", footer)
	case len(p.Lines) > 0 && !ended:
		return nil, errors.New("no line at percentile 1")
	case len(p.Lines) > 0 && p.Lines[len(p.Lines)-1].TotalCount != p.TotalCount:
		return nil, fmt.Errorf("last line counts %d values, footer %d", p.Lines[len(p.Lines)-1].TotalCount, p.TotalCount)
	case len(p.Lines) == 0 && p.TotalCount != 0:
		return nil, fmt.Errorf("no data lines for a total count of %d", p.TotalCount)
	}
	return &p, nil
}

// readFooter reads footer line i (0, 1 or 2).
func (p *Percentiles) readFooter(i int, line string) error {
	var a, b float64
	var c, d uint64
	var err error
	switch i {
	case 0:
		_, err = fmt.Sscanf(line, "#[Mean = %g, StdDeviation = %g]", &a, &b)
		p.Mean, p.StdDev = a, b
	case 1:
		_, err = fmt.Sscanf(line, "#[Max = %g, Total count = %d]", &a, &c)
		p.Max, p.TotalCount = a, c
	case 2:
		_, err = fmt.Sscanf(line, "#[Buckets = %d, SubBuckets = %d]", &c, &d)
	default:
		return errors.New("more than 3 footer lines")
	}
	if err != nil {
		return fmt.Errorf("footer %d: %v: %q", i+1, err, line)
	}
	return nil
}
