package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

func init() {
	register(&command{
		name:    "dump",
		summary: "show ZAP messages or transport frames, raw or through a schema",
		usage: `  zapcodec dump [flags] [FILE]
    Reads FILE (or stdin when FILE is absent or "-"), raw bytes or hex text,
    holding one ZAP message (it starts with "ZAP\x00") or a stream of
    transport frames. Without a schema it shows the header and the root
    object's fixed section as raw words, with the slots that resolve; with
    -schema and -type it shows the record as JSON with field names.
  -hex, -raw          force hex text or raw bytes (default: hex when the
                      input is only hex digits and white space)
  -message, -frames   force one message or a frame stream (default: a
                      message when the input starts with "ZAP\x00")
  -http               frames are ZAP-over-HTTP: big-endian u32 length, no kind
  -schema FILE.zap    schema to decode with
  -type NAME          a struct; or a method ("Eth.getBalance", "getBalance")
                      or interface ("Eth") for RPC envelopes and payloads:
                      requests decode as the method's request struct,
                      answers as its response struct
  -response           a bare payload given with a method -type is the
                      method's response (default: its request)
`,
		run: func(args []string, stdout, stderr io.Writer) int {
			return runDump(args, os.Stdin, stdout, stderr)
		},
	})
}

// dumpMaxFrame is the largest frame dump accepts: the canonical runtime
// refuses frames over 64 MiB (WIRE.md §6).
const dumpMaxFrame = 64 << 20

// dumpMaxFixed bounds how much of a root object's fixed section dump shows
// without a schema, when no slot says where the fixed section ends.
const dumpMaxFixed = 256

// dumpConfig is the parsed command line of one dump run.
type dumpConfig struct {
	forceHex, forceRaw   bool
	forceMsg, forceFrame bool
	http                 bool
	response             bool
	target               dumpTarget
}

// dumpTarget is what -type named: one struct, or a method, or an
// interface whose methods are picked by the envelope's ordinal. The zero
// value means no schema.
type dumpTarget struct {
	st     *schema.Struct
	method *schema.Method
	iface  *schema.Interface
}

func (t dumpTarget) none() bool { return t.st == nil && t.method == nil && t.iface == nil }

// runDump is the dump subcommand: it returns 0 when all the input was
// shown, 1 when the input (or a part of it) is malformed, 2 on bad usage.
func runDump(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg dumpConfig
	fs.BoolVar(&cfg.forceHex, "hex", false, "input is hex text")
	fs.BoolVar(&cfg.forceRaw, "raw", false, "input is raw bytes")
	fs.BoolVar(&cfg.forceMsg, "message", false, "input is one message")
	fs.BoolVar(&cfg.forceFrame, "frames", false, "input is a stream of transport frames")
	fs.BoolVar(&cfg.http, "http", false, "frames are ZAP-over-HTTP (big-endian length, no kind)")
	fs.BoolVar(&cfg.response, "response", false, "a bare payload is the method's response")
	schemaPath := fs.String("schema", "", "schema file")
	typeName := fs.String("type", "", "struct, method or interface to decode as")
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["dump"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "zapcodec dump: "+format+"\n", a...)
		return 2
	}
	switch {
	case cfg.forceHex && cfg.forceRaw:
		return usageErr("-hex and -raw exclude each other")
	case cfg.forceMsg && (cfg.forceFrame || cfg.http):
		return usageErr("-message excludes -frames and -http")
	case fs.NArg() > 1:
		return usageErr("at most one input file, got %d", fs.NArg())
	case (*schemaPath == "") != (*typeName == ""):
		return usageErr("-schema and -type go together")
	}
	if *schemaPath != "" {
		src, err := os.ReadFile(*schemaPath)
		if err != nil {
			return usageErr("%v", err)
		}
		f, err := schema.Parse(*schemaPath, src)
		if err != nil {
			return usageErr("%v", err)
		}
		if cfg.target, err = dumpResolveType(f, *typeName); err != nil {
			return usageErr("%v", err)
		}
	}
	var in []byte
	var err error
	if name := fs.Arg(0); name != "" && name != "-" {
		in, err = os.ReadFile(name)
	} else {
		in, err = io.ReadAll(stdin)
	}
	if err != nil {
		return usageErr("%v", err)
	}

	w := bufio.NewWriter(stdout)
	d := dumper{cfg: cfg, w: w}
	d.run(in)
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "zapcodec dump: %v\n", err)
		return 1
	}
	if d.nerr > 0 {
		if d.nerr == 1 {
			fmt.Fprintf(stderr, "zapcodec dump: %s\n", d.first)
		} else {
			fmt.Fprintf(stderr, "zapcodec dump: %d errors, the first: %s\n", d.nerr, d.first)
		}
		return 1
	}
	return 0
}

