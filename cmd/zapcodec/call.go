package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

func init() {
	register(&command{
		name:    "call",
		summary: "make one call to a ZAP-RPC server, request and answer as JSON",
		usage: `  zapcodec call [-schema FILE.zap] -method M [-d JSON|@FILE|@-] [flags] [TLS flags] ADDR
  zapcodec call -schema FILE.zap -list
  zapcodec call -list [TLS flags] ADDR
    Encodes the request (-d, a JSON object: fields by name, bytes as hex
    strings; default {}) by the method's request struct, calls the method
    at ADDR and prints the answer as one line of JSON on stdout, decoded by
    the method's result struct (nothing for a method without one). A
    server stream prints each message as one line of JSON as it arrives;
    a client or bidirectional stream sends each line of -d (by default
    stdin) as one message, ends its side at the end of the input, and
    prints what the server sends. -list prints the schema's services and
    methods with their types and ordinals instead (no ADDR). Without
    -schema, the schemas and mount offsets come from the server at ADDR,
    which must serve reflection (rpc.WithReflection; generated services
    give theirs): -list ADDR lists its services, -method finds the
    method among them (exit 2 from a server without reflection: pass
    -schema). For a server's health, see zapcodec health.
    Exit status: 0 when the call succeeded; 1 when the server answered
    with an error status (its code and message go to stderr); 2 on bad
    usage (flags, schema, method, request JSON); 3 when no answer came
    (the server could not be reached, the connection was lost, -timeout
    passed, Ctrl-C) or the answer does not decode by the schema (or the
    server reflects a schema that cannot be used). (The
    deadline travels with the call: a server that gives up at it first
    answers 504, exit 1.)
  -schema FILE.zap    the schema (at most 16 MiB); without it, the
                      server's (reflection), which -schema overrides
  -method M           "Service.method", or "method" when one service has
                      it; either may be qualified by the schema's package
                      ("greet.Greeter.hello")
  -d DATA             the request as JSON; @FILE reads it from FILE, @-
                      from stdin (at most 64 MiB); for a client stream,
                      one JSON object a line (a line of at most 64 MiB)
  -metadata k=v       request metadata, repeatable (rpc.WithMetadata)
  -timeout D          bound on the dial and the call, the whole stream for
                      a streaming method (default 5s for a unary call, no
                      bound for a stream; 0: no bound but 10s for the
                      dial); without -schema, the dial and the
                      reflection call take it (default 5s, 10s for 0)
                      before a stream too
  -at N               the service's mount offset on the server (rpc.At):
                      the call goes to ordinal N plus the method's
                      (default 0; with -schema only: a server's
                      reflection gives each service's own)
  -network NET        tcp or unix (default tcp; with unix, ADDR is a
                      socket path)
  -list               list the services and methods of -schema, or
                      those the server at ADDR reflects
  -v                  also print on stderr the wire ordinal called, the
                      response metadata (a stream's trailer) and how long
                      the call took
` + tlsUsage,
		run: runCall,
	})
}

// The exit statuses of zapcodec call.
const (
	callExitStatus = 1 // the server answered with an error status
	callExitUsage  = 2 // bad flags, schema, method or request
	callExitFailed = 3 // no answer, or one the schema cannot read
)

// callDialTimeout bounds the dial of a call given no -timeout (a stream,
// or -timeout 0).
const callDialTimeout = 10 * time.Second

// metadataFlag collects repeated -metadata k=v flags as the key, value
// pairs rpc.WithMetadata takes.
type metadataFlag []string

func (m *metadataFlag) String() string {
	if m == nil {
		return ""
	}
	var parts []string
	for i := 0; i+1 < len(*m); i += 2 {
		parts = append(parts, (*m)[i]+"="+(*m)[i+1])
	}
	return strings.Join(parts, ",")
}

func (m *metadataFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	*m = append(*m, k, v)
	return nil
}

func runCall(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCallIO(ctx, os.Stdin, args, stdout, stderr)
}

