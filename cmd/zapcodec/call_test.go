package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc"
)

const callSchemaPath = "testdata/call/demo.zap"

// callReq is the JSON of demo.zap's Req; callReply of its Reply.
type callReq struct {
	Name string
	N    uint32
}

type callReply struct {
	Message string
	N       uint32
	Data    string // hex
}

// callServer serves demo.zap's Demo at ordinals 1..8 and Admin at
// 101..102 (rpc.At(100)); hang's handler waits for started's receiver
// to be told (it sends on started, when not nil) and for the test's end.
func callServer(t *testing.T, started chan<- struct{}) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	callServe(t, started, l)
	return l.Addr().String()
}

// callServe serves callServer's server on l until the test's end.
func callServe(t *testing.T, started chan<- struct{}, l net.Listener) {
	t.Helper()
	src, err := os.ReadFile(callSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Parse(callSchemaPath, src)
	if err != nil {
		t.Fatal(err)
	}
	reqT, replyT := f.Struct("Req"), f.Struct("Reply")
	decode := func(b []byte) (callReq, error) {
		var r callReq
		js, err := dynamic.AppendJSON(nil, reqT, b)
		if err == nil {
			err = json.Unmarshal(js, &r)
		}
		return r, err
	}
	encode := func(dst []byte, r callReply) []byte {
		js, _ := json.Marshal(r)
		b, err := dynamic.AppendMessage(dst, replyT, js)
		if err != nil {
			panic(err)
		}
		return b
	}
	release := make(chan struct{})                                    // closed at the test's end
	s := rpc.NewServer(rpc.WithLogger(slog.New(slog.DiscardHandler))) // the cases' resets
	s.Mount("demo.Demo", 8)
	s.Mount("demo.Admin", 2, rpc.At(100))
	// hello
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		r, err := decode(req)
		if err != nil {
			return resp, rpc.Errorf(rpc.StatusBadRequest, "%v", err)
		}
		msg := "hello, " + r.Name
		if err := rpc.SetResponseMetadata(ctx, "served-by", "demo"); err != nil {
			return resp, err
		}
		if tag := rpc.MetadataFrom(ctx).Get("tag"); tag != nil {
			msg += " (tag " + string(tag) + ")"
		}
		return encode(resp, callReply{Message: msg, N: 2 * r.N, Data: "beef"}), nil
	})
	// count
	s.HandleStream(2, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		r, err := decode(init)
		if err != nil {
			return rpc.Errorf(rpc.StatusBadRequest, "%v", err)
		}
		for i := uint32(1); i <= r.N; i++ {
			if err := st.Send(encode(nil, callReply{Message: r.Name, N: i})); err != nil {
				return err
			}
		}
		return rpc.SetResponseMetadata(ctx, "sent", strconv.Itoa(int(r.N)))
	})
	// fail
	s.Handle(3, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		r, _ := decode(req)
		return resp, rpc.Errorf(rpc.StatusForbidden, "no access for %s", r.Name)
	})
	s.Handle(4, func(ctx context.Context, req, resp []byte) ([]byte, error) { return resp, nil }) // ping: nothing in, nothing out
	// upload
	s.HandleStream(5, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		var names []string
		var sum uint32
		for {
			b, err := st.Recv(nil)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			r, err := decode(b)
			if err != nil {
				return rpc.Errorf(rpc.StatusBadRequest, "%v", err)
			}
			names, sum = append(names, r.Name), sum+r.N
		}
		return st.Send(encode(nil, callReply{Message: strings.Join(names, "+"), N: sum}))
	})
	// chat
	s.HandleStream(6, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for {
			b, err := st.Recv(nil)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					// Not ended 504 from here: the client's own
					// -timeout ends the stream (TestCallStreamTimeout).
					<-release
				}
				return err
			}
			r, err := decode(b)
			if err != nil {
				return rpc.Errorf(rpc.StatusBadRequest, "%v", err)
			}
			if r.Name == "boom" {
				return rpc.Errorf(rpc.StatusBadRequest, "boom at %d", r.N)
			}
			if err := st.Send(encode(nil, callReply{Message: "echo " + r.Name, N: r.N})); err != nil {
				return err
			}
		}
	})
	// garbage
	s.Handle(7, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, 1, 2, 3), nil
	})
	// hang
	s.Handle(8, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if started != nil {
			started <- struct{}{}
		}
		<-release
		return resp, nil
	})
	s.Handle(101, func(ctx context.Context, req, resp []byte) ([]byte, error) { return resp, nil }) // Admin.ping
	s.Handle(102, func(ctx context.Context, req, resp []byte) ([]byte, error) { return resp, nil }) // Admin.stop
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	t.Cleanup(func() { close(release) }) // first: hang's handler returns
}