// dumpResolveType finds what -type names: a struct first, then
// "Iface.method", an interface, and last a method name that must be unique
// across the interfaces.
func dumpResolveType(f *schema.File, name string) (dumpTarget, error) {
	if s := f.Struct(name); s != nil {
		return dumpTarget{st: s}, nil
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		it := f.Interface(name[:i])
		if it == nil {
			return dumpTarget{}, fmt.Errorf("-type %s: no interface %s in the schema", name, name[:i])
		}
		for _, m := range it.Methods {
			if m.Name == name[i+1:] {
				return dumpTarget{method: m, iface: it}, nil
			}
		}
		return dumpTarget{}, fmt.Errorf("-type %s: interface %s has no method %s", name, it.Name, name[i+1:])
	}
	if it := f.Interface(name); it != nil {
		return dumpTarget{iface: it}, nil
	}
	var found dumpTarget
	var where []string
	for _, it := range f.Interfaces {
		for _, m := range it.Methods {
			if m.Name == name {
				found = dumpTarget{method: m, iface: it}
				where = append(where, it.Name+"."+m.Name)
			}
		}
	}
	switch len(where) {
	case 0:
		return dumpTarget{}, fmt.Errorf("-type %s: no struct, interface or method of that name in the schema", name)
	case 1:
		return found, nil
	}
	return dumpTarget{}, fmt.Errorf("-type %s is ambiguous: %s", name, strings.Join(where, ", "))
}

// dumper writes the listing of one input. Errors in the input are written
// in place ("error: at byte N: ...") and counted; the first is kept for
// the summary on stderr.
type dumper struct {
	cfg   dumpConfig
	w     *bufio.Writer
	nerr  int
	first string
	// promises maps the promise_id of each request seen to its method, so
	// that an answer later in the stream decodes as that method's result.
	promises map[uint32]*schema.Method
	scratch  []byte
}

func (d *dumper) printf(format string, a ...any) { fmt.Fprintf(d.w, format, a...) }

// fail records an input error at byte offset off of the (decoded) input.
func (d *dumper) fail(indent string, off int, format string, a ...any) {
	d.failAt(indent, fmt.Sprintf("at byte %d", off), format, a...)
}

// failAt records an input error at the location loc ("at byte 3").
func (d *dumper) failAt(indent, loc string, format string, a ...any) {
	msg := loc + ": " + fmt.Sprintf(format, a...)
	d.printf("%serror: %s\n", indent, msg)
	if d.nerr == 0 {
		d.first = msg
	}
	d.nerr++
}

// failDecode records a schema decoding error of the message at base.
func (d *dumper) failDecode(indent string, base int, err error) {
	var de *dynamic.DecodeError
	if errors.As(err, &de) {
		if de.Path != "" {
			d.fail(indent, base+de.Offset, "%s: %s", de.Path, de.Reason)
		} else {
			d.fail(indent, base+de.Offset, "%s", de.Reason)
		}
		return
	}
	d.fail(indent, base, "%v", err)
}

