package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The charts live in this directory beside RESULTS.md, which links them
// relatively.
const chartDir = "charts"

// Chart files, relative to the directory of RESULTS.md.
var (
	codecChart = chartDir + "/codecs.svg"
	rpcChart   = chartDir + "/rpc.svg"
)

// opTitles names the codec operations in the chart, in compare.Ops order.
var opTitles = []struct{ op, title string }{
	{"DecodeRequest", "server: decode request"},
	{"EncodeResponse", "server: encode response"},
	{"Handler", "server: handler (decode request, look up, encode response)"},
	{"EncodeRequest", "client: encode request"},
	{"DecodeResponse", "client: decode response"},
}

func codecKind(name string) barKind {
	switch name {
	case zap:
		return barOurs
	case floor:
		return barFloor
	}
	return barPeer
}

func armKind(name string) barKind {
	switch {
	case name == "zapcodec rpc":
		return barOurs
	case strings.HasPrefix(name, "floor"):
		return barFloor
	}
	return barPeer
}

// charts returns the two charts of a report: time per codec operation by
// library, and calls/s and allocations per call by RPC stack. They are
// drawn from the same values as the report's tables.
func charts(r *codecResults, arms []armResult) (codecs, rpc *barChart) {
	codecs = &barChart{
		Title: "Time per codec operation (eth_getBalance records)",
		Note:  "nanoseconds per operation, shorter is faster; each panel has its own scale; allocations per operation after the time",
	}
	for _, o := range opTitles {
		pn := panel{Title: o.title}
		for _, n := range r.names {
			c := r.cells[o.op][n]
			pn.Bars = append(pn.Bars, bar{Label: n, Value: c.ns, Text: fmtCell(c), Kind: codecKind(n)})
		}
		codecs.Panels = append(codecs.Panels, pn)
	}
	rpc = &barChart{
		Title: "RPC stacks, unary eth_getBalance over loopback TCP",
		Note:  "client and server in one process; allocations are per call, client and server together",
	}
	calls := panel{Title: "calls per second (longer is better)"}
	allocs := panel{Title: "allocations per call (shorter is better)"}
	for _, a := range arms {
		k := armKind(a.name)
		calls.Bars = append(calls.Bars, bar{Label: a.name, Value: a.perSec, Text: thousands(a.perSec) + " calls/s", Kind: k})
		allocs.Bars = append(allocs.Bars, bar{Label: a.name, Value: a.allocs, Text: fmt.Sprintf("%.1f", a.allocs), Kind: k})
	}
	rpc.Panels = []panel{calls, allocs}
	return codecs, rpc
}

