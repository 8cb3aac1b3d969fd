// Command rounds runs Go benchmarks in alternating processes and reports
// medians of per-round ratios, the way the figures in rpc/README.md were
// measured on a shared, noisy machine: one benchmark per process, each
// spec in turn, round after round, so that a slow spell of the machine
// hits every spec alike; then, for each spec against the first, the
// median of the ratios taken within each round.
//
// Usage:
//
//	go test -c -o /tmp/rpc.test ./rpc
//	go run ./internal/rounds -n 12 -benchtime 1000000x -sub size=64/callers=256 \
//		/tmp/rpc.test:Unary /tmp/rpc.test:FloorMux
//
// A spec is binary:Benchmark (the name without its Benchmark prefix).
// Every metric the benchmark line reports is kept; -metric picks the one
// the ratios are taken of (calls/s by default; a lower-is-better metric
// such as ns/op or cpu-ns/call is reported as such).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	n := flag.Int("n", 8, "rounds")
	benchtime := flag.String("benchtime", "1000000x", "-test.benchtime of each run")
	sub := flag.String("sub", "", "sub-benchmark path, e.g. size=64/callers=256 (anchored)")
	cpu := flag.String("cpu", "", "-test.cpu of each run (GOMAXPROCS); empty: the default")
	metric := flag.String("metric", "calls/s", "metric the ratios are taken of")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: rounds [flags] binary:Benchmark...")
		flag.PrintDefaults()
	}
	flag.Parse()
	specs, err := parseSpecs(flag.Args())
	if err != nil || *n < 1 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "rounds:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	var rounds []map[string]metrics
	for r := 1; r <= *n; r++ {
		round := map[string]metrics{}
		for _, s := range specs {
			m, err := runOnce(s, *sub, *benchtime, *cpu)
			if err != nil {
				fmt.Fprintf(os.Stderr, "rounds: round %d, %s: %v\n", r, s.label, err)
				os.Exit(1)
			}
			round[s.label] = m
			fmt.Printf("round %d  %-28s %s\n", r, s.label, m)
		}
		rounds = append(rounds, round)
	}
	fmt.Println()
	fmt.Print(summarize(specs, rounds, *metric))
}

// spec is one benchmark of one test binary.
type spec struct {
	bin, bench string
	label      string // the binary's base name without .test, ':', the benchmark
}

func parseSpecs(args []string) ([]spec, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no binary:Benchmark given")
	}
	var specs []spec
	seen := map[string]bool{}
	for _, a := range args {
		i := strings.LastIndex(a, ":")
		if i <= 0 || i == len(a)-1 {
			return nil, fmt.Errorf("%q is not binary:Benchmark", a)
		}
		s := spec{bin: a[:i], bench: strings.TrimPrefix(a[i+1:], "Benchmark")}
		s.label = strings.TrimSuffix(filepath.Base(s.bin), ".test") + ":" + s.bench
		if seen[s.label] {
			return nil, fmt.Errorf("%s given twice", s.label)
		}
		seen[s.label] = true
		specs = append(specs, s)
	}
	return specs, nil
}

// runOnce runs one benchmark in a process of its own and returns the
// metrics of its result line.
func runOnce(s spec, sub, benchtime, cpu string) (metrics, error) {
	pattern := "^Benchmark" + regexp.QuoteMeta(s.bench) + "$"
	if sub != "" {
		pattern += "/" + sub + "$"
	}
	args := []string{"-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime}
	if cpu != "" {
		args = append(args, "-test.cpu", cpu)
	}
	var out bytes.Buffer
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, out.Bytes())
	}
	var found []metrics
	for _, line := range strings.Split(out.String(), "\n") {
		if m, ok := parseLine(line); ok {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d benchmark results (want 1; is -sub right?)\n%s", len(found), out.Bytes())
	}
	return found[0], nil
}
