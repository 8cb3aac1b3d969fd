package main

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/internal/fixture"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The -update flag is shared with the other golden tests of this package;
// it is defined here only when no other test file has defined it (package
// variables, such as another file's flag.Bool, are set before init runs).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func dumpUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const dumpDir = "testdata/dump"

// dumpCase is one golden run: input is a file in testdata/dump (fed on
// stdin), args are the flags; a *.zap argument names a schema (see
// dumpSchema).
type dumpCase struct {
	name  string
	input string
	args  []string
}

func dumpCases() []dumpCase {
	cs := []dumpCase{
		// Schema-driven records, bare messages.
		{"gen_request_schema", "gen_request.hex", []string{"-schema", "eth.zap", "-type", "GetBalanceRequest"}},
		{"gen_request_method", "gen_request.hex", []string{"-schema", "eth.zap", "-type", "Eth.getBalance"}},
		{"gen_response_method", "gen_response.hex", []string{"-schema", "eth.zap", "-type", "getBalance", "-response"}},
		{"gen_zero_values_schema", "gen_zero_values.hex", []string{"-schema", "eth.zap", "-type", "GetBalanceRequest"}},
		{"gen_everything_schema", "gen_everything.hex", []string{"-schema", "kitchen.zap", "-type", "Everything"}},
		{"gen_item_1_schema", "gen_item_1.hex", []string{"-schema", "kitchen.zap", "-type", "Item"}},
		// Every list<T> as the canonical compiler writes it (generated-lists.json).
		{"genl_all_lists_filled_schema", "genl_all_lists_filled.hex", []string{"-schema", "lists.zap", "-type", "Lists"}},
		{"genl_all_lists_empty_schema", "genl_all_lists_empty.hex", []string{"-schema", "lists.zap", "-type", "Lists"}},
		{"genl_mix_schema", "genl_mix.hex", []string{"-schema", "lists.zap", "-type", "Lists"}},
		{"genl_shape_origin_object_bytes_schema", "genl_shape_origin_object_bytes.hex", []string{"-schema", "service_ws.zap", "-type", "Shape"}},
		{"genl_shape_zero_schema", "genl_shape_zero.hex", []string{"-schema", "service_ws.zap", "-type", "Geometry.area"}},
		// A struct of size 0 written last: root offset == size, as the
		// canonical runtime writes it (messages-more.json).
		{"msgmore_zero_size_root", "msgmore_zero_size_root.hex", nil},
		{"msgmore_zero_size_root_schema", "msgmore_zero_size_root.hex", []string{"-schema", "empty.zap", "-type", "Empty"}},
		{"gen_request_bin", "gen_request.bin", nil},
		{"gen_request_bin_schema", "gen_request.bin", []string{"-raw", "-schema", "eth.zap", "-type", "GetBalanceRequest"}},
		// Frame streams.
		{"rpc_frames", "rpc_frames.hex", nil},
		{"rpc_frames_schema", "rpc_frames.hex", []string{"-schema", "num.zap", "-type", "T"}},
		{"err_rpc_frames_eth", "rpc_frames.hex", []string{"-schema", "eth.zap", "-type", "Eth"}}, // fixture payloads are not eth records
		{"streams_unary_and_stream", "streams_unary_and_stream.hex", nil},                        // canonical stream frames (streams.json)
		{"streams_unary_and_stream_schema", "streams_unary_and_stream.hex", []string{"-schema", "num.zap", "-type", "Num"}},
		{"ext_frames", "ext_frames.hex", nil}, // zapcodec's own kinds: ping, pong, window (hello, grant, malformed), an error end, a stream trailer
		// A caller's cancel (kind 12): the question (a ping), the
		// server's announcement (promise 0), a cancel of promise 5, one
		// shorter than a promise id.
		{"ext_cancel", "ext_cancel.hex", nil},
		// Stream trailers (kind 10) a client refuses: shorter than the
		// stream id; metadata whose last key has no value.
		{"err_ext_trailer_bad", "ext_trailer_bad.hex", nil},
		// Pings and pongs past the 8 bytes a ping may carry: the payload
		// summarized as other bodies are (it was printed whole, up to the
		// 64 MiB a frame may hold), the ping an error.
		{"err_long_ping", "long_ping.hex", nil},
		// zapcodec's envelope extensions (docs/wire.md §8): a deadline,
		// metadata (two pairs; a key without its value; a length past the
		// end), the not-run flag (extEnvelopes builds these bytes).
		{"err_ext_envelopes", "ext_envelopes.hex", nil},
		{"eth_frames", "eth_frames.hex", nil},
		// The demo's streaming method (EthLogs.streamLogs): open, two
		// messages, end; built with rpc/wire from records of the demo schema.
		{"eth_stream", "eth_stream.hex", nil},
		{"eth_stream_schema", "eth_stream.hex", []string{"-schema", "examples/ethrpc/eth.zap", "-type", "EthLogs"}},
		{"eth_stream_method", "eth_stream.hex", []string{"-schema", "examples/ethrpc/eth.zap", "-type", "EthLogs.streamLogs"}},
		{"eth_frames_schema", "eth_frames.hex", []string{"-schema", "eth.zap", "-type", "Eth"}},
		{"eth_frames_bin_method", "eth_frames.bin", []string{"-frames", "-schema", "eth.zap", "-type", "Eth.getBalance"}},
		{"eth_call", "eth_call.hex", nil},
		{"eth_call_schema", "eth_call.hex", []string{"-schema", "eth.zap", "-type", "Eth"}},
		{"eth_answer_schema", "eth_answer.hex", []string{"-schema", "eth.zap", "-type", "Eth.getBalance"}}, // captured from examples/ethrpc -serve
		{"eth_http", "eth_http.hex", []string{"-http"}},
		{"eth_http_schema", "eth_http.hex", []string{"-http", "-schema", "eth.zap", "-type", "getBalance"}},
		// Envelopes given as single messages.
		{"env_call_plain_schema", "env_call_plain.hex", []string{"-schema", "num.zap", "-type", "T"}},
		{"env_reply_ok_schema", "env_reply_ok.hex", []string{"-schema", "num.zap", "-type", "T.first", "-response"}},
		{"env_reply_not_found_schema", "env_reply_not_found.hex", []string{"-schema", "num.zap", "-type", "T", "-response"}},
		// Garbage.
		{"err_garbage", "garbage.hex", nil},
		{"err_short_message", "short_message.hex", nil},
		{"err_odd_hex", "odd.hex", nil},
		{"err_forced_hex", "text.txt", []string{"-hex"}},
		{"err_text_as_frames", "text.txt", nil},
		{"err_truncated_frame", "truncated_frame.hex", nil},
		{"err_bad_envelopes", "bad_envelopes.hex", nil}, // a plain message as a request, a response without its fixed section
		{"err_message_as_frames", "msg_crosswire_v1.hex", []string{"-frames"}},
		{"err_wrong_type", "gen_request.hex", []string{"-schema", "kitchen.zap", "-type", "Everything"}},
		{"err_interface_bare", "gen_request.hex", []string{"-schema", "eth.zap", "-type", "Eth"}},
	}
	// Every message, envelope and generated record without a schema.
	for _, prefix := range []string{"msg_", "env_", "gen_", "genl_"} {
		files, _ := filepath.Glob(filepath.Join(dumpDir, prefix+"*.hex"))
		for _, f := range files {
			base := filepath.Base(f)
			cs = append(cs, dumpCase{strings.TrimSuffix(base, ".hex"), base, nil})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

// dumpSchema returns the path of the schema a case names: a path with a
// slash is from the repository root (examples/ethrpc/eth.zap, the demo's
// own); a bare name is the one copy in the canonical schemas
// (testdata/canonical/schemas or its more/), or a schema of dump's own in
// testdata/dump (num.zap).
func dumpSchema(t testing.TB, name string) string {
	t.Helper()
	if strings.Contains(name, "/") {
		return filepath.Join("..", "..", filepath.FromSlash(name))
	}
	dir := fixture.Dir(t)
	for _, p := range []string{filepath.Join(dir, "schemas", name), filepath.Join(dir, "schemas", "more", name)} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(dumpDir, name)
}

// runDumpCase runs one case with the given input and returns the golden
// text: the command, stdout, stderr and exit code.
func runDumpCase(t testing.TB, c dumpCase, input []byte) string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = a
		if strings.HasSuffix(a, ".zap") {
			args[i] = dumpSchema(t, a)
		}
	}
	var stdout, stderr bytes.Buffer
	code := runDump(args, bytes.NewReader(input), &stdout, &stderr)
	return fmt.Sprintf("$ zapcodec dump %s < %s\n%s--- stderr\n%s--- exit %d\n",
		strings.Join(c.args, " "), c.input, stdout.String(), stderr.String(), code)
}

func dumpGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(dumpDir, name+".golden")
	if dumpUpdating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDumpGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestDumpGolden runs every case on the copies in testdata/dump.
func TestDumpGolden(t *testing.T) {
	t.Parallel()
	for _, c := range dumpCases() {
		t.Run(c.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(dumpDir, c.input))
			if err != nil {
				t.Fatal(err)
			}
			got := runDumpCase(t, c, in)
			dumpGolden(t, c.name, got)
			wantExit := "--- exit 0\n"
			if strings.HasPrefix(c.name, "err_") {
				wantExit = "--- exit 1\n"
			}
			if !strings.HasSuffix(got, wantExit) {
				t.Errorf("want %q:\n%s", wantExit, got)
			}
		})
	}
}