// callFlags is the parsed command line of a call.
type callFlags struct {
	schemaPath, method, data, network string
	md                                metadataFlag
	timeout                           time.Duration
	at                                uint64
	list, verbose                     bool
	addrs                             []string
	timeoutSet, atSet                 bool
	tls                               tlsFlags
}

// parseCallFlags parses args, the flags before or after the address.
func parseCallFlags(args []string, stderr io.Writer) (*callFlags, int, bool) {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &callFlags{}
	fs.StringVar(&cf.schemaPath, "schema", "", "schema file")
	fs.StringVar(&cf.method, "method", "", "Service.method")
	fs.StringVar(&cf.data, "d", "", "request JSON, @FILE or @-")
	fs.StringVar(&cf.network, "network", "tcp", "tcp or unix")
	fs.Var(&cf.md, "metadata", "request metadata k=v (repeatable)")
	fs.DurationVar(&cf.timeout, "timeout", 5*time.Second, "bound on the dial and the call")
	fs.Uint64Var(&cf.at, "at", 0, "the service's mount offset")
	fs.BoolVar(&cf.list, "list", false, "list services and methods")
	fs.BoolVar(&cf.verbose, "v", false, "print the ordinal, response metadata and time on stderr")
	cf.tls.register(fs)
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["call"].usage) }
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, callExitUsage, false
		}
		if fs.NArg() == 0 {
			break
		}
		// The address may come before flags: take it and parse on.
		cf.addrs = append(cf.addrs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	cf.timeoutSet = flagSet(fs, "timeout")
	cf.atSet = flagSet(fs, "at")
	return cf, 0, true
}