func (d *dumper) run(in []byte) {
	data := in
	if d.cfg.forceHex || (!d.cfg.forceRaw && dumpLooksHex(in)) {
		var err error
		if data, err = dumpDecodeHex(in); err != nil {
			he := err.(*dumpHexError)
			d.failAt("", fmt.Sprintf("at byte %d of the hex text", he.off), "%s", he.reason)
			return
		}
	}
	if len(data) == 0 {
		d.fail("", 0, "empty input: expected a message or frames")
		return
	}
	asMessage := d.cfg.forceMsg || (!d.cfg.forceFrame && !d.cfg.http && bytes.HasPrefix(data, []byte(codec.Magic)))
	if asMessage {
		d.messages(data)
		return
	}
	d.frames(data, !d.cfg.forceFrame && !d.cfg.http)
}

// messages dumps data as one message, and then any further messages that
// follow it back to back.
func (d *dumper) messages(data []byte) {
	off := 0
	for n := 0; off < len(data); n++ {
		if n > 0 {
			if !bytes.HasPrefix(data[off:], []byte(codec.Magic)) {
				d.printf("%d bytes after the message at @%d are not a message: not shown\n", len(data)-off, off)
				return
			}
			d.printf("\n")
		}
		size, ok := d.one("", data[off:], off)
		if !ok {
			return
		}
		off += size
	}
}

// one dumps the message that starts at data[0], found at offset base of
// the input, and returns its size. ok is false when its header is
// malformed (its size is then unknown). With a method or interface -type,
// an RPC envelope (message type 200) is shown as its frame would be: a
// request, or an answer with -response; any other message is the method's
// request (or, with -response, response) payload.
func (d *dumper) one(indent string, data []byte, base int) (size int, ok bool) {
	t := d.cfg.target
	if t.st != nil || t.none() {
		return d.show(indent, data, base, t.st)
	}
	hdr, err := dumpHeader(data)
	if err != nil {
		return d.show(indent, data, base, nil) // reports the error
	}
	m := data[:hdr.size]
	if hdr.flags>>8 == wire.EnvelopeType {
		d.printf("%senvelope @%d: %d bytes, ", indent, base, hdr.size)
		if d.cfg.response {
			d.response(indent+"  ", m, base)
		} else {
			d.request(indent+"  ", m, base, "request")
		}
		return hdr.size, true
	}
	if t.method == nil {
		d.show(indent, data, base, nil)
		d.fail(indent, base, "-type %s names an interface: give one of its methods (%s.%s) to decode a bare payload",
			t.iface.Name, t.iface.Name, t.iface.Methods[0].Name)
		return hdr.size, true
	}
	st := t.method.Req
	if d.cfg.response {
		st = t.method.Resp
	}
	if st == nil {
		d.show(indent, data, base, nil)
		d.fail(indent, base, "method %s.%s has no %s struct: expected an empty payload", t.iface.Name, t.method.Name, dumpWhich(d.cfg.response))
		return hdr.size, true
	}
	return d.show(indent, data, base, st)
}

// show dumps the message that starts at data[0] (at base of the input):
// its header, then the record decoded as st, or without a schema (st nil)
// the root object's raw fixed section. It returns the message size; ok is
// false when the header is malformed.
func (d *dumper) show(indent string, data []byte, base int, st *schema.Struct) (size int, ok bool) {
	hdr, err := dumpHeader(data)
	if err != nil {
		he := err.(*dumpHeaderError)
		d.fail(indent, base+he.off, "%s", he.reason)
		return 0, false
	}
	m := data[:hdr.size]
	d.printf("%smessage @%d: %d bytes, version %d, flags 0x%04x%s, type %d, root @%d\n",
		indent, base, hdr.size, hdr.version, hdr.flags, dumpFlagNames(hdr.flags), hdr.flags>>8, hdr.root)
	if hdr.root < codec.HeaderSize || hdr.root >= hdr.size {
		d.fail(indent, base+8, "root offset %d outside the data segment %d..%d", hdr.root, codec.HeaderSize, hdr.size-1)
		return hdr.size, true
	}
	if st != nil {
		d.json(indent+"  ", m, base, st)
		return hdr.size, true
	}
	if hdr.flags>>8 == wire.EnvelopeType {
		d.printf("%s  type %d is an RPC envelope: request: method u32 +0, promise u32 +4, target u32 +8, cap bytes +12, payload bytes +20; answer: status u32 +0, promise u32 +4, body bytes +12\n",
			indent, wire.EnvelopeType)
	}
	d.rawObject(indent+"  ", m, base, hdr.root)
	return hdr.size, true
}