// dumpSharedInputs builds, from the shared fixtures, the bytes every input
// file of testdata/dump stands for: messages.json cases, generated.json
// records, rpc.json frames and envelopes, and an eth call stream built
// around the generated eth request and response with package rpc/wire.
func dumpSharedInputs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	read := func(name string, v any) {
		raw, err := os.ReadFile(filepath.Join(dir, "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in := map[string][]byte{}
	var msgs struct{ Cases []struct{ Name, Hex string } }
	read("messages.json", &msgs)
	for _, c := range msgs.Cases {
		in["msg_"+c.Name+".hex"] = unhex(c.Hex)
	}
	var more struct{ Cases []struct{ Name, Hex string } }
	read("messages-more.json", &more)
	for _, c := range more.Cases {
		name := "msgmore_" + c.Name + ".hex"
		if _, err := os.Stat(filepath.Join(dumpDir, name)); err == nil { // the cases kept in testdata/dump
			in[name] = unhex(c.Hex)
		}
	}
	var streams struct {
		Scenarios []struct {
			Name   string
			Frames []struct{ Hex string }
		}
	}
	read("streams.json", &streams)
	for _, sc := range streams.Scenarios {
		name := "streams_" + sc.Name + ".hex"
		if _, err := os.Stat(filepath.Join(dumpDir, name)); err == nil { // the scenarios kept in testdata/dump
			var b []byte
			for _, f := range sc.Frames {
				b = append(b, unhex(f.Hex)...)
			}
			in[name] = b
		}
	}
	var gen struct{ Cases []struct{ Name, Hex string } }
	read("generated.json", &gen)
	for _, c := range gen.Cases {
		in["gen_"+c.Name+".hex"] = unhex(c.Hex)
	}
	var genl struct{ Cases []struct{ Name, Hex string } }
	read("generated-lists.json", &genl)
	for _, c := range genl.Cases {
		name := "genl_" + c.Name + ".hex"
		if _, err := os.Stat(filepath.Join(dumpDir, name)); err == nil { // the cases kept in testdata/dump
			in[name] = unhex(c.Hex)
		}
	}
	in["gen_request.bin"] = in["gen_request.hex"]
	var rpcs struct {
		Envelopes []struct{ Name, Hex string }
		Frames    []struct{ Name, Hex string }
	}
	read("rpc.json", &rpcs)
	for _, e := range rpcs.Envelopes {
		in["env_"+e.Name+".hex"] = unhex(e.Hex)
	}
	var frames []byte
	for _, f := range rpcs.Frames {
		frames = append(frames, unhex(f.Hex)...)
	}
	in["rpc_frames.hex"] = frames

	req, resp, zero := in["gen_request.hex"], in["gen_response.hex"], in["gen_zero_values.hex"]
	if req == nil || resp == nil || zero == nil {
		t.Fatal("generated.json lacks the eth request, response or zero_values case")
	}
	frame := func(dst []byte, kind byte, env []byte) []byte {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(1+len(env)))
		return append(append(dst, kind), env...)
	}
	var s []byte
	s = frame(s, wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 7, Payload: req}))
	s = frame(s, wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 7, Body: resp}))
	s = frame(s, wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: 8, Payload: req}))
	s = frame(s, wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 404, PromiseID: 8, Body: []byte("no such method")}))
	in["eth_frames.hex"] = s
	in["eth_frames.bin"] = s
	var h []byte
	for _, m := range [][]byte{req, zero} {
		h = binary.BigEndian.AppendUint32(h, uint32(len(m)))
		h = append(h, m...)
	}
	in["eth_http.hex"] = h
	return in
}