// runCallIO is runCall reading -d @- and client streams from stdin; ctx
// ending (Ctrl-C) ends the call.
func runCallIO(ctx context.Context, stdin io.Reader, args []string, stdout, stderr io.Writer) int {
	cf, code, ok := parseCallFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "zapcodec call: "+format+"\n", a...)
		return code
	}
	if cf.at > math.MaxUint32 {
		return fail(callExitUsage, "-at %d: above the largest ordinal (%d)", cf.at, uint32(math.MaxUint32))
	}
	// With -schema, the schema file; without, the server's (reflection),
	// asked once connected.
	var f *schema.File
	if cf.schemaPath != "" {
		src, err := readSchemaFile(cf.schemaPath)
		if err != nil {
			return fail(callExitUsage, "-schema: %v", err)
		}
		if f, err = schema.Parse(cf.schemaPath, src); err != nil {
			return fail(callExitUsage, "%v", err)
		}
		if cf.list {
			if len(cf.addrs) > 0 || cf.method != "" || cf.data != "" {
				return fail(callExitUsage, "-list takes no address, -method or -d with -schema (without -schema, it asks the server at ADDR)")
			}
			if err := callList(stdout, f, uint32(cf.at)); err != nil {
				return fail(callExitUsage, "%v", err)
			}
			return 0
		}
	} else {
		switch {
		case cf.list && (cf.method != "" || cf.data != ""):
			return fail(callExitUsage, "-list takes no -method or -d")
		case cf.list && len(cf.addrs) == 0:
			return fail(callExitUsage, "-list needs -schema FILE, or a server address to ask (a server made with rpc.WithReflection)")
		case cf.atSet:
			return fail(callExitUsage, "-at is for -schema: without it, the server says where each service is mounted")
		}
	}
	if cf.method == "" && !cf.list {
		return fail(callExitUsage, "-method is required (or -list to see the methods)")
	}
	if len(cf.addrs) != 1 {
		return fail(callExitUsage, "want one server address, got %d (%s)", len(cf.addrs), strings.Join(cf.addrs, " "))
	}
	addr := cf.addrs[0]
	if err := oneAddress(addr); err != nil && cf.network != "unix" {
		return fail(callExitUsage, "%v", err)
	}
	if cf.network != "tcp" && cf.network != "unix" {
		return fail(callExitUsage, "-network %q: want tcp or unix", cf.network)
	}
	if cf.timeout < 0 {
		return fail(callExitUsage, "-timeout %v: want a duration, 0 or more (0: no bound)", cf.timeout)
	}
	tlsCfg, err := cf.tls.config(addr)
	if err != nil {
		return fail(callExitUsage, "%v", err)
	}

	// Without -schema: connect, bounded by -timeout (or the dial's own
	// bound), and ask the server for its services.
	var c *rpc.Client
	var sniff *tlsSniffer
	var m *schema.Method
	var ord uint64
	if f == nil {
		bound := cf.timeout
		if bound == 0 {
			bound = callDialTimeout
		}
		rctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		if c, sniff, code = callDial(ctx, rctx, cf, addr, tlsCfg, stderr); c == nil {
			return code
		}
		defer c.Close()
		svcs, err := rpc.Reflect(rctx, c)
		if err != nil {
			return reflectFailed(ctx, stderr, cf, addr, sniff, err)
		}
		rs := parseReflected(svcs)
		if cf.list {
			if !reflectList(stdout, stderr, rs) {
				return callExitFailed
			}
			return 0
		}
		r, rm, bad, err := reflectFindMethod(rs, cf.method)
		if bad {
			return fail(callExitFailed, "-method %q: %v", cf.method, err)
		}
		if err != nil {
			return fail(callExitUsage, "-method %q: %v", cf.method, err)
		}
		f, m, ord = r.f, rm, uint64(r.base)+uint64(rm.Ordinal)
	} else {
		if m, err = callFindMethod(f, cf.method); err != nil {
			return fail(callExitUsage, "-method %q: %v", cf.method, err)
		}
		if ord = uint64(cf.at) + uint64(m.Ordinal); ord > math.MaxUint32 {
			return fail(callExitUsage, "-at %d: the method's ordinal %d is above the largest (%d)", cf.at, ord, uint32(math.MaxUint32))
		}
	}
	stream := m.ReqStream || m.RespStream
	if !cf.timeoutSet && stream {
		cf.timeout = 0 // a stream runs until it ends
	}

	// The request: one message, or (a client stream) a source of lines.
	var payload []byte
	var lines io.Reader
	switch {
	case m.ReqStream && m.Req == nil:
		return fail(callExitUsage, "%s: a stream of no message type", callMethodName(f, m))
	case m.ReqStream:
		switch name, isFile := strings.CutPrefix(cf.data, "@"); {
		case cf.data == "" || cf.data == "@-":
			lines = stdin
		case isFile:
			fl, err := os.Open(name)
			if err != nil {
				return fail(callExitUsage, "-d: %v", err)
			}
			defer fl.Close()
			lines = fl
		default:
			lines = strings.NewReader(cf.data)
		}
	case m.Req == nil:
		if cf.data != "" {
			return fail(callExitUsage, "-d: %s takes no request", callMethodName(f, m))
		}
	default:
		js := []byte("{}")
		if cf.data != "" {
			if js, err = callReadData(cf.data, stdin, loadMaxJSON); err != nil {
				return fail(callExitUsage, "%v", err)
			}
		}
		if payload, err = callEncode(m.Req, js); err != nil {
			return fail(callExitUsage, "-d: %v", err)
		}
		if n := 1 + wire.RequestLen(&wire.Request{Method: uint32(ord), PromiseID: 1, Payload: payload}); n > frame.DefaultMaxFrameSize {
			return fail(callExitUsage, "-d: a request of %d bytes makes a frame of %d bytes, above the largest a client sends (%d)", len(payload), n, frame.DefaultMaxFrameSize)
		}
	}

	callCtx := ctx
	if cf.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, cf.timeout)
		defer cancel()
	}
	if len(cf.md) > 0 {
		callCtx = rpc.WithMetadata(callCtx, cf.md...)
	}
	cl := &caller{f: f, m: m, ord: uint32(ord), timeout: cf.timeout, stdout: stdout, stderr: stderr, reflected: cf.schemaPath == ""}
	if cf.verbose {
		cl.rmd = new(rpc.Metadata)
		callCtx = rpc.WithResponseMetadata(callCtx, cl.rmd)
	}
	if c == nil {
		dialCtx := callCtx
		if cf.timeout == 0 {
			var cancel context.CancelFunc
			dialCtx, cancel = context.WithTimeout(callCtx, callDialTimeout)
			defer cancel()
		}
		if c, sniff, code = callDial(ctx, dialCtx, cf, addr, tlsCfg, stderr); c == nil {
			return code
		}
		defer c.Close()
	}
	cl.tls, cl.sniff = &cf.tls, sniff
	cl.start = time.Now()
	if cf.verbose {
		fmt.Fprintf(stderr, "zapcodec call: %s at ordinal %d of %s\n", callMethodName(f, m), ord, addr)
	}
	if stream {
		return cl.stream(ctx, callCtx, c, payload, lines)
	}
	body, err := c.Call(callCtx, uint32(ord), payload, nil)
	cl.verbose()
	if err != nil {
		return cl.failed(ctx, err)
	}
	return cl.print(body)
}

