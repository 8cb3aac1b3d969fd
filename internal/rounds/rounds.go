package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// metrics are the values of one benchmark result line, by unit.
type metrics map[string]float64

func (m metrics) String() string {
	units := make([]string, 0, len(m))
	for u := range m {
		units = append(units, u)
	}
	slices.Sort(units)
	var b strings.Builder
	for i, u := range units {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%s %s", num(m[u]), u)
	}
	return b.String()
}

// parseLine parses a result line of go test -bench: the name, the
// iteration count, then value-unit pairs.
func parseLine(line string) (metrics, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return nil, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return nil, false
	}
	m := metrics{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, false
		}
		m[f[i+1]] = v
	}
	return m, true
}

// lowerIsBetter reports whether a smaller value of unit is the better
// one: all but rates (MB/s, calls/s) and calls per something (calls per
// write), where more is better.
func lowerIsBetter(unit string) bool {
	return !strings.HasSuffix(unit, "/s") && !strings.HasPrefix(unit, "calls/")
}

// num formats a metric's value: whole numbers above 1,000, else four
// significant digits.
func num(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summarize returns the report: each spec's median of unit, and the
// first spec against each of the others, as the median of the per-round
// ratios (first ÷ other), their range, and the rounds the first did
// better in.
func summarize(specs []spec, rounds []map[string]metrics, unit string) string {
	var b strings.Builder
	for _, s := range specs {
		var v []float64
		for _, r := range rounds {
			if x, ok := r[s.label][unit]; ok {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			fmt.Fprintf(&b, "%-28s no %s reported\n", s.label, unit)
			continue
		}
		fmt.Fprintf(&b, "%-28s median %s %s (%d rounds)\n", s.label, num(median(v)), unit, len(v))
	}
	if len(specs) < 2 {
		return b.String()
	}
	first := specs[0].label
	for _, s := range specs[1:] {
		var ratios []float64
		better := 0
		for _, r := range rounds {
			x, ok1 := r[first][unit]
			y, ok2 := r[s.label][unit]
			if !ok1 || !ok2 || y == 0 {
				continue
			}
			ratios = append(ratios, x/y)
			if (x < y) == lowerIsBetter(unit) && x != y {
				better++
			}
		}
		if len(ratios) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s ÷ %s: median of per-round ratios %.3f (%.2f–%.2f), %s better in %d of %d rounds\n",
			first, s.label, median(ratios), slices.Min(ratios), slices.Max(ratios), first, better, len(ratios))
	}
	return b.String()
}
