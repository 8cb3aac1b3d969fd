// Command results runs the comparison suite (codec benchmarks, then the RPC
// arms under load) and rewrites examples/RESULTS.md:
//
//	cd examples/compare && go run ./cmd/results
//
// Every codec operation is timed with testing.Benchmark (the same bodies as
// `go test -bench Codec`), every RPC arm with compare.Load; repetitions are
// interleaved across codecs and arms so that a noisy neighbour hits all of
// them alike, and the median repetition is reported. A hand-written section
// between the notes markers of an existing RESULTS.md is kept.
//
// Beside RESULTS.md it writes two SVG charts, drawn from the same values
// as the tables, which RESULTS.md links: charts/codecs.svg (time per codec
// operation by library) and charts/rpc.svg (calls/s and allocations per
// call by RPC stack). -charts-only draws them again from the tables of an
// existing RESULTS.md, without measuring:
//
//	cd examples/compare && go run ./cmd/results -charts-only
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/examples/compare"
)

// Config is one run's settings.
type Config struct {
	Out       string
	BenchTime time.Duration
	BenchReps int
	Reps      int
	Duration  time.Duration
	Warm      time.Duration
	Workers   int
	GOGC      int
	Progress  io.Writer
	// ChartsOnly redraws the charts from the tables of the RESULTS.md at
	// Out and measures nothing.
	ChartsOnly bool
}

func main() {
	var c Config
	flag.StringVar(&c.Out, "out", "../RESULTS.md", "file to rewrite (- for stdout)")
	flag.DurationVar(&c.BenchTime, "benchtime", 200*time.Millisecond, "time per codec benchmark repetition")
	flag.IntVar(&c.BenchReps, "benchreps", 3, "codec benchmark repetitions (median reported)")
	flag.IntVar(&c.Reps, "reps", 5, "RPC load repetitions per arm (median reported)")
	flag.DurationVar(&c.Duration, "duration", time.Second, "measured time per RPC repetition")
	flag.DurationVar(&c.Warm, "warm", 500*time.Millisecond, "unmeasured warm-up per RPC arm")
	flag.IntVar(&c.Workers, "workers", 16, "concurrent callers per RPC arm")
	flag.IntVar(&c.GOGC, "gogc", 100, "GOGC for every arm")
	flag.BoolVar(&c.ChartsOnly, "charts-only", false, "redraw the charts from the tables of the existing -out file; measure nothing")
	flag.Parse()
	c.Progress = os.Stderr
	testing.Init()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "results:", err)
		os.Exit(1)
	}
}

const (
	notesBegin = "<!-- notes: kept by cmd/results -->"
	notesEnd   = "<!-- end notes -->"
)

func run(c Config) error {
	if c.ChartsOnly {
		return redrawCharts(c.Out)
	}
	if err := flag.Set("test.benchtime", c.BenchTime.String()); err != nil {
		return err
	}
	debug.SetGCPercent(c.GOGC)
	var out bytes.Buffer
	load0 := loadAvg()
	start := time.Now()
	codecs, err := runCodecs(c)
	if err != nil {
		return err
	}
	arms, err := runArms(c)
	if err != nil {
		return err
	}
	report(&out, c, codecs, arms, load0, loadAvg(), time.Since(start))
	if c.Out == "-" {
		_, err := os.Stdout.Write(out.Bytes())
		return err
	}
	if old, err := os.ReadFile(c.Out); err == nil {
		if i, j := bytes.Index(old, []byte(notesBegin)), bytes.Index(old, []byte(notesEnd)); i >= 0 && j > i {
			out.WriteString("\n")
			out.Write(old[i : j+len(notesEnd)])
			out.WriteString("\n")
		}
	}
	if err := os.WriteFile(c.Out, out.Bytes(), 0o644); err != nil {
		return err
	}
	// The charts are drawn from the tables as written (rounded), so that
	// they are exactly what -charts-only draws from the same file.
	return redrawCharts(c.Out)
}

// redrawCharts writes the charts of the RESULTS.md at out from its tables.
func redrawCharts(out string) error {
	md, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	codecs, arms, err := parseReport(md)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	return writeCharts(out, codecs, arms)
}