// callDial connects to addr within dialCtx; on failure it reports why
// (ctx is the command's: Ctrl-C) and returns a nil client and the exit
// status.
func callDial(ctx, dialCtx context.Context, cf *callFlags, addr string, tlsCfg *tls.Config, stderr io.Writer) (*rpc.Client, *tlsSniffer, int) {
	opts, sniff := cf.tls.clientOptions(tlsCfg)
	c, err := rpc.Dial(dialCtx, cf.network, addr, opts...)
	if err == nil {
		return c, sniff, 0
	}
	if errors.Is(err, context.DeadlineExceeded) && dialCtx.Err() != nil && ctx.Err() == nil {
		// The bound that passed, by name: -timeout, or the dial's own.
		bound := fmt.Sprintf("-timeout %v", cf.timeout)
		if cf.timeout == 0 {
			bound = fmt.Sprintf("%v, the bound of a dial given no -timeout", callDialTimeout)
		}
		fmt.Fprintf(stderr, "zapcodec call: cannot connect to %s: not connected within %s (%v)\n", addr, bound, err)
		return nil, nil, callExitFailed
	}
	fmt.Fprintf(stderr, "zapcodec call: cannot connect to %s: %v\n", addr, cf.tls.explainDial(err))
	return nil, nil, callExitFailed
}

// caller makes one call of m and reports its outcome.
type caller struct {
	f       *schema.File
	m       *schema.Method
	ord     uint32
	timeout time.Duration
	stdout  io.Writer
	stderr  io.Writer
	out     []byte
	// rmd receives the response metadata (-v), nil without -v; start is
	// when the call began.
	rmd   *rpc.Metadata
	start time.Time
	// tls and sniff explain a failure by the TLS flags (tlsFlags.explain).
	tls   *tlsFlags
	sniff *tlsSniffer
	// reflected: the schema is the server's (reflection), not -schema's.
	reflected bool
}

// verbose prints, with -v, the response metadata of the call (a stream's
// trailer) and how long it took, on stderr.
func (cl *caller) verbose() {
	if cl.rmd == nil {
		return
	}
	cl.rmd.Range(func(k, v []byte) bool {
		fmt.Fprintf(cl.stderr, "zapcodec call: response metadata %s: %s\n", printable(string(k)), printable(string(v)))
		return true
	})
	fmt.Fprintf(cl.stderr, "zapcodec call: ended after %v\n", time.Since(cl.start).Round(time.Microsecond))
}

// print writes the answer msg as one line of JSON (nothing for a method
// without a result).
func (cl *caller) print(msg []byte) int {
	if cl.m.Resp == nil {
		return 0
	}
	out, err := dynamic.AppendJSON(cl.out[:0], cl.m.Resp, msg)
	if err != nil {
		fmt.Fprintf(cl.stderr, "zapcodec call: the answer (%d bytes) is not a %s: %v\n", len(msg), cl.m.Resp.Name, dynamicErr(err))
		return callExitFailed
	}
	cl.out = append(out, '\n')
	cl.stdout.Write(cl.out)
	return 0
}

