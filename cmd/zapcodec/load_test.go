package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/loadgen"
	"github.com/zapcodec/zapcodec/rpc"
)

// loadEthSchema is eth.zap's layout (docs/wire.md §10, generated.json offsets).
const loadEthSchema = `package eth
type address = bytes_fixed[20]
struct GetBalanceRequest
    Account address
    Block   u64
    ID      u64
    Method  text
struct GetBalanceResponse
    Balance   bytes_fixed[32]
    Nonce     u64
    BlockHash bytes_fixed[32]
    ID        u64
interface Eth {
    getBalance(req: GetBalanceRequest) returns (resp: GetBalanceResponse)
}
`

// loadRequestHex is the canonical bytes of GetBalanceRequest{Account
// a0..b3, Block 19000000, ID 1, Method "eth_getBalance"} (generated.json).
const loadRequestHex = "5a41500001000000100000004a000000a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3c0ea2101000000000100000000000000080000000e0000006574685f67657442616c616e6365"

const loadRequestJSON = `{"Account":"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3","Block":19000000,"ID":1,"Method":"eth_getBalance"}`

// loadServer serves method 1: it answers 200 with the request's Block
// field only when the request is exactly loadRequestHex, else 400.
func loadServer(t *testing.T) string {
	t.Helper()
	return loadServerHook(t, nil)
}

// loadServerHook is loadServer calling onCall (when not nil) at the start
// of every call.
func loadServerHook(t *testing.T, onCall func()) string {
	t.Helper()
	want, _ := hex.DecodeString(loadRequestHex)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer()
	s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) {
		if onCall != nil {
			onCall()
		}
		if !bytes.Equal(req, want) {
			return resp, rpc.Errorf(rpc.StatusBadRequest, "unexpected payload")
		}
		m, _ := codec.Parse(req)
		var b codec.Builder
		b.Reset(resp)
		o := b.StartObject(8)
		o.SetUint64(0, m.Root().Uint64(20))
		b.SetRoot(o.Finish())
		return b.Finish(), nil
	})
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

func loadRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"load"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func loadReport(t *testing.T, out string) *loadgen.Report {
	t.Helper()
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s", err, out)
	}
	return &rep
}

func loadCheckClean(t *testing.T, rep *loadgen.Report) {
	t.Helper()
	if rep.Calls == 0 || rep.OK != rep.Calls || rep.Failed != 0 || len(rep.Errors) != 0 {
		t.Fatalf("calls %d ok %d failed %d errors %v statuses %v", rep.Calls, rep.OK, rep.Failed, rep.Errors, rep.Statuses)
	}
	if len(rep.Statuses) != 1 || rep.Statuses["200"] != rep.Calls {
		t.Fatalf("statuses %v, want 200: %d", rep.Statuses, rep.Calls)
	}
	l := rep.Latency
	if !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Max > 0) {
		t.Fatalf("percentiles not ordered: %+v", l)
	}
	if rep.CallsPerSec <= 0 || rep.BytesIn == 0 || rep.BytesOut == 0 {
		t.Fatalf("calls/s %v bytes in %d out %d", rep.CallsPerSec, rep.BytesIn, rep.BytesOut)
	}
}