func dumpWhich(response bool) string {
	if response {
		return "response"
	}
	return "request"
}

// json writes message m (at base) decoded as st, indented.
func (d *dumper) json(indent string, m []byte, base int, st *schema.Struct) {
	out, err := dynamic.AppendJSON(d.scratch[:0], m, st)
	d.scratch = out[:0]
	if err != nil {
		d.failDecode(indent, base, err)
		return
	}
	var buf bytes.Buffer
	buf.WriteString(indent)
	if err := json.Indent(&buf, out, indent, "  "); err != nil {
		panic("BUG: dynamic.AppendJSON wrote invalid JSON: " + err.Error())
	}
	buf.WriteByte('\n')
	d.w.Write(buf.Bytes())
}

// frames dumps data as a stream of transport frames. guessed says the
// input was read as frames only because it does not start with a message.
func (d *dumper) frames(data []byte, guessed bool) {
	for n, off := 0, 0; off < len(data); n++ {
		rest := len(data) - off
		if rest < 4 {
			d.fail("", off, "frame %d: length prefix truncated: need 4 bytes, have %d%s", n, rest, dumpGuessHint(guessed, n))
			return
		}
		var l uint32
		if d.cfg.http {
			l = binary.BigEndian.Uint32(data[off:])
		} else {
			l = binary.LittleEndian.Uint32(data[off:])
			if l == 0 {
				d.fail("", off, "frame %d: length 0, expected at least 1 (the kind byte)%s", n, dumpGuessHint(guessed, n))
				return
			}
		}
		if l > dumpMaxFrame {
			d.fail("", off, "frame %d: length %d exceeds the 64 MiB frame limit%s", n, l, dumpGuessHint(guessed, n))
			return
		}
		if uint64(l) > uint64(rest-4) {
			d.fail("", off, "frame %d: length %d passes the end of the input (%d bytes left after the prefix)%s", n, l, rest-4, dumpGuessHint(guessed, n))
			return
		}
		body := data[off+4 : off+4+int(l)]
		if d.cfg.http {
			d.printf("frame %d @%d: http, %d bytes\n", n, off, l)
			if len(body) > 0 {
				d.one("  ", body, off+4)
			}
		} else {
			d.printf("frame %d @%d: ", n, off)
			d.frame(body[0], body[1:], off+5)
		}
		off += 4 + int(l)
	}
}

func dumpGuessHint(guessed bool, n int) string {
	if guessed && n == 0 {
		return ` (the input does not start with "ZAP\x00", so it was read as frames)`
	}
	return ""
}

// frame dumps one canonical frame's kind and envelope (at base).
func (d *dumper) frame(kind byte, env []byte, base int) {
	switch kind {
	case wire.KindRequest:
		d.request("  ", env, base, "request")
	case wire.KindResponse:
		d.response("  ", env, base)
	case 3:
		d.request("  ", env, base, "stream-open")
	case 4, 5:
		name := "stream-message"
		if kind == 5 {
			name = "stream-end"
		}
		if len(env) < 4 {
			d.printf("%s, %d bytes\n", name, len(env))
			d.fail("  ", base, "%s: stream id truncated: need 4 bytes, have %d", name, len(env))
			return
		}
		msg := env[4:]
		d.printf("%s, stream %d, message %d bytes\n", name, binary.LittleEndian.Uint32(env), len(msg))
		if len(msg) > 0 && d.cfg.target.st != nil {
			d.show("  ", msg, base+4, d.cfg.target.st)
		}
	case wire.KindGoAway:
		d.printf("go-away, %d bytes\n", len(env))
	default:
		d.printf("kind %d (unknown: skipped), %d bytes\n", kind, len(env))
	}
}

