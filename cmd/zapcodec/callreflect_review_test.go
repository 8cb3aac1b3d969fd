package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
	"github.com/zapcodec/zapcodec/rpc"
)

// forgedReflection is a server interceptor that answers the reflection
// call with answer (or fails it with err) in place of the server's own:
// what a hostile or broken server may send.
func forgedReflection(answer []byte, err error) rpc.Interceptor {
	return func(ctx context.Context, method uint32, req, resp []byte, h rpc.Handler) ([]byte, error) {
		if method != rpc.ReflectionMethod {
			return h(ctx, req, resp)
		}
		if err != nil {
			return resp, err
		}
		return append(resp, answer...), nil
	}
}

// TestCallReflectForged: reflection answers that are not the server's
// own: a denial (an interceptor that authenticates), bytes that are no
// message, another method's answer, services past the largest ordinal,
// and very many services. Each gives a clear error and exit status, or
// (many services) a listing; none a panic.
func TestCallReflectForged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reply := (&greet.HelloReply{Message: "hello, I am not a reflection answer"}).AppendZAP(nil)
	var many rpc.ReflectionResponse
	for i := range 20000 {
		many.Services = append(many.Services, rpc.ReflectedService{Name: fmt.Sprintf("s%d.S", i), Base: uint32(i) * 3, Methods: 3})
	}
	past := rpc.ReflectionResponse{Services: []rpc.ReflectedService{{Name: "a.B", Base: rpc.MaxMethod - 1, Methods: 5}}}
	for _, tc := range []struct {
		name   string
		answer []byte
		err    error
		code   int
		stdout string
		stderr string
	}{
		{"denied", nil, rpc.Errorf(rpc.StatusForbidden, "who are you?"), 1, "", "zapcodec call: reflection: status 403: who are you?\n"},
		{"no message", []byte("{\"services\": []}"), nil, 3, "", "zapcodec call: asking the server for its schemas (reflection): rpc: reflection: bad answer (16 bytes): "},
		{"another answer", reply, nil, 3, "", "zapcodec call: asking the server for its schemas (reflection): rpc: reflection: bad answer"},
		{"past MaxMethod", past.AppendZAP(nil), nil, 3, "", "a service past MaxMethod"},
		{"many", many.AppendZAP(nil), nil, 0, "s19999.S  # mounted at 59997\n  (no schema: 3 methods, ordinals 59998..60000)\n", ""},
	} {
		addr := reflServer(t, nil, rpc.WithInterceptors(forgedReflection(tc.answer, tc.err)))
		code, out, errOut := callRun(ctx, "", "-list", addr)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout %.300q (want %q)\nstderr %.300q (want %q)", tc.name, code, tc.code, out, tc.stdout, errOut, tc.stderr)
		}
		t.Logf("%s: exit %d, %d bytes out, stderr %.200q", tc.name, code, len(out), errOut)
		code, _, errOut = callRun(ctx, "", "-method", "S.nope", addr)
		if code == 0 || len(errOut) > 2000 {
			t.Errorf("%s: a call: exit %d, stderr of %d bytes: %.300q", tc.name, code, len(errOut), errOut)
		}
		t.Logf("%s: a call: exit %d, stderr %.300q", tc.name, code, errOut)
	}
}

// TestCallReflectManyAndLimits: a server with thousands of services,
// each with its schema, lists them all and calls any; schemas that the
// parser's limits refuse (lists nested past schema.MaxListDepth, a
// million deep) are named as unusable beside the others, with no crash.
func TestCallReflectManyAndLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const services = 3000
	addr := reflServer(t, func(s *rpc.Server) {
		for i := range services {
			src := fmt.Sprintf("package p%d\ninterface S {\n    ping()\n    pong()\n}\n", i)
			s.Mount(fmt.Sprintf("p%d.S", i), 2, rpc.At(uint32(1000+2*i)), rpc.WithSchema(src))
		}
		s.Mount("deep.S", 1, rpc.At(20000), rpc.WithSchema("package deep\nstruct R\n    X "+strings.Repeat("list<", 9)+"u8"+strings.Repeat(">", 9)+"\ninterface S {\n    f(req: R)\n}\n"))
		s.Mount("deeper.S", 1, rpc.At(20010), rpc.WithSchema("package deeper\nstruct R\n    X "+strings.Repeat("list<", 1_000_000)+"u8\ninterface S {\n    f(req: R)\n}\n"))
	})
	code, out, errOut := callRun(ctx, "", "-list", addr)
	if code != 3 || !strings.Contains(out, "p2999.S  # mounted at 6998\n  ping()  # ordinal 6999\n  pong()  # ordinal 7000\n") ||
		!strings.Contains(out, "deep.S  # mounted at 20000\n  (a schema that cannot be used") ||
		!strings.Contains(out, "deeper.S  # mounted at 20010\n  (a schema that cannot be used") ||
		!strings.Contains(errOut, "the server's schema of service deep.S does not parse") ||
		!strings.Contains(errOut, "the server's schema of service deeper.S does not parse") {
		t.Errorf("-list: exit %d, stdout of %d bytes, stderr %.1000q", code, len(out), errOut)
	}
	t.Logf("-list: %d bytes, stderr %.500q", len(out), errOut)
	code, out, errOut = callRun(ctx, "", "-method", "p1234.S.pong", addr)
	// The handler is none (Mount without Handle): 404, which names the ordinal.
	if code != 1 || !strings.Contains(errOut, "at ordinal 3470") {
		t.Errorf("a call to one of %d services: exit %d, stdout %q, stderr %q", services, code, out, errOut)
	}
}