// cell is the median of one benchmark's repetitions.
type cell struct{ ns, allocs float64 }

type codecResults struct {
	names []string
	cells map[string]map[string]cell // op -> codec -> median
	req   map[string]int             // mean request bytes
	resp  map[string]int
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func runCodecs(c Config) (*codecResults, error) {
	f := compare.NewFixture()
	makers := compare.Codecs()
	r := &codecResults{cells: map[string]map[string]cell{}, req: map[string]int{}, resp: map[string]int{}}
	ns := map[string][]float64{}
	allocs := map[string][]float64{}
	for _, m := range makers {
		r.names = append(r.names, m.Name)
		c := m.New()
		e, err := f.Encode(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		// The benchmarks run this check too, but a failed benchmark tells
		// testing.Benchmark's caller nothing of why.
		if err := f.Check(c, e); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		r.req[m.Name], r.resp[m.Name] = compare.MeanSize(e.Requests), compare.MeanSize(e.Responses)
	}
	for rep := range c.BenchReps {
		for _, op := range compare.Ops {
			for _, m := range makers {
				fmt.Fprintf(c.Progress, "\rcodecs: repetition %d/%d  %-15s %-16s", rep+1, c.BenchReps, op.Name, m.Name)
				res := testing.Benchmark(op.Run(m, f))
				if res.N == 0 {
					return nil, fmt.Errorf("%s %s: benchmark failed (an error or a wrong result; go test -run '^$' -bench Codec -benchtime 1x says which)", op.Name, m.Name)
				}
				k := op.Name + "\x00" + m.Name
				ns[k] = append(ns[k], float64(res.T.Nanoseconds())/float64(res.N))
				allocs[k] = append(allocs[k], float64(res.AllocsPerOp()))
			}
		}
	}
	fmt.Fprintln(c.Progress)
	for _, op := range compare.Ops {
		r.cells[op.Name] = map[string]cell{}
		for _, m := range makers {
			k := op.Name + "\x00" + m.Name
			r.cells[op.Name][m.Name] = cell{median(ns[k]), median(allocs[k])}
		}
	}
	return r, nil
}

type armResult struct {
	name          string
	perSec        float64
	p50, p99      time.Duration
	allocs        float64
	calls         int
	perSecSamples []float64
}

func runArms(c Config) ([]armResult, error) {
	ctx := context.Background()
	f := compare.NewFixture()
	type live struct {
		arm     compare.Arm
		srv     compare.Server
		cl      compare.Client
		samples []compare.LoadResult
	}
	var lives []*live
	defer func() {
		for _, l := range lives {
			l.cl.Close()
			l.srv.Close()
		}
	}()
	opt := compare.LoadOptions{Workers: c.Workers, Duration: c.Warm}
	for _, a := range compare.Arms() {
		fmt.Fprintf(c.Progress, "\rrpc: warming %-30s", a.Name)
		s, err := a.Start(f.Table)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		cl, err := s.Connect(ctx)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		lives = append(lives, &live{arm: a, srv: s, cl: cl})
		if _, err := compare.Load(ctx, cl, f, a.Echo, opt); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", a.Name, err)
		}
	}
	opt.Duration = c.Duration
	for rep := range c.Reps {
		for _, l := range lives {
			fmt.Fprintf(c.Progress, "\rrpc: repetition %d/%d  %-30s", rep+1, c.Reps, l.arm.Name)
			runtime.GC()
			res, err := compare.Load(ctx, l.cl, f, l.arm.Echo, opt)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.arm.Name, err)
			}
			l.samples = append(l.samples, res)
		}
	}
	fmt.Fprintln(c.Progress)
	var out []armResult
	for _, l := range lives {
		var ps, p50, p99, al []float64
		calls := 0
		for _, s := range l.samples {
			ps = append(ps, s.PerSec())
			p50 = append(p50, float64(s.P50))
			p99 = append(p99, float64(s.P99))
			al = append(al, s.Allocs)
			calls += s.Calls
		}
		out = append(out, armResult{name: l.arm.Name, perSec: median(ps), p50: time.Duration(median(p50)),
			p99: time.Duration(median(p99)), allocs: median(al), calls: calls, perSecSamples: ps})
	}
	return out, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