// request dumps a request envelope (at base) and, with a schema, its
// payload.
func (d *dumper) request(indent string, env []byte, base int, name string) {
	r, err := wire.ParseRequest(env)
	if err != nil {
		d.printf("%s, %d bytes\n", name, len(env))
		d.fail(indent, base, "%s envelope: %s", name, dumpEnvReason(err))
		return
	}
	m := d.methodByOrdinal(r.Method)
	mname := ""
	if m != nil {
		mname = " (" + d.cfg.target.iface.Name + "." + m.Name + ")"
	}
	d.printf("%s, promise %d, method %d%s, target %d, cap %d bytes, payload %d bytes\n",
		name, r.PromiseID, r.Method, mname, r.Target, len(r.Cap), len(r.Payload))
	if m != nil {
		if d.promises == nil {
			d.promises = map[uint32]*schema.Method{}
		}
		d.promises[r.PromiseID] = m
	}
	t := d.cfg.target
	if t.none() || len(r.Payload) == 0 {
		return
	}
	st := t.st
	if st == nil {
		switch {
		case m == nil && t.method != nil:
			d.printf("%spayload not decoded: method %d is not %s.%s (ordinal %d)\n", indent, r.Method, t.iface.Name, t.method.Name, t.method.Ordinal)
			return
		case m == nil:
			d.printf("%spayload not decoded: interface %s has no method %d\n", indent, t.iface.Name, r.Method)
			return
		case m.Req == nil:
			d.fail(indent, base+dumpTailOffset(env, 20), "method %s takes no request, but the payload has %d bytes", m.Name, len(r.Payload))
			return
		}
		st = m.Req
	}
	d.show(indent, r.Payload, base+dumpTailOffset(env, 20), st)
}

// methodByOrdinal returns the method of the -type interface with the given
// ordinal, or nil (also when -type named a method with another ordinal).
func (d *dumper) methodByOrdinal(ord uint32) *schema.Method {
	t := d.cfg.target
	if t.method != nil {
		if t.method.Ordinal == ord {
			return t.method
		}
		return nil
	}
	if t.iface != nil {
		for _, m := range t.iface.Methods {
			if m.Ordinal == ord {
				return m
			}
		}
	}
	return nil
}

// response dumps an answer envelope (at base) and, with a schema, its body.
func (d *dumper) response(indent string, env []byte, base int) {
	r, err := wire.ParseResponse(env)
	if err != nil {
		d.printf("response, %d bytes\n", len(env))
		d.fail(indent, base, "response envelope: %s", dumpEnvReason(err))
		return
	}
	m := d.promises[r.PromiseID]
	if m == nil {
		m = d.cfg.target.method
	}
	mname := ""
	if m != nil {
		mname = " (" + d.cfg.target.iface.Name + "." + m.Name + ")"
	}
	d.printf("response, promise %d%s, status %d %s, body %d bytes\n", r.PromiseID, mname, r.Status, dumpStatusText(r.Status), len(r.Body))
	t := d.cfg.target
	if t.none() || len(r.Body) == 0 {
		return
	}
	bodyAt := base + dumpTailOffset(env, 12)
	if r.Status != rpc.StatusOK {
		if utf8.Valid(r.Body) {
			d.printf("%serror text: %s\n", indent, strconv.Quote(string(r.Body)))
		} else {
			d.printf("%serror body: %x\n", indent, r.Body)
		}
		return
	}
	st := t.st
	if st == nil {
		switch {
		case m == nil:
			d.printf("%sbody not decoded: no request with promise %d seen and -type names no method\n", indent, r.PromiseID)
			return
		case m.Resp == nil:
			d.fail(indent, bodyAt, "method %s returns nothing, but the body has %d bytes", m.Name, len(r.Body))
			return
		}
		st = m.Resp
	}
	d.show(indent, r.Body, bodyAt, st)
}

// dumpTailOffset returns the position, inside a parsed envelope, of the
// bytes value whose slot is at fixed-section offset field (payload 20, body
// 12). The envelope has been checked by wire.ParseRequest/ParseResponse.
func dumpTailOffset(env []byte, field int) int {
	root := int(binary.LittleEndian.Uint32(env[8:]))
	slot := root + field
	return slot + int(binary.LittleEndian.Uint32(env[slot:]))
}

