package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/internal/gentest/streams"
	"github.com/zapcodec/zapcodec/internal/gentest/svc"
	"github.com/zapcodec/zapcodec/rpc"
)

// reflGeometry serves svc.Geometry: area answers the sum of the tags as X
// and the origin's Y.
type reflGeometry struct {
	svc.UnimplementedGeometryServer
}

func (reflGeometry) Area(ctx context.Context, req svc.ShapeView, resp *svc.Point) error {
	it := req.Tags().Iter()
	for it.Next() {
		resp.X += int32(it.Value())
	}
	resp.Y = req.Origin().Y()
	return nil
}

// reflGreeter serves greet.Greeter.
type reflGreeter struct{}

func (reflGreeter) Hello(ctx context.Context, req greet.HelloRequestView, resp *greet.HelloReply) error {
	resp.Message = "hello, " + req.Name()
	return nil
}

// reflServer serves, with reflection, generated services at three bases
// (svc.Geometry at 0, greet.Greeter at 100, streams.Feed unimplemented at
// 200) and a service mounted by hand without a schema at 300; mount, if
// not nil, mounts more. opts are the server's.
func reflServer(t *testing.T, mount func(*rpc.Server), opts ...rpc.ServerOption) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer(append([]rpc.ServerOption{rpc.WithReflection(), rpc.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	svc.RegisterGeometryServer(s, reflGeometry{})
	greet.RegisterGreeterServer(s, reflGreeter{}, rpc.At(100))
	streams.RegisterFeedServer(s, streams.UnimplementedFeedServer{}, rpc.At(200))
	s.Mount("plain", 2, rpc.At(300))
	if mount != nil {
		mount(s)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// TestCallReflectGolden: -list ADDR and unary calls to services at two
// bases, without -schema: the server's reflection gives the schemas and
// the bases.
func TestCallReflectGolden(t *testing.T) {
	t.Parallel()
	addr := reflServer(t, nil)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"testdata/call/reflect_list.golden", []string{"call", "-list", addr}},
		{"testdata/call/reflect_list.golden", []string{"call", addr, "-list"}},
		{"testdata/call/reflect_area.golden", []string{"call", "-method", "Geometry.area", "-d", `{"ID": 1, "Origin": {"X": 5, "Y": -7}, "Tags": [1, 2, 39], "Label": "tri"}`, addr}},
		{"testdata/call/reflect_hello.golden", []string{"call", addr, "-method", "greet.Greeter.hello", "-d", `{"Name": "ZAP"}`}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("zapcodec %q: exit %d, stderr %q", tc.args, code, stderr.String())
		}
		golden(t, tc.golden, stdout.Bytes())
	}
}

// TestCallReflect: how methods are found on a reflecting server, the
// ordinal called (the mount base included), and the errors.
func TestCallReflect(t *testing.T) {
	t.Parallel()
	addr := reflServer(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{name: "bare method", args: []string{"-method", "hello", "-d", `{"Name": "x"}`, addr}, out: `{"Message":"hello, x"}` + "\n"},
		{name: "interface name", args: []string{"-method", "Greeter.hello", "-d", `{"Name": "y"}`, "-v", addr}, out: `{"Message":"hello, y"}` + "\n", errOut: "zapcodec call: greet.Greeter.hello at ordinal 101 of " + addr + "\n"},
		{name: "unimplemented", args: []string{"-method", "streams.Feed.ping", addr}, code: 1, errOut: "zapcodec call: status 404: no such method\nzapcodec call: the server reflects streams.Feed.ping at ordinal 204, but answers it 404: no handler there, or one that is unimplemented\n"},
		{name: "ambiguous", args: []string{"-method", "ping", addr}, code: 2, errOut: `zapcodec call: -method "ping": more than one service has it (svc.Geometry.ping, streams.Feed.ping): name the service` + "\n"},
		{name: "near", args: []string{"-method", "Geometry.areas", addr}, code: 2, errOut: `zapcodec call: -method "Geometry.areas": the server has no such method; did you mean svc.Geometry.area?` + "\n"},
		{name: "no schema", args: []string{"-method", "plain.x", addr}, code: 2, errOut: `zapcodec call: -method "plain.x": service plain was mounted without a schema (rpc.WithSchema): pass -schema FILE (and -at 300)` + "\n"},
		{name: "bad JSON", args: []string{"-method", "hello", "-d", `{"Nam": "x"}`, addr}, code: 2, errOut: "zapcodec call: -d: "},
		{name: "-list with -method", args: []string{"-list", "-method", "hello", addr}, code: 2, errOut: "zapcodec call: -list takes no -method or -d\n"},
		{name: "-schema wins", args: []string{"-schema", callSchemaPath, "-method", "Demo.ping", addr}, code: 1, errOut: "zapcodec call: status 404: no such method\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := callRun(ctx, "", tc.args...)
			if code != tc.code || out != tc.out || !strings.HasPrefix(errOut, tc.errOut) || (tc.errOut == "" && errOut != "") {
				t.Errorf("call %q: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr starting %q", tc.args, code, out, errOut, tc.code, tc.out, tc.errOut)
			}
		})
	}
}

// TestCallReflectHostile: what a server reflects is read with the limits
// of the frame and of the schema parser. A schema that does not parse, or
// that does not declare the service, is named; a service name that is
// no printable text is quoted; -list still lists the others, and exits
// 3. A reflection answer larger than a frame is refused by the server
// that builds it (500) and, from a server that sends it anyway (a larger
// frame limit), by the client's frame reader: no answer, exit 3.
func TestCallReflectHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := reflServer(t, func(s *rpc.Server) {
		s.Mount("demo.Demo", 1, rpc.At(400), rpc.WithSchema("package demo\ninterface Demo {\n    hello(req: Nope)\n}\n"))
		s.Mount("demo.Other", 1, rpc.At(500), rpc.WithSchema("package demo\ninterface Else {\n    x()\n}\n"))
		s.Mount("\x1b[2Jevil", 1, rpc.At(600), rpc.WithSchema("package x\ninterface y { z() }\n"))
	})
	code, out, errOut := callRun(ctx, "", "-list", addr)
	for _, want := range []string{
		"svc.Geometry\n  area(Shape) returns (Point)  # ordinal 1\n",
		"demo.Demo  # mounted at 400\n  (a schema that cannot be used: 1 methods, ordinals 401..401)\n",
		"\"\\x1b[2Jevil\"  # mounted at 600\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-list: stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"zapcodec call: the server's schema of service demo.Demo does not parse: schema of demo.Demo:3:16: ",
		"zapcodec call: the server's schema of service demo.Other declares no interface of that name\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("-list: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code != 3 || strings.Contains(out+errOut, "\x1b") {
		t.Errorf("-list: exit %d (want 3), or an escape printed raw:\n%q\n%q", code, out, errOut)
	}
	code, _, errOut = callRun(ctx, "", "-method", "demo.Demo.hello", addr)
	if code != 3 || !strings.HasPrefix(errOut, `zapcodec call: -method "demo.Demo.hello": the server's schema of service demo.Demo does not parse: `) {
		t.Errorf("a call of a service whose schema does not parse: exit %d, stderr %q", code, errOut)
	}

	huge := "package h\ninterface H { x() }\n#" + strings.Repeat("x", frame.DefaultMaxFrameSize) + "\n"
	big := reflServer(t, func(s *rpc.Server) { s.Mount("h.H", 1, rpc.At(700), rpc.WithSchema(huge)) })
	// The 16 MiB answers take seconds to build and check under -race on
	// a loaded machine: a timeout well past call's default 5 s.
	code, _, errOut = callRun(ctx, "", "-timeout", "2m", "-list", big)
	if code != 1 || !strings.Contains(errOut, "zapcodec call: reflection: status 500: rpc: answer too large for a frame") {
		t.Errorf("a reflection answer past the server's frame: exit %d, stderr %q", code, errOut)
	}
	bigger := reflServer(t, func(s *rpc.Server) { s.Mount("h.H", 1, rpc.At(700), rpc.WithSchema(huge)) },
		rpc.WithFrameOptions(frame.WithMaxFrameSize(2*frame.DefaultMaxFrameSize)))
	code, _, errOut = callRun(ctx, "", "-timeout", "2m", "-list", bigger)
	if code != 3 || !strings.Contains(errOut, "zapcodec call: asking the server for its schemas (reflection): ") {
		t.Errorf("a reflection answer past the client's frame: exit %d, stderr %q", code, errOut)
	}
	t.Logf("past the client's frame: %s", errOut)
}