// TestLoadOneSecond runs the subcommand for a second, payload encoded
// through the schema; the server accepts only the exact canonical bytes.
func TestLoadOneSecond(t *testing.T) {
	t.Parallel()
	addr := loadServer(t)
	dir := t.TempDir()
	sch := filepath.Join(dir, "eth.zap")
	if err := os.WriteFile(sch, []byte(loadEthSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := loadRun(t, "-addr", addr, "-d", "1s", "-c", "2", "-concurrency", "4",
		"-schema", sch, "-type", "Eth.getBalance", "-payload-json", loadRequestJSON, "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := loadReport(t, out)
	loadCheckClean(t, rep)
	if rep.Method != 1 || rep.Conns != 2 || rep.Concurrency != 4 {
		t.Fatalf("report settings: %+v", rep)
	}
	// Request frame 5 + 44 + 74 bytes, answer 5 + 36 + 24.
	if rep.BytesOut != rep.Calls*123 || rep.BytesIn != rep.Calls*65 {
		t.Fatalf("bytes out %d in %d for %d calls", rep.BytesOut, rep.BytesIn, rep.Calls)
	}
	// The progress line (once a second) is covered by loadgen's tests with
	// a short interval; a one-second run may end before its first tick.
}

// TestLoadPayloadForms: hex, file and JSON (struct -type, method by name)
// payloads all reach the server as the same bytes; -n and -rate runs.
func TestLoadPayloadForms(t *testing.T) {
	t.Parallel()
	addr := loadServer(t)
	dir := t.TempDir()
	sch := filepath.Join(dir, "eth.zap")
	raw, _ := hex.DecodeString(loadRequestHex)
	bin := filepath.Join(dir, "req.bin")
	js := filepath.Join(dir, "req.json")
	os.WriteFile(sch, []byte(loadEthSchema), 0o644)
	os.WriteFile(bin, raw, 0o644)
	os.WriteFile(js, []byte(loadRequestJSON), 0o644)
	for _, args := range [][]string{
		{"-method", "1", "-payload-hex", "0x" + loadRequestHex},
		{"-method", "1", "-payload-file", bin},
		{"-schema", sch, "-type", "GetBalanceRequest", "-method", "getBalance", "-payload-json", "@" + js},
		{"-schema", sch, "-type", "getBalance", "-payload-json", loadRequestJSON, "-rate", "2000"},
		// -method alone names the request's type, as it does for
		// zapcodec call (it was refused: "-payload-json needs -schema
		// and -type").
		{"-schema", sch, "-method", "getBalance", "-payload-json", loadRequestJSON},
		{"-schema", sch, "-method", "eth.Eth.getBalance", "-payload-json", "@" + js},
		{"-method", "1", "-payload-hex", loadRequestHex, "-concurrency", "1", "-c", "3"},        // auto: direct
		{"-method", "1", "-payload-hex", loadRequestHex, "-concurrency", "1", "-client", "rpc"}, // forced rpc
		{"-method", "1", "-payload-hex", loadRequestHex, "-concurrency", "1", "-client", "direct", "-rate", "3000"},
	} {
		code, out, errOut := loadRun(t, append([]string{"-addr", addr, "-n", "300", "-json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		rep := loadReport(t, out)
		loadCheckClean(t, rep)
		if rep.Calls != 300 {
			t.Fatalf("%v: %d calls, want 300", args, rep.Calls)
		}
	}
}

// A run in which every call failed prints its report and exits 1, saying
// why (it exited 0, as a run that measured the server does).
func TestLoadTextReportAndStatuses(t *testing.T) {
	t.Parallel()
	addr := loadServer(t)
	// A payload the server refuses: every answer is 400.
	code, out, errOut := loadRun(t, "-addr", addr, "-n", "50", "-method", "1", "-payload-hex", "00")
	if code != 1 || !strings.Contains(errOut, "all 50 calls failed (status 400: 50)") {
		t.Fatalf("every call failed: exit %d, stderr %q; want exit 1 saying why", code, errOut)
	}
	for _, want := range []string{"calls      50 (0 ok, 50 failed)", "statuses   400: 50", "p99.9", "bytes      in"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sch := filepath.Join(dir, "eth.zap")
	os.WriteFile(sch, []byte(loadEthSchema), 0o644)
	// A streaming method named by -type or -method ran every call unary at
	// its ordinal, each answered 404; a method without a request named
	// by -type did not say how to name it.
	streams := filepath.Join(dir, "streams.zap")
	os.WriteFile(streams, []byte("package s\nstruct F\n    N u32\ninterface Feed {\n    sub(req: F) returns (stream F)\n    up(stream F) returns (resp: F)\n    ping()\n}\n"), 0o644)
	// A payload a frame cannot hold was sent all the same: with the
	// direct client the server closed the connection at its header and
	// the run failed as "connection closed". (A file is read no further
	// than a frame holds; /dev/zero is not tried here: without that
	// bound it reads until memory runs out.)
	frameFull := filepath.Join(dir, "16MiB.bin")
	os.WriteFile(frameFull, make([]byte, 16<<20), 0o644)
	overFrame := filepath.Join(dir, "17MiB.bin")
	os.WriteFile(overFrame, make([]byte, 17<<20), 0o644)
	// -payload-json @FILE and -schema FILE read their files whole, of any
	// size (/dev/zero until memory ran out). Files one byte over their
	// bounds (sparse: nothing written) are refused before parsing.
	overJSON := sparseFile(t, dir, "huge.json", loadMaxJSON+1)
	overSchema := sparseFile(t, dir, "huge.zap", maxSchemaFile+1)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-payload-hex", "00"}, 2, "-method is required"},
		{[]string{"-method", "0"}, 2, "ordinals start at 1"},
		// A name without -schema is looked up on the server (reflection),
		// once the other flags are good.
		{[]string{"-method", "getBalance", "-addr", "127.0.0.1:1"}, 1, "cannot connect to 127.0.0.1:1 to ask for its schemas (reflection)"},
		{[]string{"-method", "getBalance", "-addr", "127.0.0.1:1", "-c", "0"}, 2, "-c 0: want 1 or more"},
		{[]string{"-method", "1", "-payload-hex", "zz"}, 2, "-payload-hex: encoding/hex"},
		{[]string{"-method", "1", "-payload-hex", "00", "-payload-file", "x"}, 2, "give one of"},
		{[]string{"-method", "1", "-payload-file", filepath.Join(dir, "missing")}, 2, "-payload-file"},
		{[]string{"-method", "1", "-type", "X"}, 2, "-type needs -schema"},
		{[]string{"-method", "1", "-payload-json", "{}"}, 2, "-payload-json needs -schema and -type (or a -method the schema names, or a method name the server reflects)"},
		{[]string{"-schema", sch, "-type", "Nope", "-payload-json", "{}"}, 2, `-type "Nope": no struct or method`},
		{[]string{"-schema", sch, "-method", "nope"}, 2, `-method "nope": no method`},
		{[]string{"-schema", sch, "-method", "nope", "-payload-json", "{}"}, 2, `-method "nope": no method`},
		{[]string{"-schema", sch, "-method", "1", "-payload-json", "{}"}, 2, "-payload-json needs -schema and -type"},
		{[]string{"-schema", sch, "-method", "getBalance", "-payload-json", `{"Block":"x"}`}, 2, `Block: bad u64 "x"`},
		{[]string{"-schema", sch, "-type", "getBalance", "-payload-json", `{"Block":"x"}`}, 2, `zapcodec load: -payload-json: Block: bad u64 "x"`},
		// Names qualified by the schema's package, as service names are,
		// resolve (the payload's error shows they did).
		{[]string{"-schema", sch, "-type", "eth.Eth.getBalance", "-payload-json", `{"Block":"x"}`}, 2, `Block: bad u64 "x"`},
		{[]string{"-schema", sch, "-type", "eth.GetBalanceRequest", "-payload-json", `{"Block":"x"}`}, 2, `Block: bad u64 "x"`},
		{[]string{"-schema", sch, "-method", "eth.Eth.getBalance", "-addr", "127.0.0.1:1", "-n", "1"}, 1, "connection 0"}, // resolved: the run starts
		{[]string{"-schema", sch, "-type", "eth.GetBalanceRequest", "-method", "eth.Eth.nope"}, 2, `-method "eth.Eth.nope": no method`},
		{[]string{"-schema", sch, "-type", "btc.GetBalanceRequest"}, 2, `-type "btc.GetBalanceRequest": no struct or method`},
		{[]string{"-schema", filepath.Join(dir, "none.zap"), "-method", "1"}, 2, "-schema"},
		{[]string{"-schema", streams, "-type", "Feed.sub", "-payload-json", "{}"}, 2, `-type "Feed.sub": a streaming method; load makes unary calls only`},
		{[]string{"-schema", streams, "-type", "up"}, 2, `-type "up": a streaming method`},
		{[]string{"-schema", streams, "-method", "sub", "-payload-hex", "00"}, 2, `-method "sub": a streaming method`},
		{[]string{"-schema", streams, "-method", "Feed.up"}, 2, `-method "Feed.up": a streaming method`},
		{[]string{"-schema", streams, "-method", "sub", "-payload-json", "{}"}, 2, `-method "sub": a streaming method`},
		{[]string{"-schema", streams, "-method", "ping", "-payload-json", "{}"}, 2, `-method "ping": the method takes no request: leave out -payload-json`},
		{[]string{"-schema", streams, "-type", "Feed.ping"}, 2, `-type "Feed.ping": the method takes no request: name it with -method Feed.ping`},
		{[]string{"-method", "1", "-network", "udp"}, 2, `-network "udp"`},
		{[]string{"-method", "1", "extra"}, 2, "unexpected argument"},
		{[]string{"-method", "1", "-client", "fast"}, 2, `-client "fast"`},
		{[]string{"-method", "1", "-client", "direct", "-concurrency", "2"}, 2, "-client direct needs -concurrency 1"},
		{[]string{"-method", "1", "-network", "unix", "-addr", filepath.Join(dir, "no.sock"), "-n", "1"}, 1, "connection 0"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-c", "0"}, 2, "-c 0: want 1 or more"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-c", "-2"}, 2, "-c -2: want 1 or more"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-concurrency", "0"}, 2, "-concurrency 0: want 1 or more"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-concurrency", "-8"}, 2, "-concurrency -8: want 1 or more"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-payload-file", frameFull}, 2, "a payload of 16777216 bytes makes a request frame of 16777261 bytes, above the largest a client sends (16777216)"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-payload-file", overFrame}, 2, "17MiB.bin: more than 16777216 bytes"},
		{[]string{"-schema", sch, "-type", "eth.GetBalanceRequest", "-payload-json", "@" + overJSON}, 2, "-payload-json @" + overJSON + ": more than 67108864 bytes"},
		{[]string{"-schema", overSchema, "-method", "1"}, 2, "-schema: " + overSchema + ": more than 16777216 bytes"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-c", "5", "-concurrency", "60000"}, 2, "-c 5 x -concurrency 60000: above the 262144 calls in flight"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-c", "9223372036854775807", "-concurrency", "2"}, 2, "above the 262144 calls in flight"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-rate", "-5"}, 2, "-rate -5: want"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-rate", "NaN"}, 2, "-rate NaN: want"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-rate", "+Inf"}, 2, "-rate +Inf: want"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-timeout", "-1s"}, 2, "negative -timeout -1s"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-rate", "1e-12"}, 2, "-rate 1e-12: below one call in 30 years"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-rate", "2e9"}, 2, "-rate 2e+09: above one call a nanosecond"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-d", "-1s"}, 2, "-d -1s: want a positive duration"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-d", "0"}, 2, "-d 0s: want a positive duration"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "5", "-d", "0"}, 2, "-d 0s: want a positive duration"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "0"}, 2, "-n 0: want 1 or more calls"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "-1"}, 2, "invalid value"},
		{[]string{"-method", "1", "-addr", "127.0.0.1:1", "-n", "1", "-warmup", "-1s"}, 2, "-warmup -1s: want a duration, 0 or more"},
	} {
		code, _, errOut := loadRun(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestLoadTimeout: -n against a server that never answers (a listener
// that accepts nothing: the kernel completes the connections, and no one
// reads them) ends, each call given up at -timeout and counted as failed.
func TestLoadTimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	var code int
	var out, errOut string
	go func() {
		defer close(done)
		code, out, errOut = loadRun(t, "-addr", l.Addr().String(), "-n", "6", "-c", "2", "-concurrency", "2",
			"-timeout", "50ms", "-method", "1", "-payload-hex", "00", "-json")
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // only keeps a broken run from hanging the test
		t.Fatal("zapcodec load -n 6 -timeout 50ms had not ended after 2 minutes")
	}
	if code != 1 || !strings.Contains(errOut, "all 6 calls failed (timed out: 6)") {
		t.Fatalf("exit %d, stderr %q; want exit 1, every call timed out", code, errOut)
	}
	rep := loadReport(t, out)
	if rep.Calls != 6 || rep.Failed != 6 || rep.Errors["timed out"] != 6 {
		t.Fatalf("calls %d failed %d errors %v, want 6 calls, all timed out", rep.Calls, rep.Failed, rep.Errors)
	}
}

// TestLoadInterrupted: an ended context (Ctrl-C) still prints the report
// of the calls made, none of them failed. The context ends once the server
// has a call in hand (not after a fixed time, which a loaded machine may
// spend before the first call), so the report has at least that call.
func TestLoadInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	addr := loadServerHook(t, func() { once.Do(cancel) })
	// Bounded: a server that never gets a call ends the run after 30 s,
	// and the report of no calls fails below.
	stop := time.AfterFunc(30*time.Second, cancel)
	defer stop.Stop()
	var out, errOut bytes.Buffer
	code := runLoadCtx(ctx, []string{"-addr", addr, "-d", "1h", "-method", "1", "-payload-hex", loadRequestHex, "-json"}, &out, &errOut)
	if code != 0 || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	loadCheckClean(t, loadReport(t, out.String()))
}

// TestLoadHdr: -hdr writes the run's latency distribution in the
// HdrHistogram percentile format, one value per call.
func TestLoadHdr(t *testing.T) {
	t.Parallel()
	addr := loadServer(t)
	path := filepath.Join(t.TempDir(), "latency.hgrm")
	code, out, errOut := loadRun(t, "-addr", addr, "-n", "2000", "-c", "2", "-concurrency", "4",
		"-method", "1", "-payload-hex", loadRequestHex, "-json", "-hdr", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := loadReport(t, out)
	loadCheckClean(t, rep)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := loadgen.ReadPercentiles(f) // checks the levels rise and values and counts never fall
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalCount != 2000 || p.Lines[len(p.Lines)-1].TotalCount != 2000 {
		t.Fatalf("distribution counts %d calls (last line %d), want 2000", p.TotalCount, p.Lines[len(p.Lines)-1].TotalCount)
	}
	// The values are milliseconds: the report's nanoseconds / 1e6.
	if got, want := p.Max, float64(rep.Latency.Max)/1e6; got != want {
		t.Fatalf("max %v ms, report %v ms", got, want)
	}
	// The first line is the minimum's bucket: at most 1/128 above it.
	if got, lo := p.Lines[0].Value, float64(rep.Latency.Min)/1e6; got < lo || got > lo*(1+1.0/128)+1e-6 {
		t.Fatalf("first value %v ms, report min %v ms", got, lo)
	}
	if len(p.Lines) < 20 {
		t.Fatalf("%d lines for 2000 calls", len(p.Lines))
	}
}

func TestLoadHdrBadPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "x.hgrm")
	code, _, errOut := loadRun(t, "-addr", "127.0.0.1:1", "-n", "1", "-method", "1", "-payload-hex", "00", "-hdr", path)
	if code != 2 || !strings.Contains(errOut, "-hdr") {
		t.Fatalf("exit %d, stderr %q: want 2 and a -hdr error before any call", code, errOut)
	}
}

