package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/internal/loadgen"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

func init() {
	register(&command{
		name:    "load",
		summary: "load-test a ZAP-RPC server (calls/s, latency percentiles, statuses)",
		usage: `  zapcodec load [flags]
    Opens -c connections to a ZAP-RPC server and keeps -concurrency calls in
    flight on each, for -d or -n calls; with -rate, sends at that fixed
    arrival rate instead and measures latency from each call's intended send
    time (no coordinated omission). Prints a progress line a second on
    stderr (calls/s, calls ended, failed, and overdue: calls still waiting
    past their deadline, that is due and not yet sent with -rate,
    unanswered past -timeout, or in flight after the end of -d), then
    calls/s, latency p50/p90/p99/p99.9/max (of every call, failed ones
    too), answers by status and bytes in/out. Exits 1 when the run fails, or when every call failed (the
    report is printed all the same, and stderr says why), 2 on a usage
    error.
  -addr ADDR          server address (default 127.0.0.1:7700; a socket path
                      with -network unix), or a cluster target:
                      dns:///host:port, dns+srv:///_zap._tcp.name,
                      static:///a:1,b:2 (dns://server:53/... asks that DNS
                      server): the calls then go through one rpc/cluster
                      client, spread over the replicas, with -c connections
                      to each (at most 1024); a connection not open within
                      10s fails the run
  -network NET        tcp or unix (default tcp)
  -c N                connections, 1 or more (default 4); each is an open
                      file: more than the process's limit (ulimit -n) fails
                      at once, saying the limit and how to raise it
  -concurrency N      calls in flight per connection, 1 or more (default 8);
                      -c times -concurrency is at most 262144
  -d DURATION         how long to run, more than 0 (default 10s, unless -n
                      is given)
  -n N                stop after N calls, 1 or more (with -d: whichever
                      comes first)
  -warmup D           first make the same calls (connections, concurrency,
                      -rate, -timeout) for D and discard them: they count
                      nowhere (not in the report, nor the progress line),
                      and the measured run starts once they have ended
                      (default 0: no warm-up)
  -rate R             open loop: R calls per second in total, 1e-9 to
                      1e9 (default 0: closed loop); with -n alone, the run
                      ends as if -d were the last call's due time: calls
                      unanswered or unsent 10s after it are "abandoned"
  -timeout D          give up a call unanswered after D (0: no bound): it
                      counts as failed, "timed out" (its connection is
                      kept, its late answer dropped); default 20s for a run
                      bounded by -n alone, so that it ends even against a
                      server that never answers, and none with -d: the
                      calls still unanswered 10s after its end are given
                      up ("abandoned")
  -method M           method ordinal, or a method name ("getBalance",
                      "Eth.getBalance"; not a streaming method: load makes
                      unary calls): found in -schema or, without it, in
                      the schemas the server reflects (rpc.WithReflection,
                      as zapcodec call does: the ordinal then includes its
                      service's mount offset, and -payload-json is its
                      request; each replica of a cluster target is asked,
                      and they must agree); default: the -type method's
                      ordinal
  -payload-hex HEX    request payload as hex
  -payload-file FILE  request payload read from FILE, raw bytes; a request
                      frame holds at most 16 MiB
  -schema FILE.zap    with -payload-json: encode the payload
                      (a schema file of at most 16 MiB); a -method name is
                      looked up in it
  -at N               the mount offset of the -schema's service
                      (rpc.At(N) on the server), added to the ordinal of
                      the method named through -schema (default 0; not
                      with an ordinal, nor without -schema, where
                      reflection gives the whole ordinal)
  -type NAME          a struct, or a method whose request struct to encode
                      (either may be qualified by the schema's package:
                      "eth.Eth.getBalance"); default: the request of the
                      -method named, when it is a method of -schema
  -payload-json JSON  the request as a JSON object (fields by name, bytes as
                      hex strings), encoded by -type's struct, or by the
                      request of the -method named (in -schema, or as the
                      server reflects it); @FILE reads it from FILE (at
                      most 64 MiB)
  -metadata k=v       request metadata every call carries, repeatable
                      (rpc.WithMetadata: encoded once, no cost per call
                      but its bytes)
  -json               print the report as JSON
  -client KIND        rpc: an rpc.Client per connection; direct: each call
                      written and its answer read on the caller's goroutine
                      (same bytes, less CPU per call; one call in flight per
                      connection); auto (default): direct with
                      -concurrency 1, else rpc
  -cpuprofile FILE    write a CPU profile of the load tool to FILE
  -hdr FILE           also write the latency distribution to FILE in
                      HdrHistogram's percentile text format (milliseconds),
                      which HdrHistogram's plotter (plotFiles.html) draws
` + tlsUsage + `    With TLS, each connection's handshake is made before the run
    (a refused one fails it, saying why), and the bytes in and out are
    those of the TLS records.
`,
		run: runLoad,
	})
}

