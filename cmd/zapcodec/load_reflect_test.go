package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
	"github.com/zapcodec/zapcodec/rpc"
)

// TestLoadReflect: without -schema, a -method name is found among the
// schemas the server reflects, at its service's mount (greet.Greeter at
// 100), and -payload-json is encoded by its request struct: every call
// is answered 200 by the generated handler, which decodes it. The
// errors: a server without reflection, a method it does not have, a
// streaming method, -payload-json with an ordinal.
func TestLoadReflect(t *testing.T) {
	t.Parallel()
	addr := reflServer(t, nil)
	for _, method := range []string{"greet.Greeter.hello", "Greeter.hello", "hello"} {
		code, out, errOut := loadRun(t, "-addr", addr, "-n", "50", "-c", "1", "-concurrency", "2",
			"-method", method, "-payload-json", `{"Name": "ZAP"}`, "-json")
		if code != 0 {
			t.Fatalf("-method %s: exit %d: %s", method, code, errOut)
		}
		rep := loadReport(t, out)
		loadCheckClean(t, rep)
		// Request frame 5 + 44 bytes and the HelloRequest.
		want := (&greet.HelloRequest{Name: "ZAP"}).AppendZAP(nil)
		if rep.BytesOut != rep.Calls*uint64(5+44+len(want)) {
			t.Errorf("-method %s: %d bytes out for %d calls, want %d each", method, rep.BytesOut, rep.Calls, 5+44+len(want))
		}
	}
	plain := loadServer(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-addr", plain, "-method", "Greeter.hello"}, 2, `-method "Greeter.hello": the server at ` + plain + ` does not serve reflection (rpc.WithReflection): pass -schema FILE, or an ordinal`},
		{[]string{"-addr", addr, "-method", "Greeter.helo"}, 2, `-method "Greeter.helo" at ` + addr + `: the server has no such method; did you mean greet.Greeter.hello?`},
		{[]string{"-addr", addr, "-method", "streams.Feed.subscribe"}, 2, "a streaming method"},
		{[]string{"-addr", addr, "-method", "Greeter.hello", "-payload-json", `{"Nme": 1}`}, 2, "-payload-json: "},
		{[]string{"-addr", addr, "-method", "101", "-payload-json", `{"Name": "ZAP"}`}, 2, "-payload-json needs -schema and -type (or a -method the schema names, or a method name the server reflects)"},
		{[]string{"-addr", deadAddr(t), "-method", "Greeter.hello"}, 1, "cannot connect to "},
	} {
		code, _, errOut := loadRun(t, append(tc.args, "-n", "1")...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d (want %d), stderr %q, want %q", tc.args, code, tc.code, errOut, tc.want)
		}
	}
}