// TestDumpShared checks that the inputs in testdata/dump hold the canonical
// fixtures' bytes, and runs every golden case on the bytes taken from the
// canonical fixtures themselves.
func TestDumpShared(t *testing.T) {
	t.Parallel()
	dir := fixture.Dir(t)
	shared := dumpSharedInputs(t, dir)
	for name, want := range shared {
		local, err := os.ReadFile(filepath.Join(dumpDir, name))
		if err != nil {
			t.Errorf("no local copy of %s: %v", name, err)
			continue
		}
		if strings.HasSuffix(name, ".hex") {
			local, err = unhexText(local)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
		}
		if !bytes.Equal(local, want) {
			t.Errorf("testdata/dump/%s differs from the shared fixture:\n local %x\nshared %x", name, local, want)
		}
	}
	ran := 0
	for _, c := range dumpCases() {
		b, ok := shared[c.input]
		if !ok {
			continue // not from a fixture (hand-made garbage)
		}
		ran++
		t.Run(c.name, func(t *testing.T) {
			input := b
			if strings.HasSuffix(c.input, ".hex") {
				input = []byte(hex.EncodeToString(b) + "\n")
			}
			got := runDumpCase(t, c, input)
			want, err := os.ReadFile(filepath.Join(dumpDir, c.name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("shared bytes give:\n%s\nthe golden file says:\n%s", got, want)
			}
		})
	}
	if ran < 30 {
		t.Fatalf("only %d golden cases come from the shared fixtures", ran)
	}
}

// TestDumpDispatch runs dump through the zapcodec command dispatcher.
func TestDumpDispatch(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run([]string{"dump", "-schema", dumpSchema(t, "eth.zap"), "-type", "GetBalanceRequest",
		filepath.Join(dumpDir, "gen_request.hex")}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), `"Method": "eth_getBalance"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	stdout.Reset()
	if code := run([]string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "zapcodec dump [flags] [FILE]") {
		t.Fatalf("usage lacks dump (exit %d):\n%s", code, &stdout)
	}
}

// TestDumpUsage checks the command-line errors: exit 2 and a message.
func TestDumpUsage(t *testing.T) {
	t.Parallel()
	eth := dumpSchema(t, "eth.zap")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-hex", "-raw"}, "-hex and -raw"},
		{[]string{"-message", "-frames"}, "-message excludes"},
		{[]string{"-message", "-http"}, "-message excludes"},
		{[]string{"a", "b"}, "at most one input file"},
		{[]string{"-schema", eth}, "-schema and -type go together"},
		{[]string{"-type", "X"}, "-schema and -type go together"},
		{[]string{"-schema", eth, "-type", "Nope"}, "no struct, interface or method"},
		{[]string{"-schema", eth, "-type", "Eth.nope"}, "has no method nope"},
		{[]string{"-schema", eth, "-type", "Nope.getBalance"}, "no interface Nope"},
		{[]string{"-schema", filepath.Join(dumpDir, "missing.zap"), "-type", "X"}, "missing.zap"},
		{[]string{"-schema", filepath.Join(dumpDir, "text.txt"), "-type", "X"}, "text.txt:1:"},
		{[]string{filepath.Join(dumpDir, "missing.hex")}, "missing.hex"},
		{[]string{"-bogus"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := runDump(tc.args, bytes.NewReader(nil), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestDumpAmbiguousMethod checks that a bare method name found in two
// interfaces is refused with both candidates named.
func TestDumpAmbiguousMethod(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "two.zap")
	src := "struct A\n    X u32\ninterface I {\n    get(req: A) returns (resp: A)\n}\ninterface J {\n    get(req: A)\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := runDump([]string{"-schema", path, "-type", "get"}, bytes.NewReader(nil), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "ambiguous: I.get, J.get") {
		t.Fatalf("exit %d, stderr %q", code, &stderr)
	}
	// Qualified, it works; J.get has no result, so a -response payload is an error.
	in := []byte("5a4150000100000010000000140000002a000000")
	stdout.Reset()
	stderr.Reset()
	code = runDump([]string{"-schema", path, "-type", "J.get"}, bytes.NewReader(in), &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), `"X": 42`) {
		t.Fatalf("exit %d\n%s%s", code, &stdout, &stderr)
	}
	stdout.Reset()
	stderr.Reset()
	code = runDump([]string{"-schema", path, "-type", "J.get", "-response"}, bytes.NewReader(in), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "has no response struct") {
		t.Fatalf("exit %d\n%s%s", code, &stdout, &stderr)
	}
}

// TestDumpQualifiedType: -type refused a name qualified by the schema's
// package, as service names are (generated IServiceName, zapcodec health
// -service): "eth.Eth.getBalance" gave "no interface eth in the schema".
// Qualified names now resolve as the bare ones do; a bare name that is
// the package's own still means what it names in the schema.
func TestDumpQualifiedType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "q.zap")
	src := "package q\nstruct A\n    X u32\nstruct q\n    Y u8\ninterface I {\n    get(req: A) returns (resp: A)\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	in := []byte("5a4150000100000010000000140000002a000000")
	for _, tc := range []struct {
		typ, want string
		code      int
	}{
		{"q.A", `"X": 42`, 0},
		{"q.I.get", `"X": 42`, 0},
		{"q.I", "-type I names an interface: give one of its methods", 1},
		{"q.get", `"X": 42`, 0},
		{"q", `"Y": 42`, 0}, // the struct q, not the package
		{"q.B", "-type q.B: no interface q in the schema", 2},
		{"r.A", "-type r.A: no interface r in the schema", 2},
	} {
		var stdout, stderr bytes.Buffer
		code := runDump([]string{"-schema", path, "-type", tc.typ}, bytes.NewReader(in), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("-type %s: exit %d, want %d and %q:\n%s%s", tc.typ, code, tc.code, tc.want, &stdout, &stderr)
		}
	}
}

// TestDumpStdinAndFile checks that a file argument and stdin give the same
// listing, and "-" means stdin.
func TestDumpStdinAndFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(dumpDir, "eth_frames.hex")
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a, b, c, errs bytes.Buffer
	runDump([]string{path}, bytes.NewReader(nil), &a, &errs)
	runDump(nil, bytes.NewReader(in), &b, &errs)
	runDump([]string{"-"}, bytes.NewReader(in), &c, &errs)
	if a.Len() == 0 || a.String() != b.String() || b.String() != c.String() || errs.Len() != 0 {
		t.Fatalf("file:\n%s\nstdin:\n%s\n-:\n%s\nstderr: %s", &a, &b, &c, &errs)
	}
}

// unhexText decodes a .hex input file of testdata/dump: hex digits and
// white space.
func unhexText(b []byte) ([]byte, error) {
	return hex.DecodeString(strings.Join(strings.Fields(string(b)), ""))
}

// extEnvelopes returns the frames of testdata/dump/ext_envelopes.hex, one
// hex line each: requests and a stream open with zapcodec's extension
// fields (a deadline, metadata, malformed metadata) and answers with and
// without the not-run flag.
func extEnvelopes() []byte {
	md := func(items ...string) []byte {
		var b []byte
		for _, s := range items {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
		return b
	}
	var out []byte
	frame := func(kind byte, env []byte) {
		var b []byte
		b = binary.LittleEndian.AppendUint32(b, uint32(1+len(env)))
		b = append(append(b, kind), env...)
		out = append(append(out, hex.EncodeToString(b)...), '\n')
	}
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1, Payload: []byte("ZAP\x00"), Timeout: 1500000, Metadata: md("tenant", "acme", "bin", "\x00\xff")}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1}))
	frame(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 2, PromiseID: 3, Timeout: 250}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 503, PromiseID: 5, Body: []byte("shutting down"), NotRun: true}))
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 6, Metadata: md("k", "v", "orphan")}))
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 7, Metadata: append(md("k", "v"), 9, 0, 0, 0, 'x')}))
	// Answers with response metadata: a result, an error, and metadata
	// that ends inside a pair.
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Body: []byte("ZAP\x00"), Metadata: md("trace", "t-1", "bin", "\x00\xff")}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 500, PromiseID: 6, Body: []byte("it broke"), Metadata: md("retry-after", "2s")}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 7, Metadata: md("k", "v", "orphan")}))
	return out
}

// TestDumpExtensions: dump showed a request's deadline and metadata
// (docs/wire.md §8) nowhere, only the envelope's size betraying them, and
// an answer's not-run flag not at all, so a 503 refused unrun looked like
// one a handler returned; then an answer's metadata not at all. The input of the err_ext_envelopes golden case is
// what extEnvelopes builds with rpc/wire; the listing shows each field.
func TestDumpExtensions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(dumpDir, "ext_envelopes.hex")
	if dumpUpdating() {
		if err := os.WriteFile(path, extEnvelopes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, extEnvelopes()) {
		t.Fatalf("%s is not what extEnvelopes builds (go test -run TestDumpExtensions -update)", path)
	}
	var stdout, stderr bytes.Buffer
	runDump(nil, bytes.NewReader(in), &stdout, &stderr)
	for _, want := range []string{
		"  deadline: 1.5s left when the request was written\n",
		"  metadata, 31 bytes, 2 pairs:\n    \"tenant\": \"acme\"\n    \"bin\": \"\\x00\\xff\"\n",
		"  deadline: 250µs left when the request was written\n",
		"status 503 Unavailable, not run (the server refused it before its handler ran: safe to send again), body 13 bytes\n",
		"  metadata, 20 bytes, 1 pair:\n    \"k\": \"v\"\n  error: at byte 331: metadata is not a whole number of key/value pairs",
		"  error: at byte 416: metadata is not a whole number",
		// An answer's metadata (docs/wire.md §8 "Response: metadata").
		"status 200 OK, body 4 bytes\n  metadata, 29 bytes, 2 pairs:\n    \"trace\": \"t-1\"\n    \"bin\": \"\\x00\\xff\"\n",
		"status 500 Internal Error, body 8 bytes\n  metadata, 21 bytes, 1 pair:\n    \"retry-after\": \"2s\"\n",
		"  metadata, 20 bytes, 1 pair:\n    \"k\": \"v\"\n  error: at byte 652: metadata is not a whole number of key/value pairs (a zapcodec client fails the call with rpc.ErrResponseMetadata)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the listing lacks %q:\n%s", want, &stdout)
		}
	}
	if strings.Count(stdout.String(), "not run") != 1 {
		t.Errorf("want one answer marked not run:\n%s", &stdout)
	}
}

// TestDumpCompressed: dump shows a request's accept-compressed flag, a
// compressed payload or answer body (docs/wire.md §8), inflated, an
// answer's takes-compressed-requests flag, and says so when a compressed
// payload or body does not inflate.
func TestDumpCompressed(t *testing.T) {
	t.Parallel()
	var comp bytes.Buffer
	w, _ := flate.NewWriter(&comp, flate.BestSpeed)
	w.Write(bytes.Repeat([]byte("log record "), 100))
	w.Close()
	var in []byte
	frame := func(kind byte, env []byte) {
		var b []byte
		b = binary.LittleEndian.AppendUint32(b, uint32(1+len(env)))
		b = append(append(b, kind), env...)
		in = append(append(in, hex.EncodeToString(b)...), '\n')
	}
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1, AcceptDeflate: true}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Body: comp.Bytes(), Deflated: true, TakesDeflate: true}))
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 3, Payload: comp.Bytes(), AcceptDeflate: true, PayloadDeflated: true}))
	frame(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 4, Payload: []byte("junk"), PayloadDeflated: true}))
	frame(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 2, Body: []byte("not deflate"), Deflated: true}))
	var stdout, stderr bytes.Buffer
	runDump(nil, bytes.NewReader(in), &stdout, &stderr)
	for _, want := range []string{
		"  accepts a compressed answer (raw DEFLATE)\n",
		fmt.Sprintf("status 200 OK, compressed (raw DEFLATE), takes compressed requests, body %d bytes\n  body inflated: 1100 bytes", comp.Len()),
		"compressed body: does not inflate",
		"  payload compressed (raw DEFLATE)\n  payload inflated: 1100 bytes",
		"compressed payload: does not inflate",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the listing lacks %q:\n%s", want, &stdout)
		}
	}
}