// Bounds of the files load reads: a larger file is refused, read no
// further than one byte past the bound (a huge file, or /dev/zero, is not
// read whole first).
const (
	// loadMaxJSON bounds -payload-json @FILE: four times what a frame
	// holds, room for the JSON of any payload that fits one (bytes are
	// hex strings, twice their length) with spaces to spare.
	loadMaxJSON = 4 * frame.DefaultMaxFrameSize
)

// loadFlags is the parsed command line of one load run.
type loadFlags struct {
	cfg                          loadgen.Config
	method                       string
	payloadHex, payloadFile      string
	schemaPath, typeName, jsonIn string
	jsonOut                      bool
	md                           metadataFlag
	cpuProfile                   string
	client                       string
	hdrPath                      string
	tls                          tlsFlags
	// reflect: -method is a name and no -schema was given: the
	// server's schemas (reflection, loadReflect) give its ordinal and
	// its request struct, which encodes js (-payload-json) when not nil.
	reflect bool
	js      []byte
	// at is -at, the mount offset of the -schema's service, added to the
	// ordinal of a method named through -schema; atSet says it was given.
	at    uint64
	atSet bool
}

func runLoad(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runLoadCtx(ctx, args, stdout, stderr)
}

// runLoadCtx is runLoad with a context that ends the run early (Ctrl-C):
// sending stops, the calls in flight finish, and the report covers the
// calls made.
func runLoadCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf loadFlags
	c := &lf.cfg
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:7700", "server address")
	fs.StringVar(&c.Network, "network", "tcp", "tcp or unix")
	fs.IntVar(&c.Conns, "c", 4, "connections")
	fs.IntVar(&c.Concurrency, "concurrency", 8, "calls in flight per connection")
	fs.DurationVar(&c.Duration, "d", 0, "duration (default 10s unless -n)")
	fs.Uint64Var(&c.Calls, "n", 0, "number of calls")
	fs.DurationVar(&c.Warmup, "warmup", 0, "warm-up before the measured run, its calls not counted (0: none)")
	fs.Float64Var(&c.Rate, "rate", 0, "open-loop calls per second (0: closed loop)")
	fs.DurationVar(&c.Timeout, "timeout", 0, "per-call timeout (0: none; default 20s with -n alone)")
	fs.StringVar(&lf.method, "method", "", "method ordinal or name")
	fs.StringVar(&lf.payloadHex, "payload-hex", "", "payload as hex")
	fs.StringVar(&lf.payloadFile, "payload-file", "", "payload file (raw bytes)")
	fs.StringVar(&lf.schemaPath, "schema", "", "schema file")
	fs.Uint64Var(&lf.at, "at", 0, "the mount offset of the -schema's service (added to the ordinal of a method named through -schema)")
	fs.StringVar(&lf.typeName, "type", "", "struct or method to encode -payload-json as")
	fs.StringVar(&lf.jsonIn, "payload-json", "", "payload as a JSON object, or @FILE")
	fs.Var(&lf.md, "metadata", "request metadata k=v (repeatable)")
	fs.BoolVar(&lf.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&lf.cpuProfile, "cpuprofile", "", "write a CPU profile of the load tool to this file")
	fs.StringVar(&lf.client, "client", "auto", "rpc, direct, or auto (direct with -concurrency 1)")
	fs.StringVar(&lf.hdrPath, "hdr", "", "write the latency distribution to this file (HdrHistogram percentile format)")
	lf.tls.register(fs)
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["load"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "zapcodec load: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	lf.atSet = flagSet(fs, "at")
	c.Metadata = lf.md
	if err := lf.resolve(); err != nil {
		fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
		return 2
	}
	if c.Network != "tcp" && c.Network != "tcp4" && c.Network != "tcp6" && c.Network != "unix" {
		fmt.Fprintf(stderr, "zapcodec load: -network %q: want tcp or unix\n", c.Network)
		return 2
	}
	if strings.Contains(c.Addr, "://") {
		c.Target = c.Addr // a cluster target
		if lf.client == "direct" {
			fmt.Fprintf(stderr, "zapcodec load: -client direct cannot call a cluster target\n")
			return 2
		}
		lf.client = "rpc"
	}
	tlsAddr := c.Addr
	if c.Target != "" {
		tlsAddr = "" // each replica's own host, or -servername
	}
	tlsCfg, err := lf.tls.config(tlsAddr)
	if err != nil {
		fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
		return 2
	}
	c.TLS = tlsCfg
	switch lf.client {
	case "auto":
		c.Direct = c.Concurrency == 1
	case "direct":
		if c.Concurrency != 1 {
			fmt.Fprintf(stderr, "zapcodec load: -client direct needs -concurrency 1\n")
			return 2
		}
		c.Direct = true
	case "rpc":
	default:
		fmt.Fprintf(stderr, "zapcodec load: -client %q: want rpc, direct or auto\n", lf.client)
		return 2
	}
	// Config reads 0 and below as its default (one connection, one call
	// in flight): a flag given 0 or less is a mistake, not that default.
	if c.Conns < 1 {
		fmt.Fprintf(stderr, "zapcodec load: -c %d: want 1 or more connections\n", c.Conns)
		return 2
	}
	if c.Concurrency < 1 {
		fmt.Fprintf(stderr, "zapcodec load: -concurrency %d: want 1 or more calls in flight\n", c.Concurrency)
		return 2
	}
	if c.Conns > loadgen.MaxInFlight || c.Concurrency > loadgen.MaxInFlight || c.Conns*c.Concurrency > loadgen.MaxInFlight {
		fmt.Fprintf(stderr, "zapcodec load: -c %d x -concurrency %d: above the %d calls in flight a run keeps (each takes a goroutine and buffers)\n", c.Conns, c.Concurrency, loadgen.MaxInFlight)
		return 2
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		fmt.Fprintf(stderr, "zapcodec load: -rate %v: want a finite number of calls a second, 0 or more (0: closed loop)\n", c.Rate)
		return 2
	}
	if c.Rate > 0 && c.Rate < 1e-9 {
		fmt.Fprintf(stderr, "zapcodec load: -rate %v: below one call in 30 years\n", c.Rate)
		return 2
	}
	if c.Rate > loadgen.MaxRate {
		fmt.Fprintf(stderr, "zapcodec load: -rate %v: above one call a nanosecond (1e9)\n", c.Rate)
		return 2
	}
	// Config reads a Duration of 0 as 10 s (without -n) and Calls 0 as no
	// bound: given on the command line, 0 is a mistake, not those.
	if c.Duration < 0 || c.Duration == 0 && flagSet(fs, "d") {
		fmt.Fprintf(stderr, "zapcodec load: -d %v: want a positive duration (leave -d out for 10s, or for -n alone)\n", c.Duration)
		return 2
	}
	if c.Warmup < 0 {
		fmt.Fprintf(stderr, "zapcodec load: -warmup %v: want a duration, 0 or more (0: no warm-up)\n", c.Warmup)
		return 2
	}
	if c.Calls == 0 && flagSet(fs, "n") {
		fmt.Fprintf(stderr, "zapcodec load: -n 0: want 1 or more calls (leave -n out for no bound)\n")
		return 2
	}
	switch {
	case c.Timeout < 0:
		fmt.Fprintf(stderr, "zapcodec load: negative -timeout %v (0: no bound)\n", c.Timeout)
		return 2
	case c.Timeout == 0 && flagSet(fs, "timeout"):
		c.Timeout = -1 // Config reads 0 as its default
	}
	// The flags are good: a -method name without -schema is looked up
	// on the server (reflection) now.
	if lf.reflect {
		if code, err := lf.loadReflect(ctx); err != nil {
			fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
			return code
		}
	}
	if n := 1 + wire.RequestLen(&wire.Request{Method: c.Method, PromiseID: 1, Payload: c.Payload}); n > frame.DefaultMaxFrameSize {
		fmt.Fprintf(stderr, "zapcodec load: a payload of %d bytes makes a request frame of %d bytes, above the largest a client sends (%d)\n", len(c.Payload), n, frame.DefaultMaxFrameSize)
		return 2
	}
	if lf.cpuProfile != "" {
		f, err := os.Create(lf.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	// The -hdr file is opened before the run, so that a bad path fails
	// at once rather than after it; it is emptied only to be written (a
	// run that fails to start leaves a file of an earlier run as it was),
	// and removed unwritten if the run made it.
	var hdr *os.File
	if lf.hdrPath != "" {
		_, statErr := os.Stat(lf.hdrPath)
		f, err := os.OpenFile(lf.hdrPath, os.O_WRONLY|os.O_CREATE, 0o666)
		if err != nil {
			fmt.Fprintf(stderr, "zapcodec load: -hdr: %v\n", err)
			return 2
		}
		hdr = f
		made := errors.Is(statErr, os.ErrNotExist)
		defer func() {
			if hdr != nil {
				hdr.Close()
				if made {
					os.Remove(lf.hdrPath)
				}
			}
		}()
	}
	start := time.Now()
	c.Progress = func(p loadgen.Progress) { io.WriteString(stderr, progressLine(p)) }
	r, err := loadgen.New(ctx, *c)
	if err != nil {
		err = lf.tls.explainDial(err)
		if !lf.tls.enabled() && c.Target != "" && errors.Is(err, rpc.ErrClosed) {
			// A TLS replica closes a plain connection without a byte of
			// answer, and so failed its health check: what the hint of a
			// direct target (below) says from the run's report.
			err = fmt.Errorf("%w (a replica closed the connection without answering: if the replicas serve TLS, dial with -tls)", err)
		}
		fmt.Fprintf(stderr, "zapcodec load: %v\n", err)
		return 1
	}
	defer r.Close()
	if c.Target != "" {
		fmt.Fprintf(stderr, "%d connections per replica open after %v\n", c.Conns, time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Fprintf(stderr, "%d connections open after %v\n", c.Conns, time.Since(start).Round(time.Millisecond))
	}
	if c.Warmup > 0 {
		fmt.Fprintf(stderr, "warming up for %v (not counted)\n", c.Warmup)
	}
	rep, err := r.Run(ctx)
	switch {
	case rep == nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "zapcodec load: interrupted during the warm-up, after %v: no call was measured\n", time.Since(start).Round(time.Millisecond))
		return 1
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "zapcodec load: interrupted after %v; the report covers the calls made\n", time.Since(start).Round(time.Millisecond))
	case err != nil:
		fmt.Fprintf(stderr, "zapcodec load: %v (after %v)\n", err, time.Since(start).Round(time.Millisecond))
	}
	if rep != nil {
		if lf.jsonOut {
			b, _ := json.MarshalIndent(rep, "", "  ")
			fmt.Fprintf(stdout, "%s\n", b)
		} else {
			rep.WriteText(stdout)
		}
		if hdr != nil {
			herr := writeHdr(hdr, rep.Histogram)
			hdr = nil // closed
			if herr != nil {
				fmt.Fprintf(stderr, "zapcodec load: -hdr: %v\n", herr)
				return 1
			}
		}
	}
	if lf.tls.askedNoCert() && rep != nil && rep.OK == 0 {
		fmt.Fprintln(stderr, "zapcodec load: the server asked for a client certificate, and none was given (-cert and -key)")
	}
	if !lf.tls.enabled() && c.Target == "" && rep != nil && rep.Calls > 0 && rep.OK == 0 && rep.BytesIn == 0 {
		// A TLS server closes a connection whose first bytes are no
		// TLS handshake without a byte of answer (crypto/tls sends no
		// alert): no answer at all is the sign of it that load can see.
		fmt.Fprintln(stderr, "zapcodec load: the server closed the connections without a byte of answer: if it serves TLS, dial with -tls")
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return 1
	}
	if rep != nil && rep.Calls > 0 && rep.OK == 0 {
		// A run that measured only failures measured no server: say so
		// in the exit status too, so that a script does not take it
		// for a result.
		fmt.Fprintf(stderr, "zapcodec load: all %d calls failed (%s)\n", rep.Calls, failures(rep))
		return 1
	}
	return 0
}

// failures names what the failed calls of rep ended with, the most
// frequent first: their statuses other than 200 ("status 400: 50") and
// their errors ("timed out: 6"), three at most.
func failures(rep *loadgen.Report) string {
	type kind struct {
		what string
		n    uint64
	}
	var ks []kind
	for code, n := range rep.Statuses {
		if code != "200" {
			ks = append(ks, kind{"status " + code, n})
		}
	}
	for class, n := range rep.Errors {
		ks = append(ks, kind{class, n})
	}
	slices.SortFunc(ks, func(a, b kind) int {
		if a.n != b.n {
			return cmp.Compare(b.n, a.n)
		}
		return strings.Compare(a.what, b.what)
	})
	var parts []string
	for i, k := range ks {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d", k.what, k.n))
	}
	return strings.Join(parts, ", ")
}

// progressLine is the progress line of p: time, calls/s over the last
// second, calls completed, failed, and overdue (loadgen.Progress.Overdue).
func progressLine(p loadgen.Progress) string {
	return fmt.Sprintf("%5.1fs  %8.0f calls/s  %9d calls  %d failed  %d overdue\n", p.Elapsed.Seconds(), p.Rate, p.Calls, p.Failed, p.Overdue)
}

// writeHdr writes h's latency distribution to f, in milliseconds (the
// unit HdrHistogram's plotter labels its axis with), and closes f.
func writeHdr(f *os.File, h *loadgen.Histogram) error {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if err := f.Truncate(0); err != nil { // opened without: see runLoadCtx
			f.Close()
			return err
		}
	}
	if err := h.WritePercentiles(f, time.Millisecond); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// resolve sets the Config's method and payload from the flags.
func (lf *loadFlags) resolve() error {
	sources := 0
	for _, s := range []string{lf.payloadHex, lf.payloadFile, lf.jsonIn} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 {
		return errors.New("give one of -payload-hex, -payload-file and -payload-json")
	}
	if lf.payloadHex != "" {
		h := strings.Join(strings.Fields(lf.payloadHex), "")
		h = strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X")
		p, err := hex.DecodeString(h)
		if err != nil {
			return fmt.Errorf("-payload-hex: %v", err)
		}
		lf.cfg.Payload = p
	}
	if lf.payloadFile != "" {
		// Read no further than a frame holds: a larger file (or
		// /dev/zero) is refused, not read whole.
		p, err := readFileAtMost(lf.payloadFile, frame.DefaultMaxFrameSize)
		if errors.Is(err, errTooLarge) {
			return fmt.Errorf("-payload-file %s: more than %d bytes, the largest frame a client sends", lf.payloadFile, frame.DefaultMaxFrameSize)
		}
		if err != nil {
			return fmt.Errorf("-payload-file: %v", err)
		}
		lf.cfg.Payload = p
	}
	var f *schema.File
	if lf.schemaPath != "" {
		src, err := readSchemaFile(lf.schemaPath)
		if err != nil {
			return fmt.Errorf("-schema: %v", err)
		}
		if f, err = schema.Parse(lf.schemaPath, src); err != nil {
			return err
		}
	}
	if lf.typeName != "" && f == nil {
		return errors.New("-type needs -schema")
	}
	if _, err := strconv.ParseUint(lf.method, 10, 32); f == nil && lf.method != "" && err != nil {
		// A method name without -schema: the server's schemas, asked
		// once the address and TLS are known (loadReflect).
		lf.reflect = true
	}
	var st *schema.Struct
	var typeMethod *schema.Method
	if lf.typeName != "" {
		if st = loadFindStruct(f, lf.typeName); st == nil {
			if typeMethod = loadFindMethod(f, lf.typeName); typeMethod == nil {
				return fmt.Errorf("-type %q: no struct or method of that name in %s", lf.typeName, lf.schemaPath)
			}
			if err := loadUnary(typeMethod, "-type", lf.typeName); err != nil {
				return err
			}
			if st = typeMethod.Req; st == nil {
				return fmt.Errorf("-type %q: the method takes no request: name it with -method %s, with no payload", lf.typeName, lf.typeName)
			}
		}
	}
	if lf.jsonIn != "" && st == nil && !lf.reflect {
		// Without -type, a -method that names a method of the schema
		// names the request's type too, as it does for zapcodec call.
		m, err := lf.jsonMethod(f)
		if err != nil {
			return err
		}
		if m == nil {
			return errors.New("-payload-json needs -schema and -type (or a -method the schema names, or a method name the server reflects)")
		}
		st = m.Req
	}
	if lf.jsonIn != "" {
		js := []byte(lf.jsonIn)
		if name, ok := strings.CutPrefix(lf.jsonIn, "@"); ok {
			var err error
			js, err = readFileAtMost(name, loadMaxJSON)
			if errors.Is(err, errTooLarge) {
				return fmt.Errorf("-payload-json @%s: more than %d bytes (64 MiB), more than the JSON of any payload a frame holds needs", name, loadMaxJSON)
			}
			if err != nil {
				return fmt.Errorf("-payload-json: %v", err)
			}
		}
		if lf.reflect {
			lf.js = js // encoded by the server's schema (loadReflect)
			return nil
		}
		p, err := dynamic.AppendMessage(nil, st, js)
		if err != nil {
			return fmt.Errorf("-payload-json: %v", dynamicErr(err))
		}
		lf.cfg.Payload = p
	}
	if lf.reflect {
		if lf.atSet {
			return errors.New("-at offsets a method named through -schema; without -schema the server's reflection gives the whole ordinal")
		}
		return nil
	}
	switch {
	case lf.method == "" && typeMethod != nil:
		return lf.setSchemaMethod(f, typeMethod)
	case lf.method == "":
		return errors.New("-method is required (an ordinal, or a method name: with -schema, or the server's by reflection)")
	default:
		if n, err := strconv.ParseUint(lf.method, 10, 32); err == nil {
			if n == 0 {
				return errors.New("-method 0: ordinals start at 1")
			}
			if lf.atSet {
				return fmt.Errorf("-at: -method %d is an ordinal, the whole of it: -at offsets a method named through -schema", n)
			}
			lf.cfg.Method = uint32(n)
			break
		}
		m := loadFindMethod(f, lf.method) // a name: f is -schema's (else lf.reflect)
		if m == nil {
			return fmt.Errorf("-method %q: no method of that name in %s", lf.method, lf.schemaPath)
		}
		if err := loadUnary(m, "-method", lf.method); err != nil {
			return err
		}
		return lf.setSchemaMethod(f, m)
	}
	return nil
}

// setSchemaMethod makes m, a method of the -schema file f, the run's:
// its ordinal past the service's mount offset (-at), and its name for the
// report.
func (lf *loadFlags) setSchemaMethod(f *schema.File, m *schema.Method) error {
	ord := lf.at + uint64(m.Ordinal)
	if ord > math.MaxUint32 {
		return fmt.Errorf("-at %d: the method's ordinal %d is above the largest (%d)", lf.at, ord, uint32(math.MaxUint32))
	}
	lf.cfg.Method, lf.cfg.MethodName = uint32(ord), callMethodName(f, m)
	return nil
}

// jsonMethod is the method of f that -method names, whose request
// -payload-json then encodes: nil without a schema or when -method is an
// ordinal (or not given), an error when the schema has no such method, or
// it streams or takes no request.
func (lf *loadFlags) jsonMethod(f *schema.File) (*schema.Method, error) {
	if f == nil || lf.method == "" {
		return nil, nil
	}
	if _, err := strconv.ParseUint(lf.method, 10, 32); err == nil {
		return nil, nil
	}
	m := loadFindMethod(f, lf.method)
	if m == nil {
		return nil, fmt.Errorf("-method %q: no method of that name in %s", lf.method, lf.schemaPath)
	}
	if err := loadUnary(m, "-method", lf.method); err != nil {
		return nil, err
	}
	if m.Req == nil {
		return nil, fmt.Errorf("-method %q: the method takes no request: leave out -payload-json", lf.method)
	}
	return m, nil
}

// loadUnary refuses a streaming method, named by flag as name: load makes
// unary calls, which a server answers at a streaming method's ordinal with
// 404 (no unary handler there), so every call of the run would fail.
func loadUnary(m *schema.Method, flag, name string) error {
	if m.ReqStream || m.RespStream {
		return fmt.Errorf("%s %q: a streaming method; load makes unary calls only (a server answers them 404 there)", flag, name)
	}
	return nil
}

// loadFindStruct finds the struct name, which may be qualified by the
// schema's package ("eth.GetBalanceRequest").
func loadFindStruct(f *schema.File, name string) *schema.Struct {
	if s := f.Struct(name); s != nil {
		return s
	}
	if rest, ok := strings.CutPrefix(name, f.Package+"."); ok && f.Package != "" {
		return f.Struct(rest)
	}
	return nil
}

// loadFindMethod finds "Iface.method", or "method" when exactly one
// interface has it; either may be qualified by the schema's package, as
// service names are ("eth.Eth.getBalance").
func loadFindMethod(f *schema.File, name string) *schema.Method {
	if m := loadFindMethodIn(f, name); m != nil {
		return m
	}
	if rest, ok := strings.CutPrefix(name, f.Package+"."); ok && f.Package != "" {
		return loadFindMethodIn(f, rest)
	}
	return nil
}

func loadFindMethodIn(f *schema.File, name string) *schema.Method {
	iface, meth, qualified := strings.Cut(name, ".")
	if !qualified {
		meth = name
	}
	var found *schema.Method
	for _, in := range f.Interfaces {
		if qualified && in.Name != iface {
			continue
		}
		for _, m := range in.Methods {
			if m.Name == meth {
				if found != nil {
					return nil // ambiguous without the interface name
				}
				found = m
			}
		}
	}
	return found
}

// flagSet reports whether the command line gave flag name (fs parsed).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loadReflectTimeout bounds the dial and the reflection call of each
// server asked for its schemas (as a connection of the run is bounded).
const loadReflectTimeout = 10 * time.Second

// loadReflect sets the Config's method (and, with -payload-json, its
// payload) from the schemas the server reflects (rpc.WithReflection):
// the method named by -method, at the ordinal of its service's mount.
// Every replica of a cluster target is asked, and they must agree on
// the ordinal and on the request's bytes: the calls go to all of them.
// It returns the exit status with its error: 2 for a usage error (no
// reflection, no such method, replicas that disagree), 1 for a server
// that could not be asked or whose schema cannot be used.
func (lf *loadFlags) loadReflect(ctx context.Context) (int, error) {
	c := &lf.cfg
	addrs := []string{c.Addr}
	if c.Target != "" {
		res, err := cluster.ParseTarget(c.Target)
		if err != nil {
			return 1, err
		}
		rctx, cancel := context.WithTimeout(ctx, loadReflectTimeout)
		addrs, err = res.Resolve(rctx)
		cancel()
		if err != nil {
			return 1, fmt.Errorf("resolving %s, to ask its replicas for their schemas: %v", c.Target, err)
		}
		if len(addrs) == 0 {
			return 1, fmt.Errorf("%s resolved to no replica to ask for its schemas", c.Target)
		}
	}
	for i, addr := range addrs {
		ord, name, payload, code, err := lf.reflectOne(ctx, addr)
		switch {
		case err != nil:
			return code, err
		case i == 0:
			c.Method, c.MethodName, c.Payload = ord, name, payload
		case ord != c.Method:
			return 2, fmt.Errorf("-method %q: the replicas disagree: %s serves it at ordinal %d, %s at %d (pass -schema and an ordinal to choose)", lf.method, addrs[0], c.Method, addr, ord)
		case !bytes.Equal(payload, c.Payload):
			return 2, fmt.Errorf("-method %q: the replicas disagree: the request encodes to %d bytes by the schema of %s, to %d bytes (or others) by that of %s", lf.method, len(c.Payload), addrs[0], len(payload), addr)
		}
	}
	return 0, nil
}

// reflectOne asks the server at addr for its schemas and returns the
// ordinal of -method there, its full name (service.method) and the
// payload (-payload-json encoded by its request struct, else the one
// given), or the exit status and why.
func (lf *loadFlags) reflectOne(ctx context.Context, addr string) (uint32, string, []byte, int, error) {
	tc := lf.cfg.TLS
	if tc != nil && tc.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		tc = tc.Clone()
		tc.ServerName = host
	}
	opts, sniff := lf.tls.clientOptions(tc)
	rctx, cancel := context.WithTimeout(ctx, loadReflectTimeout)
	defer cancel()
	cl, err := rpc.Dial(rctx, lf.cfg.Network, addr, opts...)
	if err != nil {
		return 0, "", nil, 1, fmt.Errorf("cannot connect to %s to ask for its schemas (reflection): %v", addr, lf.tls.explainDial(err))
	}
	defer cl.Close()
	svcs, err := rpc.Reflect(rctx, cl)
	switch {
	case rpc.IsNoSuchMethod(err):
		return 0, "", nil, 2, fmt.Errorf("-method %q: the server at %s does not serve reflection (rpc.WithReflection): pass -schema FILE, or an ordinal", lf.method, addr)
	case err != nil:
		return 0, "", nil, 1, fmt.Errorf("asking %s for its schemas (reflection): %v", addr, lf.tls.explain(err, sniff))
	}
	r, m, bad, err := reflectFindMethod(parseReflected(svcs), lf.method)
	if err != nil {
		code := 2
		if bad {
			code = 1
		}
		return 0, "", nil, code, fmt.Errorf("-method %q at %s: %v", lf.method, addr, err)
	}
	if err := loadUnary(m, "-method", lf.method); err != nil {
		return 0, "", nil, 2, err
	}
	payload := lf.cfg.Payload
	if lf.js != nil {
		if m.Req == nil {
			return 0, "", nil, 2, fmt.Errorf("-payload-json: %s takes no request", callMethodName(r.f, m))
		}
		if payload, err = dynamic.AppendMessage(nil, m.Req, lf.js); err != nil {
			return 0, "", nil, 2, fmt.Errorf("-payload-json: %v", dynamicErr(err))
		}
	}
	return r.base + m.Ordinal, callMethodName(r.f, m), payload, 0, nil
}