// writeCharts writes the charts of a report into the chart directory
// beside the RESULTS.md at out.
func writeCharts(out string, r *codecResults, arms []armResult) error {
	dir := filepath.Dir(out)
	if err := os.MkdirAll(filepath.Join(dir, chartDir), 0o755); err != nil {
		return err
	}
	codecs, rpc := charts(r, arms)
	for _, c := range []struct {
		file  string
		chart *barChart
	}{{codecChart, codecs}, {rpcChart, rpc}} {
		var b bytes.Buffer
		if err := c.chart.writeSVG(&b); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(c.file)), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// parseReport reads back the tables a report wrote: the codec tables
// (server side, client side) and the RPC table. With it the charts can be
// drawn again from an existing RESULTS.md without measuring anything.
func parseReport(md []byte) (*codecResults, []armResult, error) {
	tables := markdownTables(md)
	server, client, rpcRows := tables["### Server side"], tables["### Client side"], tables["## RPC"]
	if len(server) == 0 || len(client) == 0 || len(rpcRows) == 0 {
		return nil, nil, errors.New("no server side, client side or RPC table")
	}
	r := &codecResults{cells: map[string]map[string]cell{}, req: map[string]int{}, resp: map[string]int{}}
	for _, o := range opTitles {
		r.cells[o.op] = map[string]cell{}
	}
	for _, row := range server {
		if len(row) != 6 {
			return nil, nil, fmt.Errorf("server side row %q: %d columns, want 6", row, len(row))
		}
		n := row[0]
		r.names = append(r.names, n)
		for i, op := range []string{"DecodeRequest", "EncodeResponse", "Handler"} {
			c, err := parseCell(row[1+i])
			if err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", n, op, err)
			}
			r.cells[op][n] = c
		}
		var err1, err2 error
		r.req[n], err1 = strconv.Atoi(row[4])
		r.resp[n], err2 = strconv.Atoi(row[5])
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("%s sizes: %w", n, err)
		}
	}
	for _, row := range client {
		if len(row) != 3 {
			return nil, nil, fmt.Errorf("client side row %q: %d columns, want 3", row, len(row))
		}
		n := row[0]
		if _, ok := r.req[n]; !ok {
			return nil, nil, fmt.Errorf("client side codec %q is not in the server side table", n)
		}
		for i, op := range []string{"EncodeRequest", "DecodeResponse"} {
			c, err := parseCell(row[1+i])
			if err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", n, op, err)
			}
			r.cells[op][n] = c
		}
	}
	for _, n := range r.names {
		if _, ok := r.cells["EncodeRequest"][n]; !ok {
			return nil, nil, fmt.Errorf("codec %q has no client side row", n)
		}
	}
	var arms []armResult
	for _, row := range rpcRows {
		if len(row) != 6 {
			return nil, nil, fmt.Errorf("RPC row %q: %d columns, want 6", row, len(row))
		}
		a := armResult{name: row[0]}
		var err error
		if a.perSec, err = strconv.ParseFloat(row[1], 64); err != nil {
			return nil, nil, fmt.Errorf("%s calls/s: %w", a.name, err)
		}
		if a.p50, err = parseMicros(row[2]); err != nil {
			return nil, nil, fmt.Errorf("%s p50: %w", a.name, err)
		}
		if a.p99, err = parseMicros(row[3]); err != nil {
			return nil, nil, fmt.Errorf("%s p99: %w", a.name, err)
		}
		if a.allocs, err = strconv.ParseFloat(row[4], 64); err != nil {
			return nil, nil, fmt.Errorf("%s allocs: %w", a.name, err)
		}
		for _, s := range strings.Split(row[5], ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s samples: %w", a.name, err)
			}
			a.perSecSamples = append(a.perSecSamples, x)
		}
		arms = append(arms, a)
	}
	return r, arms, nil
}

// markdownTables returns the body rows (cells trimmed) of the first table
// under each heading of md, by the heading line.
func markdownTables(md []byte) map[string][][]string {
	out := map[string][][]string{}
	heading := ""
	inTable, rowNo := false, 0
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#"):
			heading, inTable = line, false
		case strings.HasPrefix(line, "|") && heading != "":
			if !inTable {
				if _, seen := out[heading]; seen {
					continue // only the first table under a heading
				}
				inTable, rowNo = true, 0
			}
			rowNo++
			if rowNo <= 2 { // the header and the |---| line
				if rowNo == 2 {
					out[heading] = [][]string{}
				}
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			out[heading] = append(out[heading], cells)
		default:
			if inTable {
				inTable = false
				heading = "" // one table per heading
			}
		}
	}
	return out
}

// parseCell reads a codec cell as fmtCell writes it: "26.8 ns · 0 alloc".
func parseCell(s string) (cell, error) {
	var c cell
	t, a, ok := strings.Cut(s, " · ")
	if !ok {
		return c, fmt.Errorf("cell %q: want \"<time> ns · <n> alloc\"", s)
	}
	ns, ok1 := strings.CutSuffix(t, " ns")
	al, ok2 := strings.CutSuffix(a, " alloc")
	if !ok1 || !ok2 {
		return c, fmt.Errorf("cell %q: want \"<time> ns · <n> alloc\"", s)
	}
	var err1, err2 error
	c.ns, err1 = strconv.ParseFloat(ns, 64)
	c.allocs, err2 = strconv.ParseFloat(al, 64)
	if err := errors.Join(err1, err2); err != nil {
		return c, fmt.Errorf("cell %q: %w", s, err)
	}
	return c, nil
}

// parseMicros reads a duration as fmtDur writes it: "29.5 µs".
func parseMicros(s string) (time.Duration, error) {
	v, ok := strings.CutSuffix(s, " µs")
	if !ok {
		return 0, fmt.Errorf("%q: want \"<n> µs\"", s)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(x * float64(time.Microsecond)), nil
}

// thousands formats x rounded to an integer with commas between groups
// of three digits: 351891.4 → "351,891".
func thousands(x float64) string {
	s := strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