// failed reports the error of a call or stream: a status the server
// answered, or why no answer came. ctx is the command's (Ctrl-C).
func (cl *caller) failed(ctx context.Context, err error) int {
	var se *rpc.StatusError
	switch {
	case errors.As(err, &se):
		msg := se.Message
		if se.BodyLen > len(msg) {
			msg += fmt.Sprintf(" [cut from %d bytes]", se.BodyLen)
		}
		fmt.Fprintf(cl.stderr, "zapcodec call: status %d: %s\n", se.Code, printable(msg))
		switch {
		case rpc.IsNoSuchMethod(err) && cl.reflected:
			fmt.Fprintf(cl.stderr, "zapcodec call: the server reflects %s at ordinal %d, but answers it 404: no handler there, or one that is unimplemented\n", callMethodName(cl.f, cl.m), cl.ord)
		case rpc.IsNoSuchMethod(err):
			fmt.Fprintf(cl.stderr, "zapcodec call: the server has no handler at ordinal %d (%s): is it serving this schema, at this -at?\n", cl.ord, callMethodName(cl.f, cl.m))
		}
		return callExitStatus
	case ctx.Err() != nil:
		fmt.Fprintf(cl.stderr, "zapcodec call: interrupted: %v\n", err)
	case errors.Is(err, context.DeadlineExceeded) && (cl.m.ReqStream || cl.m.RespStream):
		fmt.Fprintf(cl.stderr, "zapcodec call: the stream did not end within -timeout %v\n", cl.timeout)
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(cl.stderr, "zapcodec call: no answer within -timeout %v\n", cl.timeout)
	default:
		fmt.Fprintf(cl.stderr, "zapcodec call: %v\n", cl.tls.explain(err, cl.sniff))
	}
	return callExitFailed
}

// stream opens a stream of cl.m, sends init (a server stream's request)
// or the lines of lines (a client stream's messages, from a goroutine),
// and prints every message the server sends until its end.
func (cl *caller) stream(ctx, callCtx context.Context, c *rpc.Client, init []byte, lines io.Reader) int {
	sctx, cancel := context.WithCancel(callCtx)
	defer cancel()
	s, err := c.OpenStream(sctx, cl.ord, init)
	if err != nil {
		return cl.failed(ctx, err)
	}
	// inputErr receives the error of a line that cannot be sent (bad
	// JSON, too large) before the stream is canceled for it.
	inputErr := make(chan error, 1)
	if lines != nil {
		go func() {
			if err := cl.sendLines(s, lines); err != nil {
				inputErr <- err
				cancel()
			}
		}()
	}
	var buf []byte
	for {
		msg, err := s.Recv(buf[:0])
		if err != nil {
			cl.verbose()
		}
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			if sctx.Err() != nil && callCtx.Err() == nil {
				// Canceled here: the sender's input failed.
				fmt.Fprintf(cl.stderr, "zapcodec call: -d: %v\n", <-inputErr)
				return callExitUsage
			}
			return cl.failed(ctx, err)
		}
		buf = msg
		if code := cl.print(msg); code != 0 {
			return code
		}
	}
}