func dumpEnvReason(err error) string {
	var ee *wire.EnvelopeError
	if errors.As(err, &ee) {
		return "expected a ZAP-RPC envelope: " + ee.Reason
	}
	return err.Error()
}

func dumpStatusText(s uint32) string {
	switch s {
	case rpc.StatusOK:
		return "OK"
	case rpc.StatusBadRequest:
		return "Bad Request"
	case rpc.StatusUnauthorized:
		return "Unauthorized"
	case rpc.StatusForbidden:
		return "Forbidden"
	case rpc.StatusNotFound:
		return "Not Found"
	case rpc.StatusInternal:
		return "Internal Error"
	case rpc.StatusUnavailable:
		return "Unavailable"
	}
	return "(unknown)"
}

// dumpHdr is a message header whose magic, version and size were checked.
type dumpHdr struct {
	version, flags uint16
	root, size     int
}

// dumpHeaderError is a malformed header: off is the byte it concerns,
// relative to the message start.
type dumpHeaderError struct {
	off    int
	reason string
}

func (e *dumpHeaderError) Error() string { return fmt.Sprintf("at byte %d: %s", e.off, e.reason) }

// dumpHeader checks the header of the message at b[0] (WIRE.md §1).
func dumpHeader(b []byte) (dumpHdr, error) {
	if len(b) < codec.HeaderSize {
		return dumpHdr{}, &dumpHeaderError{0, fmt.Sprintf("message header truncated: need %d bytes, have %d", codec.HeaderSize, len(b))}
	}
	if string(b[:4]) != codec.Magic {
		return dumpHdr{}, &dumpHeaderError{0, fmt.Sprintf("expected magic \"ZAP\\x00\" (5a 41 50 00), found % x", b[:4])}
	}
	h := dumpHdr{
		version: binary.LittleEndian.Uint16(b[4:]),
		flags:   binary.LittleEndian.Uint16(b[6:]),
	}
	if h.version != codec.Version1 && h.version != codec.Version2 {
		return dumpHdr{}, &dumpHeaderError{4, fmt.Sprintf("version %d, expected 1 or 2", h.version)}
	}
	size := binary.LittleEndian.Uint32(b[12:])
	if size < codec.HeaderSize || uint64(size) > uint64(len(b)) {
		return dumpHdr{}, &dumpHeaderError{12, fmt.Sprintf("size %d, expected %d..%d (the bytes present)", size, codec.HeaderSize, len(b))}
	}
	h.size = int(size)
	root := binary.LittleEndian.Uint32(b[8:])
	h.root = int(root)
	if uint64(root) > uint64(size) {
		h.root = int(size) // out of range either way; keep it an int without overflow
	}
	return h, nil
}

