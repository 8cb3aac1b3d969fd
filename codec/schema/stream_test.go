package schema

import (
	"strings"
	"testing"
)

// Streaming methods (zapcodec extension): "stream T" as a parameter or a
// result, with or without a name.
func TestStreamMethods(t *testing.T) {
	src := `package logs
struct Filter
    From u64
struct Log
    Block u64
struct Summary
    N u32
struct stream
    X u32

interface Logs {
    subscribe(req: Filter) returns (stream Log)
    upload(stream Log) returns (resp: Summary)
    chat(stream Log) returns (stream Log)
    named(in: stream Log) returns (out: stream Summary)
    plain(stream: Filter) returns (resp: stream)
}
`
	f, err := Parse("logs.zap", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ms := f.Interfaces[0].Methods
	type want struct {
		req, resp             string
		reqStream, respStream bool
		reqName, respName     string
	}
	for i, w := range []want{
		{"Filter", "Log", false, true, "req", ""},
		{"Log", "Summary", true, false, "", "resp"},
		{"Log", "Log", true, true, "", ""},
		{"Log", "Summary", true, true, "in", "out"},
		{"Filter", "stream", false, false, "stream", "resp"},
	} {
		m := ms[i]
		if m.Req.Name != w.req || m.Resp.Name != w.resp || m.ReqStream != w.reqStream || m.RespStream != w.respStream ||
			m.ReqName != w.reqName || m.RespName != w.respName || m.Ordinal != uint32(i+1) {
			t.Errorf("method %s: %+v", m.Name, m)
		}
	}
	for _, bad := range []struct{ src, err string }{
		{"struct A\n    X u32\ninterface I {\n    m(stream) returns (resp: A)\n}\n", `expected ":" after parameter name stream`},
		{"struct A\n    X u32\ninterface I {\n    m(stream u32)\n}\n", "is not a struct"},
		{"struct A\n    X u32\ninterface I {\n    m(stream A, stream A)\n}\n", "at most one parameter"},
		{"struct A\n    X u32\ninterface I {\n    m() returns (stream Nope)\n}\n", "Nope"},
		// The name after the word stream, as in "stream req: A".
		{"struct A\n    X u32\ninterface I {\n    m(stream req: A) returns (resp: A)\n}\n", `bad.zap:4:17: a stream parameter is written "stream T" or "name: stream T", not "stream req: T"`},
		{"struct A\n    X u32\ninterface I {\n    m(req: A) returns (stream out: A)\n}\n", `bad.zap:4:34: a stream result is written "stream T" or "name: stream T", not "stream out: T"`},
	} {
		if _, err := Parse("bad.zap", []byte(bad.src)); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%q: error %v, want one containing %q", bad.src, err, bad.err)
		}
	}
}
