package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

const (
	zap   = "zapcodec"
	goccy = "goccy/go-json"
	floor = "floor (by hand)"
)

func fmtNS(ns float64) string {
	if ns < 100 {
		return fmt.Sprintf("%.1f ns", ns)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func fmtCell(c cell) string {
	return fmt.Sprintf("%s · %g alloc", fmtNS(c.ns), c.allocs)
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**MISSED**"
}

// fastest returns the fastest codec for op, the hand-written floor aside.
func (r *codecResults) fastest(op string) (string, float64) {
	best, bestNS := "", 0.0
	for _, n := range r.names {
		if n == floor {
			continue
		}
		if c := r.cells[op][n]; best == "" || c.ns < bestNS {
			best, bestNS = n, c.ns
		}
	}
	return best, bestNS
}

func (r *codecResults) ratio(op, vs string) float64 {
	return r.cells[op][vs].ns / r.cells[op][zap].ns
}

// The names of the peers' arms measured in two configurations, as
// compare.Arms gives them.
const (
	fasthttpArm          = "fasthttp + goccy JSON-RPC"
	fasthttpPipelinedArm = "fasthttp + goccy JSON-RPC, pipelined"
	grpcArm              = "gRPC-go (protobuf)"
	grpcWorkersArm       = "gRPC-go (protobuf), stream workers"
)

// fastestArm returns the arm of names with the most calls/s in byName;
// ok is false when none of them was measured. An expectation against a
// peer measured in more than one configuration is held against its best.
func fastestArm(byName map[string]armResult, names []string) (best armResult, ok bool) {
	for _, n := range names {
		if a, found := byName[n]; found && (!ok || a.perSec > best.perSec) {
			best, ok = a, true
		}
	}
	return best, ok
}

func report(w io.Writer, c Config, r *codecResults, arms []armResult, load0, load1 string, took time.Duration) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# Comparison results: eth_getBalance\n\n")
	p("Written by `cd examples/compare && go run ./cmd/results` (%s). Do not edit the numbers by hand: rerun the command.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	p("| machine | |\n|---|---|\n")
	p("| cpu | %s |\n| cores | %d |\n| Go | %s %s/%s |\n| GOMAXPROCS | %d |\n| GOGC | %d |\n",
		cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), c.GOGC)
	p("| load average (1/5/15 min) | %s at start, %s at end |\n", load0, load1)
	p("| run | codecs: %d interleaved repetitions × %v each; RPC: %v warm-up, %d interleaved repetitions × %v, %d workers; total %v |\n\n",
		c.BenchReps, c.BenchTime, c.Warm, c.Reps, c.Duration, c.Workers, took.Round(time.Second))
	p("The machine is shared (a load average above the core count means other work ran beside this one): ratios measured in the same run are more trustworthy than absolute numbers.\n\n")

	p("## Codecs\n\n")
	p("Same records each way (request: account [20]byte, block, id, method; response: balance [32]byte, nonce, block hash [32]byte, id), ")
	p("%d distinct records cycled, medians of the repetitions. *decode* fills every field of the application's record; *encode* appends to a reused buffer; ", 16)
	p("*handler* = decode the request + answer from the in-memory table + encode the response. Bytes are the mean encoded size. ")
	p("Every benchmark checks its results (every operation on every record before the timing, the last iteration's after it): a codec that did less than the job would fail, not post a time. ")
	p("`floor (by hand)` is the same fields written with encoding/binary: no schema, no header, the least work possible. ")
	p("It is no codec a peer could speak, so the expectations' fastest-codec rows leave it out and give its time beside.\n\n")
	p("![Time per codec operation by library, one panel per operation](%s)\n\n", codecChart)
	p("### Server side\n\n| codec | decode request | encode response | handler | request bytes | response bytes |\n|---|---|---|---|---|---|\n")
	for _, n := range r.names {
		p("| %s | %s | %s | %s | %d | %d |\n", n, fmtCell(r.cells["DecodeRequest"][n]), fmtCell(r.cells["EncodeResponse"][n]),
			fmtCell(r.cells["Handler"][n]), r.req[n], r.resp[n])
	}
	p("\n### Client side\n\n| codec | encode request | decode response |\n|---|---|---|\n")
	for _, n := range r.names {
		p("| %s | %s | %s |\n", n, fmtCell(r.cells["EncodeRequest"][n]), fmtCell(r.cells["DecodeResponse"][n]))
	}
	p("\n### zapcodec's speed-up (other codec's time ÷ zapcodec's time)\n\n| codec | decode req | decode resp | encode req | encode resp | handler |\n|---|---|---|---|---|---|\n")
	for _, n := range r.names {
		if n == zap {
			continue
		}
		p("| %s | %.1f× | %.1f× | %.1f× | %.1f× | %.1f× |\n", n, r.ratio("DecodeRequest", n), r.ratio("DecodeResponse", n),
			r.ratio("EncodeRequest", n), r.ratio("EncodeResponse", n), r.ratio("Handler", n))
	}

	p("\n## RPC\n\n")
	p("The same handler behind each stack, client and server in this one process over loopback TCP, %d workers each with one call in flight, ", c.Workers)
	p("warm connections, the same GOGC and GOMAXPROCS for every arm. Every answer is checked field by field against the table's (outside the measured latency). ")
	p("Median of %d repetitions; allocs are per call for the whole process (client + server). ", c.Reps)
	p("zapcodec rpc, gRPC and net/rpc multiplex all workers over one connection; gRPC runs twice, its server with its defaults and with GOMAXPROCS reused stream workers (grpc.NumStreamWorkers); fasthttp (HTTP/1.1) runs twice, with a connection per worker (fasthttp.HostClient) ")
	p("and pipelined over one connection shared by all workers (fasthttp.PipelineClient: writes batched, answers matched in order). ")
	p("The floors echo a length-prefixed frame of the hand-encoded request (no codec, no dispatch; the server flushes when no further request is buffered), ")
	p("either over one connection shared by all workers (writes batched, echoes matched in order) or over a connection per worker.\n\n")
	p("| arm | calls/s | p50 | p99 | allocs/call | calls/s of each repetition |\n|---|---|---|---|---|---|\n")
	byName := map[string]armResult{}
	for _, a := range arms {
		byName[a.name] = a
		var s []string
		for _, x := range a.perSecSamples {
			s = append(s, fmt.Sprintf("%.0f", x))
		}
		p("| %s | %.0f | %s | %s | %.1f | %s |\n", a.name, a.perSec, fmtDur(a.p50), fmtDur(a.p99), a.allocs, strings.Join(s, ", "))
	}
	p("\n![Calls per second and allocations per call by RPC stack](%s)\n", rpcChart)

	p("\n## Expectations\n\n| expectation | measured | verdict |\n|---|---|---|\n")
	dq, dr := r.ratio("DecodeRequest", goccy), r.ratio("DecodeResponse", goccy)
	da := r.cells["DecodeRequest"][zap].allocs + r.cells["DecodeResponse"][zap].allocs
	p("| decode ≥ 100× goccy/go-json, 0 allocs | request %.1f×, response %.1f×; %g allocs | %s |\n", dq, dr, da, verdict(dq >= 100 && dr >= 100 && da == 0))
	eq, er := r.ratio("EncodeRequest", goccy), r.ratio("EncodeResponse", goccy)
	ea := r.cells["EncodeRequest"][zap].allocs + r.cells["EncodeResponse"][zap].allocs
	p("| encode ≥ 5× goccy/go-json, 0 allocs | request %.1f×, response %.1f×; %g allocs | %s |\n", eq, er, ea, verdict(eq >= 5 && er >= 5 && ea == 0))
	hr := r.ratio("Handler", goccy)
	p("| handler ≥ 8× goccy/go-json | %.1f× | %s |\n", hr, verdict(hr >= 8))
	for _, op := range []string{"DecodeRequest", "DecodeResponse", "EncodeRequest", "EncodeResponse", "Handler"} {
		best, ns := r.fastest(op)
		p("| fastest codec, the hand-written floor aside: %s | fastest is %s (%s; zapcodec %s); the floor, `%s`, %s | %s |\n",
			op, best, fmtNS(ns), fmtNS(r.cells[op][zap].ns), floor, fmtNS(r.cells[op][floor].ns), verdict(best == zap))
	}
	z, okz := byName["zapcodec rpc"]
	for _, t := range []struct {
		label string
		want  float64
		names []string // the peer's arms: the fastest of them is the one compared
	}{
		{"end to end ≥ 1.5× fasthttp + goccy JSON-RPC (its faster arm)", 1.5, []string{fasthttpArm, fasthttpPipelinedArm}},
		{"end to end ≥ 3× gRPC-go (its faster arm)", 3, []string{grpcArm, grpcWorkersArm}},
		{"end to end ≥ 80% of the floor (raw echo, one connection, batched writes)", 0.8, []string{"floor: raw echo, 1 conn"}},
		{"end to end ≥ 80% of the floor (raw echo, a connection per worker)", 0.8, []string{"floor: raw echo, conn per worker"}},
	} {
		o, ok := fastestArm(byName, t.names)
		if !okz || !ok || o.perSec == 0 {
			p("| %s | not measured | **MISSED** |\n", t.label)
			continue
		}
		x := z.perSec / o.perSec
		vs := ""
		if len(t.names) > 1 {
			vs = o.name + ", "
		}
		p("| %s | %.2f× (%.0f vs %s%.0f calls/s) | %s |\n", t.label, x, z.perSec, vs, o.perSec, verdict(x >= t.want))
	}
	p("\n")
}