func dumpFlagNames(f uint16) string {
	var names []string
	if f&codec.FlagCompressed != 0 {
		names = append(names, "compressed")
	}
	if f&codec.FlagEncrypted != 0 {
		names = append(names, "encrypted")
	}
	if f&codec.FlagSigned != 0 {
		names = append(names, "signed")
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// rawObject shows the fixed section of the object at root of message m
// without a schema: its size is unknown, so it shows the bytes up to the
// first value that a resolving slot points to (or dumpMaxFixed bytes, or
// the message end), as rows of 8 bytes with their u32 words, then the
// slots that resolve.
func (d *dumper) rawObject(indent string, m []byte, base, root int) {
	limit := min(len(m), root+dumpMaxFixed)
	end, why := limit, "the message end"
	if limit < len(m) {
		why = fmt.Sprintf("the %d-byte display bound", dumpMaxFixed)
	}
	for p := root; p < limit; p++ {
		s, ok := dumpProbe(m, p, root, root, limit)
		if !ok {
			continue
		}
		if s.target > root && s.target < end {
			end, why = s.target, "the first value a slot points to"
		}
		p += s.width - 1 // a slot's own bytes are not another slot
	}
	d.printf("%sroot object @%d: fixed section size unknown without a schema; showing %d bytes, up to %s (@%d)\n",
		indent, root, end-root, why, end)
	for p := root; p < end; p += 8 {
		row := m[p:min(p+8, end)]
		var words []string
		for i := 0; i+4 <= len(row); i += 4 {
			words = append(words, strconv.FormatUint(uint64(binary.LittleEndian.Uint32(row[i:])), 10))
		}
		d.printf("%s  +%-4d @%-5d % -23x  u32 %s\n", indent, p-root, p, row, strings.Join(words, " "))
	}
	var lines []string
	for p := root; p < end; {
		s, ok := dumpProbe(m, p, root, end, end)
		if !ok {
			p++
			continue
		}
		lines = append(lines, fmt.Sprintf("%s  +%-4d @%-5d %s", indent, p-root, p, s.desc))
		p += s.width
	}
	if len(lines) == 0 {
		d.printf("%sno text, bytes, list or object slot resolves\n", indent)
	} else {
		d.printf("%sslots that resolve (guesses: without a schema any 4 or 8 bytes may look like one):\n", indent)
		for _, l := range lines {
			d.printf("%s\n", l)
		}
	}
	if end < len(m) {
		d.printf("%sdata after it: @%d..@%d, %d bytes\n", indent, end, len(m), len(m)-end)
	}
	_ = base
}

// dumpSlot is one plausible slot found by dumpProbe.
type dumpSlot struct {
	width  int    // 8 for text, bytes and lists, 4 for objects
	target int    // absolute position it points to
	desc   string // what it resolves to
}

// dumpProbe guesses whether the bytes at p of message m, a slot that must
// end by limit, are a slot that resolves: a variable-element list whose
// elements walk exactly, a text or bytes value inside the message, a flat
// list, or an 8-aligned object. The value may not lie inside [root, end)
// (the fixed section, when known) nor inside the slot itself.
func dumpProbe(m []byte, p, root, end, limit int) (dumpSlot, bool) {
	w := 8
	outside := func(t int64) bool {
		return t >= codec.HeaderSize && t < int64(len(m)) &&
			(t < int64(root) || t >= int64(end)) && (t < int64(p) || t >= int64(p+w))
	}
	if p+8 <= limit {
		rel := binary.LittleEndian.Uint32(m[p:])
		n := binary.LittleEndian.Uint32(m[p+4:])
		t := int64(p) + int64(int32(rel))
		if rel != 0 && n > 0 && uint64(n) <= uint64(len(m)) && t%codec.Alignment == 0 && outside(t) {
			if sizes, msgs, ok := dumpWalk(m, int(t), int(n)); ok {
				kind := "elements"
				if msgs {
					kind = "messages"
				}
				return dumpSlot{8, int(t), fmt.Sprintf("list  %d variable elements at @%d: %s of %s bytes", n, t, kind, sizes)}, true
			}
		}
		ft := int64(p) + int64(rel)
		if rel != 0 && n > 0 && outside(ft) && ft+int64(n) <= int64(len(m)) {
			v := m[ft : ft+int64(n)]
			switch dumpTextClass(v) {
			case 2:
				return dumpSlot{8, int(ft), fmt.Sprintf("text  %s (%d bytes at @%d)", dumpQuote(v), n, ft)}, true
			case 1:
				return dumpSlot{8, int(ft), fmt.Sprintf("text? %s (%d bytes at @%d: %s)", dumpQuote(v), n, ft, dumpHexShort(v))}, true
			}
			desc := fmt.Sprintf("bytes %d bytes at @%d: %s", n, ft, dumpHexShort(v))
			if ft%codec.Alignment == 0 {
				desc += " (or a flat list of " + strconv.Itoa(int(n)) + ")"
			}
			return dumpSlot{8, int(ft), desc}, true
		}
		if int32(rel) < 0 && n > 0 && t%codec.Alignment == 0 && outside(t) && t+int64(n) <= int64(len(m)) {
			return dumpSlot{8, int(t), fmt.Sprintf("list? %d elements at @%d (flat; element width unknown)", n, t)}, true
		}
	}
	if w = 4; p+4 <= limit {
		rel := int32(binary.LittleEndian.Uint32(m[p:]))
		t := int64(p) + int64(rel)
		if rel != 0 && t%codec.Alignment == 0 && outside(t) {
			return dumpSlot{4, int(t), fmt.Sprintf("object? at @%d", t)}, true
		}
	}
	return dumpSlot{}, false
}

// dumpWalk walks n elements [u32 size][size bytes] from t; ok when all fit
// in m. It returns the first sizes and whether every element starts with
// the message magic.
func dumpWalk(m []byte, t, n int) (sizes string, msgs, ok bool) {
	var sb strings.Builder
	msgs = true
	p := t
	for i := 0; i < n; i++ {
		if p+4 > len(m) {
			return "", false, false
		}
		sz := int(binary.LittleEndian.Uint32(m[p:]))
		p += 4
		if sz < 0 || sz > len(m)-p {
			return "", false, false
		}
		if !bytes.HasPrefix(m[p:p+sz], []byte(codec.Magic)) {
			msgs = false
		}
		switch {
		case i < 8:
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(strconv.Itoa(sz))
		case i == 8:
			sb.WriteString(", ...")
		}
		p += sz
	}
	return sb.String(), msgs, true
}

// dumpTextClass says how much v looks like text: 2 for printable ASCII
// (tab, CR and LF allowed), 1 for printable UTF-8 with other characters
// (bytes may be valid UTF-8 by chance), 0 otherwise.
func dumpTextClass(v []byte) int {
	if !utf8.Valid(v) {
		return 0
	}
	class := 2
	for _, r := range string(v) {
		switch {
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0:
			return 0
		case r >= 0x80:
			class = 1
		}
	}
	return class
}

func dumpQuote(v []byte) string {
	const max = 64
	if len(v) <= max {
		return strconv.Quote(string(v))
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(string(v[:cut])) + "..."
}

func dumpHexShort(v []byte) string {
	const max = 32
	if len(v) <= max {
		return fmt.Sprintf("%x", v)
	}
	return fmt.Sprintf("%x...", v[:max])
}

// dumpLooksHex reports whether in is hex text: only hex digits and white
// space (and an optional leading "0x"), with at least one digit.
func dumpLooksHex(in []byte) bool {
	in = bytes.TrimLeft(in, " \t\r\n")
	if len(in) >= 2 && in[0] == '0' && (in[1] == 'x' || in[1] == 'X') {
		in = in[2:]
	}
	digits := 0
	for _, c := range in {
		switch {
		case dumpHexVal(c) >= 0:
			digits++
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			return false
		}
	}
	return digits > 0
}

// dumpHexError is bad hex text; off is the byte offset in the text.
type dumpHexError struct {
	off    int
	reason string
}

func (e *dumpHexError) Error() string { return fmt.Sprintf("at byte %d: %s", e.off, e.reason) }

// dumpDecodeHex decodes hex text, skipping white space and an optional
// leading "0x".
func dumpDecodeHex(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)/2)
	i := len(in) - len(bytes.TrimLeft(in, " \t\r\n"))
	if i+2 <= len(in) && in[i] == '0' && (in[i+1] == 'x' || in[i+1] == 'X') {
		i += 2
	}
	hi := -1
	hiAt := 0
	for ; i < len(in); i++ {
		c := in[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		v := dumpHexVal(c)
		if v < 0 {
			return nil, &dumpHexError{i, fmt.Sprintf("expected a hex digit or white space, found %q", c)}
		}
		if hi < 0 {
			hi, hiAt = v, i
			continue
		}
		out = append(out, byte(hi<<4|v))
		hi = -1
	}
	if hi >= 0 {
		return nil, &dumpHexError{hiAt, "odd number of hex digits: the last digit has no partner"}
	}
	return out, nil
}

func dumpHexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