// sendLines sends each non-blank line of r, a JSON object, as one message
// of the stream, then ends the client's side. It returns the error of a
// line that cannot be encoded or read; a failed Send (the stream ended)
// ends it without error, the stream's end being for Recv to report.
func (cl *caller) sendLines(s *rpc.Stream, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var msg []byte
	for n := 1; ; n++ {
		line, err := callReadLine(br, loadMaxJSON)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("line %d: %v", n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			msg, err = callEncodeTo(msg[:0], cl.m.Req, line)
			if err != nil {
				return fmt.Errorf("line %d: %v", n, err)
			}
			if err := s.Send(msg); err != nil {
				if errors.Is(err, frame.ErrFrameTooLarge) {
					return fmt.Errorf("line %d: %v", n, err)
				}
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			s.CloseSend()
			return nil
		}
	}
}

// errLineTooLong is callReadLine's error for a line above its bound.
var errLineTooLong = errors.New("line too long")

// callReadLine returns the next line of br without its end of line, at
// most limit bytes of it, reading no further than one byte past the
// bound; io.EOF with the last line when the input ends.
func callReadLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 { // +1: the '\n'
			return nil, fmt.Errorf("%w: more than %d bytes", errLineTooLong, limit)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			line = line[:len(line)-1] // the '\n'
		}
		if len(line) > limit { // the last line, with no end
			return nil, fmt.Errorf("%w: more than %d bytes", errLineTooLong, limit)
		}
		return bytes.TrimSuffix(line, []byte{'\r'}), err
	}
}

// callReadData returns the JSON of -d: the flag's text, or @FILE's
// contents, or (@-) stdin's, at most limit bytes (reading no further than
// one byte past it).
func callReadData(data string, stdin io.Reader, limit int) ([]byte, error) {
	name, ok := strings.CutPrefix(data, "@")
	if !ok {
		return []byte(data), nil
	}
	var js []byte
	var err error
	if name == "-" {
		js, err = readAtMost(stdin, limit)
	} else {
		js, err = readFileAtMost(name, limit)
	}
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("-d @%s: more than %d bytes, more than the JSON of any request a frame holds needs", name, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("-d: %v", err)
	}
	return js, nil
}

// callEncode encodes the JSON object js as a message of st.
func callEncode(st *schema.Struct, js []byte) ([]byte, error) {
	return callEncodeTo(nil, st, js)
}

// callEncodeTo appends the message of st that the JSON object js gives to
// dst. Invalid JSON is reported by its line and column.
func callEncodeTo(dst []byte, st *schema.Struct, js []byte) ([]byte, error) {
	if !json.Valid(js) {
		var raw json.RawMessage
		err := json.Unmarshal(js, &raw)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := textPos(js, int(se.Offset))
			if bytes.IndexByte(js, '\n') < 0 {
				return dst, fmt.Errorf("invalid JSON at column %d: %v", col, se)
			}
			return dst, fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
		}
		return dst, fmt.Errorf("invalid JSON: %v", err)
	}
	dst, err := dynamic.AppendMessage(dst, st, js)
	return dst, dynamicErr(err)
}

// dynamicErr returns err, an error of codec/dynamic, without the
// "dynamic: " its Error begins with, which means nothing on the command
// line, where the flag or the answer it was about is named instead: an
// EncodeError reads "Path: Reason", a DecodeError "at byte N (Path):
// Reason". The result unwraps to err.
func dynamicErr(err error) error {
	var ee *dynamic.EncodeError
	var de *dynamic.DecodeError
	switch {
	case errors.As(err, &ee) && ee.Path == "":
		return &cliError{ee.Reason, err}
	case errors.As(err, &ee):
		return &cliError{ee.Path + ": " + ee.Reason, err}
	case errors.As(err, &de) && de.Path == "":
		return &cliError{fmt.Sprintf("at byte %d: %s", de.Offset, de.Reason), err}
	case errors.As(err, &de):
		return &cliError{fmt.Sprintf("at byte %d (%s): %s", de.Offset, de.Path, de.Reason), err}
	}
	return err
}

// cliError is an error worded for the command line.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// textPos returns the line and column (from 1, in bytes) of the byte that
// ends the first off bytes of b, the one json.SyntaxError's Offset names.
func textPos(b []byte, off int) (line, col int) {
	off = min(max(off-1, 0), len(b))
	line = 1 + bytes.Count(b[:off], []byte{'\n'})
	col = off - (bytes.LastIndexByte(b[:off], '\n') + 1) + 1
	return line, col
}

// printable returns s as is when it holds printable text only, else
// quoted (a server's message must not drive the terminal).
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