// TestLoadHdrKeptWhenRunFails: a run that cannot start (no server) leaves
// an -hdr file of an earlier run as it was, and makes none where there
// was none; it used to empty the file before trying to connect.
func TestLoadHdrKeptWhenRunFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.hgrm")
	if err := os.WriteFile(old, []byte("an earlier run's distribution\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "new.hgrm")
	for _, path := range []string{old, fresh} {
		code, _, errOut := loadRun(t, "-addr", "127.0.0.1:1", "-n", "1", "-method", "1", "-payload-hex", "00", "-hdr", path)
		if code != 1 || !strings.Contains(errOut, "connection 0") {
			t.Fatalf("exit %d, stderr %q: want 1 and the connection's error", code, errOut)
		}
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "an earlier run's distribution\n" {
		t.Fatalf("earlier -hdr file now %q (%v), want it untouched", b, err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("-hdr file of a run that did not start: %v, want none", err)
	}
	// A run that starts replaces the earlier file whole, however long.
	if err := os.WriteFile(old, bytes.Repeat([]byte("x"), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := loadServer(t)
	if code, _, errOut := loadRun(t, "-addr", addr, "-n", "10", "-method", "1", "-payload-hex", loadRequestHex, "-hdr", old); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f, err := os.Open(old)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, err := loadgen.ReadPercentiles(f); err != nil || p.TotalCount != 10 {
		t.Fatalf("rewritten -hdr file: %v (%+v)", err, p)
	}
}

// The progress line shows the calls overdue beside those completed and
// failed (it showed no overdue count).
func TestLoadProgressLine(t *testing.T) {
	got := progressLine(loadgen.Progress{Elapsed: 2500 * time.Millisecond, Calls: 1200, Failed: 3, Rate: 480, Overdue: 17})
	if want := "  2.5s       480 calls/s       1200 calls  3 failed  17 overdue\n"; got != want {
		t.Fatalf("progress line %q, want %q", got, want)
	}
}

// -warmup makes the same calls first and counts them nowhere: the server
// runs more calls than the report holds (there was no -warmup).
func TestLoadWarmup(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	addr := loadServerHook(t, func() { n.Add(1) })
	code, out, errOut := loadRun(t, "-addr", addr, "-n", "50", "-c", "2", "-concurrency", "2", "-warmup", "100ms",
		"-method", "1", "-payload-hex", loadRequestHex, "-json")
	if code != 0 || !strings.Contains(errOut, "warming up for 100ms") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	rep := loadReport(t, out)
	loadCheckClean(t, rep)
	if rep.Calls != 50 {
		t.Fatalf("the report holds %d calls, want the 50 measured", rep.Calls)
	}
	if got := n.Load(); got <= 50 {
		t.Fatalf("the server ran %d calls: no warm-up", got)
	}
}

// Ctrl-C during the warm-up: nothing was measured, and the exit status
// says the run failed.
func TestLoadWarmupInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	addr := loadServerHook(t, func() { once.Do(cancel) })
	stop := time.AfterFunc(30*time.Second, cancel) // only keeps a server that gets no call from hanging the test
	defer stop.Stop()
	var out, errOut bytes.Buffer
	code := runLoadCtx(ctx, []string{"-addr", addr, "-n", "10", "-warmup", "1h", "-method", "1", "-payload-hex", loadRequestHex}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "interrupted during the warm-up") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// sparseFile makes a file of size bytes in dir (zeros, sparse where the
// file system allows: nothing is written) and returns its path.
func sparseFile(t *testing.T, dir, name string, size int64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// -metadata k=v (repeatable) goes with every call of a run, through either
// client; a server that needs it answers every call without it 400.
func TestLoadMetadata(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer()
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		md := rpc.MetadataFrom(ctx)
		if string(md.Get("tenant")) != "blue" || string(md.Get("trace")) != "a=b" {
			return resp, rpc.Errorf(rpc.StatusBadRequest, "no metadata")
		}
		return append(resp, req...), nil
	})
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	addr := l.Addr().String()
	base := []string{"-addr", addr, "-n", "30", "-method", "1", "-payload-hex", "00", "-json"}
	for _, client := range []string{"rpc", "direct"} {
		args := append(base, "-client", client, "-c", "2", "-concurrency", "1", "-metadata", "tenant=blue", "-metadata", "trace=a=b")
		code, out, errOut := loadRun(t, args...)
		if code != 0 {
			t.Fatalf("load %q: exit %d: %s", args, code, errOut)
		}
		loadCheckClean(t, loadReport(t, out))
	}
	// Without it: every call 400, exit 1.
	if code, _, errOut := loadRun(t, base...); code != 1 || !strings.Contains(errOut, "all 30 calls failed (status 400: 30)") {
		t.Errorf("load without -metadata: exit %d, stderr %q; want 1, all calls 400", code, errOut)
	}
	if code, _, errOut := loadRun(t, append(base, "-metadata", "novalue")...); code != 2 || !strings.Contains(errOut, `"novalue": want key=value`) {
		t.Errorf("load -metadata novalue: exit %d, stderr %q; want 2", code, errOut)
	}
}
