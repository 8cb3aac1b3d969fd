package loadgen

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is the result of a run, shaped for encoding/json.
type Report struct {
	Network     string  `json:"network"`
	Addr        string  `json:"addr"`
	Method      uint32  `json:"method"`
	MethodName  string  `json:"method_name,omitempty"` // Config.MethodName
	Conns       int     `json:"conns"`                 // Config.Conns: per replica with a cluster Target
	Concurrency int     `json:"concurrency"`
	TargetRate  float64 `json:"target_rate,omitempty"` // open loop only
	// Seconds is the interval measured: from the start until sending
	// stopped (the end of the duration, ctx's end, or the last call of a
	// count) or, when later, until the last call ended that the run did
	// not abandon. The wait at the end for calls that the grace then gave
	// up is not part of it.
	Seconds float64 `json:"seconds"`

	Calls  uint64 `json:"calls"`  // completed (answered or failed), and abandoned
	OK     uint64 `json:"ok"`     // status 200 and, with Check, a good answer
	Failed uint64 `json:"failed"` // Calls - OK
	// Sent counts the calls written to a connection: Calls less those
	// never sent, the calls due in open loop that no worker could send
	// (abandoned unsent) and the calls refused before they were written
	// (no replica of a cluster target ready, a connection's table of
	// pending calls full).
	Sent uint64 `json:"sent"`
	// CallsPerSec is the calls that ended (answered, or failed with an
	// error of their own) per second of Seconds: the calls abandoned at
	// the end of the grace (Errors["abandoned (no answer in time)"]) are
	// not counted, as they never ended.
	CallsPerSec float64 `json:"calls_per_sec"`

	// Latency in nanoseconds, from the send (closed loop) or from the
	// intended send time (open loop), of every call, failed ones among
	// them (a refusal that comes back at once pulls the percentiles
	// down: read them beside Failed).
	Latency Latency `json:"latency_ns"`

	// Statuses counts answers by status code ("200": n); a worker counts
	// 32 distinct codes apart at most, and the answers with codes beyond
	// those under "other".
	Statuses map[string]uint64 `json:"statuses"`
	// Errors counts failed calls that got no usable answer, by class.
	Errors map[string]uint64 `json:"errors"`

	// Frame bytes read and written on the connections during the run.
	BytesIn  uint64 `json:"bytes_in"`
	BytesOut uint64 `json:"bytes_out"`

	// Histogram holds every call's latency (nanoseconds, as Latency), for
	// a full distribution ([Histogram.WritePercentiles]); it is not part
	// of the JSON form.
	Histogram *Histogram `json:"-"`
}

// Latency summarises a Histogram. Percentiles overstate by at most 1/128.
type Latency struct {
	Min  uint64  `json:"min"`
	Mean float64 `json:"mean"`
	P50  uint64  `json:"p50"`
	P90  uint64  `json:"p90"`
	P99  uint64  `json:"p99"`
	P999 uint64  `json:"p99_9"`
	Max  uint64  `json:"max"`
}

// fill sets the latency summary from h and the calls/s from ended, the
// calls that ended (not abandoned), and r.Seconds.
func (r *Report) fill(h *Histogram, ended uint64) {
	r.Histogram = h
	if r.Seconds > 0 {
		r.CallsPerSec = float64(ended) / r.Seconds
	}
	r.Latency = Latency{
		Min: h.Min(), Mean: h.Mean(),
		P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99), P999: h.Quantile(0.999),
		Max: h.Max(),
	}
}

// BytesPerCall returns the wire bytes (both ways) per call sent
// (Report.Sent): calls never sent put no byte on the wire.
func (r *Report) BytesPerCall() float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.BytesIn+r.BytesOut) / float64(r.Sent)
}

// WriteText writes the report for people, bombardier style.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "closed loop"
	if r.TargetRate > 0 {
		mode = "open loop at " + strconv.FormatFloat(r.TargetRate, 'f', -1, 64) + " calls/s"
	}
	method := "method " + strconv.FormatUint(uint64(r.Method), 10)
	if r.MethodName != "" {
		method = r.MethodName + " (method " + strconv.FormatUint(uint64(r.Method), 10) + ")"
	}
	fmt.Fprintf(&b, "%s %s, %s: %d connections x %d in flight, %s, %.2fs\n",
		r.Network, r.Addr, method, r.Conns, r.Concurrency, mode, r.Seconds)
	fmt.Fprintf(&b, "  calls      %d (%d ok, %d failed)\n", r.Calls, r.OK, r.Failed)
	if n := r.Errors[abandoned]; n > 0 {
		fmt.Fprintf(&b, "  calls/s    %s (the %d abandoned not counted)\n", perSec(r.CallsPerSec), n)
	} else {
		fmt.Fprintf(&b, "  calls/s    %s\n", perSec(r.CallsPerSec))
	}
	l := r.Latency
	fmt.Fprintf(&b, "  latency    p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s)\n",
		ns(l.P50), ns(l.P90), ns(l.P99), ns(l.P999), ns(l.Max), ns(uint64(l.Mean)))
	fmt.Fprintf(&b, "  statuses   %s\n", counts(r.Statuses))
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "  errors     %s\n", counts(r.Errors))
	}
	fmt.Fprintf(&b, "  bytes      in %d, out %d (%.1f per call sent)\n", r.BytesIn, r.BytesOut, r.BytesPerCall())
	_, err := io.WriteString(w, b.String())
	return err
}

// perSec formats a rate: whole from 1000 up, else to 3 significant digits
// (a run at 0.2 calls/s does not read as 0).
func perSec(v float64) string {
	if v >= 1000 || v == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// ns formats nanoseconds as a rounded duration.
func ns(v uint64) string {
	d := time.Duration(v)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond).String()
	}
	return d.String()
}

func counts(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