// greetServer serves greet.Greeter at base with reflection, its schema
// src ("": the generated one), counting its calls in n.
func greetServer(t *testing.T, base uint32, src string, n *atomic.Int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer(rpc.WithReflection(), rpc.WithLogger(slog.New(slog.DiscardHandler)),
		rpc.WithInterceptors(func(ctx context.Context, method uint32, req, resp []byte, h rpc.Handler) ([]byte, error) {
			n.Add(1)
			return h(ctx, req, resp)
		}))
	opts := []rpc.MountOption{rpc.At(base)}
	if src != "" {
		opts = append(opts, rpc.WithSchema(src))
	}
	greet.RegisterGreeterServer(s, reflGreeter{}, opts...)
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// TestLoadReflectCluster: each replica of a cluster target is asked for
// its schemas. Replicas that serve the method at the same ordinal with
// the same request run the load, spread over both; replicas that mount
// it at different ordinals, or whose schemas encode the request
// differently, fail it before a call, naming both.
func TestLoadReflectCluster(t *testing.T) {
	t.Parallel()
	var na, nb, nc, nd atomic.Int64
	a := greetServer(t, 100, "", &na)
	b := greetServer(t, 100, "", &nb)
	code, out, errOut := loadRun(t, "-addr", "static:///"+a+","+b, "-n", "200", "-c", "1", "-concurrency", "2",
		"-method", "Greeter.hello", "-payload-json", `{"Name": "ZAP"}`, "-json")
	if code != 0 {
		t.Fatalf("two replicas that agree: exit %d: %s", code, errOut)
	}
	loadCheckClean(t, loadReport(t, out))
	if na.Load() < 2 || nb.Load() < 2 { // the reflection call, and calls of the run
		t.Errorf("the replicas ran %d and %d calls: not spread", na.Load(), nb.Load())
	}
	moved := greetServer(t, 500, "", &nc)
	code, _, errOut = loadRun(t, "-addr", "static:///"+a+","+moved, "-n", "1", "-method", "greet.Greeter.hello", "-payload-json", `{"Name": "ZAP"}`)
	if code != 2 || !strings.Contains(errOut, "the replicas disagree: "+a+" serves it at ordinal 101, "+moved+" at 501") {
		t.Errorf("replicas with the method at different ordinals: exit %d, stderr %q", code, errOut)
	}
	reshaped := greetServer(t, 100, "package greet\nstruct HelloRequest\n    ID u64\n    Name text\nstruct HelloReply\n    Message text\ninterface Greeter {\n    hello(req: HelloRequest) returns (resp: HelloReply)\n}\n", &nd)
	code, _, errOut = loadRun(t, "-addr", "static:///"+a+","+reshaped, "-n", "1", "-method", "hello", "-payload-json", `{"Name": "ZAP"}`)
	if code != 2 || !strings.Contains(errOut, "the replicas disagree: the request encodes to ") || !strings.Contains(errOut, reshaped) {
		t.Errorf("replicas whose schemas encode the request differently: exit %d, stderr %q", code, errOut)
	}
	if nc.Load() != 1 || nd.Load() != 1 {
		t.Errorf("replicas that disagree ran %d and %d calls, want the reflection call alone", nc.Load(), nd.Load())
	}
}

// TestLoadMethodNamed: a run whose method was named reports the name
// beside the ordinal (text and JSON), whether reflection or -schema
// found it, and -at offsets a method -schema names by the mount of its
// service: without it, the calls go to the unmounted ordinal and fail
// 404. -at with an ordinal, or without -schema, is a usage error.
func TestLoadMethodNamed(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	addr := greetServer(t, 100, "", &n)
	schemaPath := "../../examples/quickstart/greet/greet.zap"
	base := []string{"-addr", addr, "-n", "20", "-c", "1", "-concurrency", "2", "-payload-json", `{"Name": "ZAP"}`}

	code, out, errOut := loadRun(t, append(base, "-method", "hello")...)
	if code != 0 || !strings.Contains(out, ", greet.Greeter.hello (method 101): ") {
		t.Fatalf("reflected -method hello: exit %d, report %q (stderr %q), want it named greet.Greeter.hello (method 101)", code, out, errOut)
	}
	code, out, errOut = loadRun(t, append(base, "-method", "hello", "-schema", schemaPath, "-at", "100", "-json")...)
	if code != 0 {
		t.Fatalf("-schema -at 100: exit %d: %s", code, errOut)
	}
	rep := loadReport(t, out)
	loadCheckClean(t, rep)
	if rep.Method != 101 || rep.MethodName != "greet.Greeter.hello" {
		t.Errorf("-schema -at 100: method %d %q, want 101 greet.Greeter.hello", rep.Method, rep.MethodName)
	}
	_, out, _ = loadRun(t, append(base, "-method", "hello", "-schema", schemaPath, "-json")...)
	if rep := loadReport(t, out); rep.Method != 1 || rep.Statuses["404"] != rep.Calls {
		t.Errorf("-schema without -at: method %d, statuses %v, want method 1 answered 404", rep.Method, rep.Statuses)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-method", "101", "-at", "100"}, "-at: -method 101 is an ordinal, the whole of it"},
		{[]string{"-method", "hello", "-at", "100"}, "-at offsets a method named through -schema"},
		{[]string{"-method", "hello", "-schema", schemaPath, "-at", "4294967295"}, "-at 4294967295: the method's ordinal 4294967296 is above the largest"},
	} {
		code, _, errOut := loadRun(t, append([]string{"-addr", addr, "-n", "1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