// callRun runs zapcodec call with args and stdin.
func callRun(ctx context.Context, stdin string, args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = runCallIO(ctx, strings.NewReader(stdin), args, &o, &e)
	return code, o.String(), e.String()
}

// deadAddr is an address where no server listens (one just closed).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hangUpAddr is the address of a listener that closes each connection
// it accepts: a dial succeeds, the call finds its connection closed.
func hangUpAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// zapcodec call against an in-process server: each case's exit status,
// stdout (exactly) and stderr (a part of it, "" for none expected).
func TestCall(t *testing.T) {
	t.Parallel()
	addr := callServer(t, nil)
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "req.json")
	if err := os.WriteFile(reqFile, []byte(`{"Name": "file", "N": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	linesFile := filepath.Join(dir, "lines.json")
	if err := os.WriteFile(linesFile, []byte("{\"Name\":\"p\",\"N\":1}\n{\"Name\":\"q\",\"N\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSchema := filepath.Join(dir, "bad.zap")
	if err := os.WriteFile(badSchema, []byte("struct A\n    X nosuchtype\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noIface := filepath.Join(dir, "noiface.zap")
	if err := os.WriteFile(noIface, []byte("struct A\n    X u32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	S := callSchemaPath
	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		out    string
		errOut string
	}{
		{name: "unary", args: []string{"-schema", S, "-method", "hello", "-d", `{"Name":"ZAP","N":21}`, addr},
			out: `{"Message":"hello, ZAP","N":42,"Data":"beef"}` + "\n"},
		{name: "default request {}, flags after the address", args: []string{addr, "-schema", S, "-method", "Demo.hello"},
			out: `{"Message":"hello, ","N":0,"Data":"beef"}` + "\n"},
		{name: "package-qualified", args: []string{"-schema", S, "-method", "demo.Demo.hello", "-d", `{"Name":"q"}`, addr},
			out: `{"Message":"hello, q","N":0,"Data":"beef"}` + "\n"},
		{name: "metadata", args: []string{"-schema", S, "-method", "hello", "-metadata", "tag=blue", "-metadata", "other=a=b", "-d", `{"Name":"m"}`, addr},
			out: `{"Message":"hello, m (tag blue)","N":0,"Data":"beef"}` + "\n"},
		{name: "-d @FILE", args: []string{"-schema", S, "-method", "hello", "-d", "@" + reqFile, addr},
			out: `{"Message":"hello, file","N":8,"Data":"beef"}` + "\n"},
		{name: "-d @-", stdin: `{"Name":"stdin","N":1}`, args: []string{"-schema", S, "-method", "hello", "-d", "@-", addr},
			out: `{"Message":"hello, stdin","N":2,"Data":"beef"}` + "\n"},
		{name: "-v", args: []string{"-schema", S, "-method", "hello", "-v", addr},
			out:    `{"Message":"hello, ","N":0,"Data":"beef"}` + "\n",
			errOut: "zapcodec call: demo.Demo.hello at ordinal 1 of " + addr + "\nzapcodec call: response metadata served-by: demo\nzapcodec call: ended after "},
		{name: "-v, a stream's trailer", args: []string{"-schema", S, "-method", "count", "-d", `{"N":1}`, "-v", addr},
			out:    `{"Message":"","N":1,"Data":""}` + "\n",
			errOut: "zapcodec call: demo.Demo.count at ordinal 2 of " + addr + "\nzapcodec call: response metadata sent: 1\nzapcodec call: ended after "},
		{name: "-v, an error status", args: []string{"-schema", S, "-method", "fail", "-at", "0", "-v", addr},
			code: 1, errOut: "zapcodec call: ended after "},
		{name: "no request, no result", args: []string{"-schema", S, "-method", "Demo.ping", addr}},
		{name: "-at", args: []string{"-schema", S, "-method", "Admin.stop", "-at", "100", addr}},
		{name: "server stream", args: []string{"-schema", S, "-method", "count", "-d", `{"Name":"c","N":3}`, addr},
			out: `{"Message":"c","N":1,"Data":""}` + "\n" + `{"Message":"c","N":2,"Data":""}` + "\n" + `{"Message":"c","N":3,"Data":""}` + "\n"},
		{name: "empty server stream", args: []string{"-schema", S, "-method", "count", addr}},
		{name: "client stream from stdin", stdin: "{\"Name\":\"a\",\"N\":1}\r\n\n  \n{\"Name\":\"b\",\"N\":2}", args: []string{"-schema", S, "-method", "upload", addr},
			out: `{"Message":"a+b","N":3,"Data":""}` + "\n"},
		{name: "client stream, no line", args: []string{"-schema", S, "-method", "upload", addr},
			out: `{"Message":"","N":0,"Data":""}` + "\n"},
		{name: "client stream from -d @FILE", args: []string{"-schema", S, "-method", "upload", "-d", "@" + linesFile, addr},
			out: `{"Message":"p+q","N":3,"Data":""}` + "\n"},
		{name: "bidi stream from -d", args: []string{"-schema", S, "-method", "chat", "-d", "{\"Name\":\"x\"}\n{\"Name\":\"y\",\"N\":5}", addr},
			out: `{"Message":"echo x","N":0,"Data":""}` + "\n" + `{"Message":"echo y","N":5,"Data":""}` + "\n"},

		// The server answers an error status: exit 1, its code and message.
		{name: "error status", args: []string{"-schema", S, "-method", "fail", "-d", `{"Name":"eve"}`, addr},
			code: 1, errOut: "zapcodec call: status 403: no access for eve\n"},
		{name: "a message that would drive the terminal is quoted", args: []string{"-schema", S, "-method", "fail", "-d", `{"Name":"\u001b[2J"}`, addr},
			code: 1, errOut: `zapcodec call: status 403: "no access for \x1b[2J"` + "\n"},
		{name: "error end of a stream, after messages", args: []string{"-schema", S, "-method", "chat", "-d", "{\"Name\":\"x\"}\n{\"Name\":\"boom\",\"N\":7}\n{\"Name\":\"z\"}", addr},
			code: 1, out: `{"Message":"echo x","N":0,"Data":""}` + "\n", errOut: "zapcodec call: status 400: boom at 7\n"},
		{name: "no such method on the server", args: []string{"-schema", S, "-method", "Admin.stop", addr},
			code: 1, errOut: "status 404: no such method\nzapcodec call: the server has no handler at ordinal 2 (demo.Admin.stop): is it serving this schema, at this -at?"},

		// No answer, or one the schema cannot read: exit 3.
		{name: "server not there", args: []string{"-schema", S, "-method", "hello", deadAddr(t)},
			code: 3, errOut: "zapcodec call: cannot connect to 127.0.0.1:"},
		{name: "connection closed", args: []string{"-schema", S, "-method", "hello", hangUpAddr(t)},
			code: 3, errOut: "zapcodec call: rpc: connection closed"},
		{name: "answer not by the schema", args: []string{"-schema", S, "-method", "garbage", addr},
			code: 3, errOut: "zapcodec call: the answer (3 bytes) is not a Reply: at byte 3: message header truncated"},
		{name: "timeout", args: []string{"-schema", S, "-method", "hang", "-timeout", "2s", addr},
			code: 3, errOut: "zapcodec call: no answer within -timeout 2s\n"},

		// Bad usage: exit 2, nothing sent.
		{name: "no -schema, no reflection", args: []string{"-method", "hello", addr}, code: 2, errOut: "zapcodec call: the server at " + addr + " does not serve reflection (rpc.WithReflection); pass -schema FILE\n"},
		{name: "-list, no -schema, no reflection", args: []string{"-list", addr}, code: 2, errOut: "zapcodec call: the server at " + addr + " does not serve reflection (rpc.WithReflection); pass -schema FILE\n"},
		{name: "-list, no -schema, no address", args: []string{"-list"}, code: 2, errOut: "zapcodec call: -list needs -schema FILE, or a server address to ask (a server made with rpc.WithReflection)\n"},
		{name: "-at without -schema", args: []string{"-at", "100", "-method", "ping", addr}, code: 2, errOut: "zapcodec call: -at is for -schema: without it, the server says where each service is mounted\n"},
		{name: "no -method", args: []string{"-schema", S, addr}, code: 2, errOut: "-method is required (or -list to see the methods)"},
		{name: "no address", args: []string{"-schema", S, "-method", "hello"}, code: 2, errOut: "want one server address, got 0"},
		{name: "two addresses", args: []string{"-schema", S, "-method", "hello", addr, addr}, code: 2, errOut: "want one server address, got 2"},
		{name: "bad -network", args: []string{"-schema", S, "-method", "hello", "-network", "udp", addr}, code: 2, errOut: `-network "udp": want tcp or unix`},
		{name: "negative -timeout", args: []string{"-schema", S, "-method", "hello", "-timeout", "-1s", addr}, code: 2, errOut: "-timeout -1s: want a duration, 0 or more"},
		{name: "bad -metadata", args: []string{"-schema", S, "-method", "hello", "-metadata", "novalue", addr}, code: 2, errOut: `invalid value "novalue" for flag -metadata: "novalue": want key=value`},
		{name: "unknown flag", args: []string{"-schema", S, "-bogus", addr}, code: 2, errOut: "flag provided but not defined: -bogus"},
		{name: "-at too large", args: []string{"-schema", S, "-method", "hello", "-at", "4294967295", addr}, code: 2, errOut: "-at 4294967295: the method's ordinal 4294967296 is above the largest"},
		{name: "missing schema", args: []string{"-schema", filepath.Join(dir, "missing.zap"), "-method", "hello", addr}, code: 2, errOut: "zapcodec call: -schema: open "},
		{name: "bad schema", args: []string{"-schema", badSchema, "-method", "hello", addr}, code: 2, errOut: "bad.zap:2:7: "},
		{name: "schema without services", args: []string{"-schema", noIface, "-method", "hello", addr}, code: 2, errOut: "noiface.zap declares no interface"},
		{name: "close name", args: []string{"-schema", S, "-method", "helo", addr}, code: 2, errOut: `-method "helo": no such method in testdata/call/demo.zap; did you mean Demo.hello?`},
		{name: "close qualified name", args: []string{"-schema", S, "-method", "Demo.chta", addr}, code: 2, errOut: "did you mean Demo.chat?"},
		{name: "no close name", args: []string{"-schema", S, "-method", "frobnicate", addr}, code: 2, errOut: "no such method in testdata/call/demo.zap (it has Demo.hello, Demo.count, Demo.fail, Demo.ping, Demo.upload, Demo.chat, Demo.garbage, Demo.hang, Admin.ping, Admin.stop; zapcodec call -list shows them)"},
		{name: "ambiguous", args: []string{"-schema", S, "-method", "ping", addr}, code: 2, errOut: `-method "ping": more than one service has it (Demo.ping, Admin.ping): name the service`},
		{name: "-d to a method without request", args: []string{"-schema", S, "-method", "Demo.ping", "-d", "{}", addr}, code: 2, errOut: "-d: demo.Demo.ping takes no request"},
		{name: "invalid JSON", args: []string{"-schema", S, "-method", "hello", "-d", "{\"Name\": \"x\",\n \"N\": }", addr}, code: 2, errOut: "-d: invalid JSON at line 2, column 7: invalid character '}' looking for beginning of value"},
		{name: "invalid JSON, one line", args: []string{"-schema", S, "-method", "hello", "-d", `{"Name" "x"}`, addr}, code: 2, errOut: "-d: invalid JSON at column 9: invalid character '\"' after object key"},
		{name: "empty JSON", args: []string{"-schema", S, "-method", "hello", "-d", "@-", addr}, code: 2, errOut: "-d: invalid JSON at column 1: unexpected end of JSON input"},
		{name: "cluster target", args: []string{"-schema", S, "-method", "Demo.ping", "static:///" + addr}, code: 2, errOut: "zapcodec call: static:///" + addr + ": a cluster target (static://); this command dials one address, host:port (zapcodec load takes cluster targets)\n"},
		{name: "JSON not of the type", args: []string{"-schema", S, "-method", "hello", "-d", `{"Nme":"x"}`, addr}, code: 2, errOut: `zapcodec call: -d: unknown field "Nme" of Req (fields: Name, N)`},
		{name: "-d @missing", args: []string{"-schema", S, "-method", "hello", "-d", "@" + filepath.Join(dir, "none.json"), addr}, code: 2, errOut: "zapcodec call: -d: open "},
		{name: "bad line of a client stream", stdin: "{\"Name\":\"a\"}\n{\"Name\":1}\n", args: []string{"-schema", S, "-method", "upload", addr}, code: 2, errOut: "zapcodec call: -d: line 2: Name: want a string for text, got a number\n"},
		{name: "invalid line of a client stream", args: []string{"-schema", S, "-method", "upload", "-d", "{\"Name\":\"a\"}\n{\"Name\":", addr}, code: 2, errOut: "zapcodec call: -d: line 2: invalid JSON at column 8: unexpected end of JSON input\n"},
		{name: "client stream from @missing", args: []string{"-schema", S, "-method", "upload", "-d", "@" + filepath.Join(dir, "none.json"), addr}, code: 2, errOut: "zapcodec call: -d: open "},
		{name: "-list with an address", args: []string{"-schema", S, "-list", addr}, code: 2, errOut: "-list takes no address, -method or -d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := callRun(context.Background(), tc.stdin, tc.args...)
			if code != tc.code || out != tc.out || !strings.Contains(errOut, tc.errOut) || tc.errOut == "" && errOut != "" {
				t.Errorf("call %q: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.out, tc.errOut)
			}
		})
	}
}

// The golden outputs: a unary call and a server stream through the
// command's dispatcher, and -list.
func TestCallGolden(t *testing.T) {
	t.Parallel()
	addr := callServer(t, nil)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"testdata/call/hello.golden", []string{"call", "-schema", callSchemaPath, "-method", "Demo.hello", "-d", `{"Name": "ZAP", "N": 1}`, addr}},
		{"testdata/call/count.golden", []string{"call", "-schema", callSchemaPath, "-method", "Demo.count", "-d", `{"Name": "block", "N": 5}`, addr}},
		{"testdata/call/list.golden", []string{"call", "-schema", callSchemaPath, "-list"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("zapcodec %q: exit %d, stderr %q", tc.args, code, stderr.String())
		}
		golden(t, tc.golden, stdout.Bytes())
	}
}

// Ctrl-C during a call: the call ends at once, exit 3.
func TestCallInterrupted(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	addr := callServer(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	code, out, errOut := callRun(ctx, "", "-schema", callSchemaPath, "-method", "hang", "-timeout", "0", addr)
	if code != 3 || out != "" || !strings.Contains(errOut, "zapcodec call: interrupted: context canceled") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3, interrupted", code, out, errOut)
	}
}

// -d's input is bounded: a larger file or stdin is read no further than
// one byte past the bound and refused.
func TestCallReadDataBounded(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"Name":"0123456789"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"@" + big, "@-"} {
		r := &countReader{r: strings.NewReader(strings.Repeat("x", 1000))}
		_, err := callReadData(data, r, 16)
		if err == nil || !strings.Contains(err.Error(), "more than 16 bytes") {
			t.Errorf("-d %s: %v, want more than 16 bytes", data, err)
		}
		if data == "@-" && r.n > 17 {
			t.Errorf("-d @-: read %d bytes of stdin, want at most 17", r.n)
		}
	}
	if js, err := callReadData("@-", strings.NewReader("{}"), 2); err != nil || string(js) != "{}" {
		t.Errorf("-d @- at the bound: %q, %v", js, err)
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// The lines of a client stream are bounded each; \r\n ends a line as \n
// does, and the last line needs no end.
func TestCallReadLine(t *testing.T) {
	t.Parallel()
	br := bufio.NewReaderSize(strings.NewReader("ab\r\ncdefgh\n"+strings.Repeat("y", 40)+"\nlast"), 16)
	for _, want := range []string{"ab", "cdefgh"} {
		if line, err := callReadLine(br, 8); err != nil || string(line) != want {
			t.Fatalf("line %q, %v; want %q", line, err, want)
		}
	}
	if _, err := callReadLine(br, 8); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a line of 40 bytes with a bound of 8: %v, want errLineTooLong", err)
	}
	br = bufio.NewReaderSize(strings.NewReader("123456789"), 16)
	if _, err := callReadLine(br, 8); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a last line of 9 bytes, no end of line, with a bound of 8: %v, want errLineTooLong", err)
	}
	br = bufio.NewReaderSize(strings.NewReader("12345678\nlast"), 16)
	for _, want := range []struct {
		line string
		err  error
	}{{"12345678", nil}, {"last", io.EOF}} {
		if line, err := callReadLine(br, 8); err != want.err || string(line) != want.line {
			t.Fatalf("line %q, %v; want %q, %v", line, err, want.line, want.err)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"helo", "hello", 1}, {"chta", "chat", 2}, {"kitten", "sitting", 3}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// A stream still open when -timeout passes (stdin never ends) is ended
// there: exit 3.
func TestCallStreamTimeout(t *testing.T) {
	t.Parallel()
	addr := callServer(t, nil)
	pr, pw := io.Pipe()
	defer pw.Close()
	var o, e bytes.Buffer
	code := runCallIO(context.Background(), pr, []string{"-schema", callSchemaPath, "-method", "chat", "-timeout", "1s", addr}, &o, &e)
	if code != 3 || o.Len() != 0 || e.String() != "zapcodec call: the stream did not end within -timeout 1s\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3, the stream's timeout", code, o.String(), e.String())
	}
}

// -network unix: ADDR is a socket path.
func TestCallUnix(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "zc") // short: a socket path has a small bound
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	callServe(t, nil, l)
	code, out, errOut := callRun(context.Background(), "", "-schema", callSchemaPath, "-method", "hello", "-network", "unix", "-d", `{"Name":"unix"}`, path)
	if code != 0 || out != `{"Message":"hello, unix","N":0,"Data":"beef"}`+"\n" || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
