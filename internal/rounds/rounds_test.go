package main

import (
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want metrics // nil: not a result line
	}{
		{"BenchmarkUnary/size=64/callers=256-2   1000000   1334 ns/op   95.97 MB/s   749735 calls/s   1513 cpu-ns/call   0 B/op   0 allocs/op",
			metrics{"ns/op": 1334, "MB/s": 95.97, "calls/s": 749735, "cpu-ns/call": 1513, "B/op": 0, "allocs/op": 0}},
		{"BenchmarkServerInMemory \t 5000000\t       144.5 ns/op", metrics{"ns/op": 144.5}},
		{"goos: linux", nil},
		{"PASS", nil},
		{"BenchmarkX 100", nil},                   // no metric
		{"BenchmarkX many 3 ns/op", nil},          // no iteration count
		{"BenchmarkX 100 3 ns/op 4", nil},         // a value without its unit
		{"BenchmarkX 100 fast ns/op", nil},        // a unit without a value
		{"--- FAIL: BenchmarkX 100 3 ns/op", nil}, // not a result line
	} {
		got, ok := parseLine(tc.line)
		if ok != (tc.want != nil) {
			t.Errorf("%q: ok = %v", tc.line, ok)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.line, got, tc.want)
		}
		for u, v := range tc.want {
			if got[u] != v {
				t.Errorf("%q: %s = %v, want %v", tc.line, u, got[u], v)
			}
		}
	}
}

func TestLowerIsBetter(t *testing.T) {
	for unit, want := range map[string]bool{
		"ns/op": true, "cpu-ns/call": true, "B/op": true, "allocs/op": true, "p99-µs": true,
		"calls/s": false, "MB/s": false, "calls/write": false,
	} {
		if got := lowerIsBetter(unit); got != want {
			t.Errorf("lowerIsBetter(%q) = %v, want %v", unit, got, want)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{749735.4: "749735", 1000: "1000", 144.53: "144.5", 0.5: "0.5", 0: "0", 95.97: "95.97"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.v); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// The ratios are taken within each round, and their median reported, not
// the ratio of the medians.
func TestSummarize(t *testing.T) {
	specs, err := parseSpecs([]string{"/tmp/rpc.test:Unary", "/tmp/rpc.test:BenchmarkFloorMux"})
	if err != nil {
		t.Fatal(err)
	}
	rounds := []map[string]metrics{
		{"rpc:Unary": {"calls/s": 100}, "rpc:FloorMux": {"calls/s": 50}},
		{"rpc:Unary": {"calls/s": 200}, "rpc:FloorMux": {"calls/s": 220}},
		{"rpc:Unary": {"calls/s": 300}, "rpc:FloorMux": {"calls/s": 600}},
	}
	got := summarize(specs, rounds, "calls/s")
	for _, want := range []string{
		"rpc:Unary                    median 200 calls/s (3 rounds)",
		"rpc:FloorMux                 median 220 calls/s (3 rounds)",
		"rpc:Unary ÷ rpc:FloorMux: median of per-round ratios 0.909 (0.50–2.00), rpc:Unary better in 1 of 3 rounds",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// A lower-is-better metric counts the rounds the other way.
	got = summarize(specs, rounds, "ns/op")
	if !strings.Contains(got, "no ns/op reported") {
		t.Errorf("a metric no round has: %s", got)
	}
	rounds[0]["rpc:Unary"]["ns/op"], rounds[0]["rpc:FloorMux"]["ns/op"] = 8, 10
	if got := summarize(specs, rounds[:1], "ns/op"); !strings.Contains(got, "rpc:Unary better in 1 of 1 rounds") {
		t.Errorf("ns/op 8 against 10 is better: %s", got)
	}
}

func TestParseSpecs(t *testing.T) {
	for _, bad := range [][]string{nil, {"rpc.test"}, {":Unary"}, {"rpc.test:"}, {"a/rpc.test:Unary", "b/rpc.test:Unary"}} {
		if _, err := parseSpecs(bad); err == nil {
			t.Errorf("parseSpecs(%q): no error", bad)
		}
	}
	s, err := parseSpecs([]string{"/x/old.test:BenchmarkUnary", "/x/new.test:Unary"})
	if err != nil || s[0].label != "old:Unary" || s[0].bench != "Unary" || s[1].label != "new:Unary" || s[1].bin != "/x/new.test" {
		t.Errorf("parseSpecs: %+v, %v", s, err)
	}
}