// callServiceName is the name of interface in as a service: qualified by
// the schema's package, as the health service and gRPC name it.
func callServiceName(f *schema.File, in *schema.Interface) string {
	if f.Package != "" {
		return f.Package + "." + in.Name
	}
	return in.Name
}

// callMethodName is "Service.method" for m.
func callMethodName(f *schema.File, m *schema.Method) string {
	for _, in := range f.Interfaces {
		if slices.Contains(in.Methods, m) {
			return callServiceName(f, in) + "." + m.Name
		}
	}
	return m.Name
}

// callSignature is m as -list shows it: "hello(HelloRequest) returns
// (HelloReply)", "subscribe(Filter) returns (stream Log)".
func callSignature(m *schema.Method) string {
	var b strings.Builder
	b.WriteString(m.Name + "(")
	if m.ReqStream {
		b.WriteString("stream ")
	}
	if m.Req != nil {
		b.WriteString(m.Req.Name)
	}
	b.WriteString(")")
	if m.Resp != nil {
		b.WriteString(" returns (")
		if m.RespStream {
			b.WriteString("stream ")
		}
		b.WriteString(m.Resp.Name + ")")
	}
	return b.String()
}

// callList prints every service of f and its methods, with the wire
// ordinal each is called at (at plus the method's).
func callList(w io.Writer, f *schema.File, at uint32) error {
	if len(f.Interfaces) == 0 {
		return fmt.Errorf("%s declares no interface (no service to call)", strings.Join(f.Files, ", "))
	}
	var b bytes.Buffer
	for _, in := range f.Interfaces {
		fmt.Fprintf(&b, "%s\n", callServiceName(f, in))
		listMethods(&b, in, at)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// listMethods writes the methods of in, one a line, with the wire ordinal
// each is called at (at plus the method's).
func listMethods(b *bytes.Buffer, in *schema.Interface, at uint32) {
	width := 0
	for _, m := range in.Methods {
		width = max(width, len(callSignature(m)))
	}
	for _, m := range in.Methods {
		fmt.Fprintf(b, "  %-*s  # ordinal %d\n", width, callSignature(m), uint64(at)+uint64(m.Ordinal))
	}
}

// callFindMethod finds the method name names in f, as load's -method
// does; when there is none, its error says why and suggests close names.
func callFindMethod(f *schema.File, name string) (*schema.Method, error) {
	if m := loadFindMethod(f, name); m != nil {
		return m, nil
	}
	bare := name
	if f.Package != "" {
		bare = strings.TrimPrefix(name, f.Package+".")
	}
	var all, same []string
	for _, in := range f.Interfaces {
		for _, m := range in.Methods {
			full := in.Name + "." + m.Name
			all = append(all, full)
			if m.Name == bare {
				same = append(same, full)
			}
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s declares no interface", strings.Join(f.Files, ", "))
	}
	if len(same) > 1 && !strings.Contains(bare, ".") {
		return nil, fmt.Errorf("more than one service has it (%s): name the service", strings.Join(same, ", "))
	}
	// Close names: a small edit distance from the full name, or from the
	// method's name alone when the service was not given.
	want := strings.ToLower(bare)
	var near []string
	for _, full := range all {
		if len(want) > 256 {
			break // no name is that long: spare the distances
		}
		cand := strings.ToLower(full)
		if !strings.Contains(want, ".") {
			_, cand, _ = strings.Cut(cand, ".")
		}
		if d := editDistance(want, cand); d <= max(2, len(want)/3) {
			near = append(near, full)
		}
	}
	if len(near) > 0 {
		return nil, fmt.Errorf("no such method in %s; did you mean %s?", strings.Join(f.Files, ", "), strings.Join(near, " or "))
	}
	if len(all) > 12 {
		all = append(all[:12], "...")
	}
	return nil, fmt.Errorf("no such method in %s (it has %s; zapcodec call -list shows them)", strings.Join(f.Files, ", "), strings.Join(all, ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
