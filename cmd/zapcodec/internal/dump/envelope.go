package dump

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// request dumps a request envelope (at base) and, with a schema, its
// payload.
func (d *dumper) request(indent string, env []byte, base int, name string) {
	r, err := wire.ParseRequest(env)
	if err != nil {
		d.printf("%s, %d bytes\n", name, len(env))
		off, reason := envProblem(err)
		d.fail(indent, base+off, "%s envelope: %s", name, reason)
		return
	}
	m := d.methodByOrdinal(r.Method)
	mname := ""
	if m != nil {
		mname = " (" + d.opts.Target.Interface.Name + "." + m.Name + ")"
	}
	d.printf("%s, promise %d, method %d%s, target %d, cap %d bytes, payload %d bytes\n",
		name, r.PromiseID, r.Method, mname, r.Target, len(r.Cap), len(r.Payload))
	d.requestExtensions(indent, env, base, &r)
	if m != nil {
		if d.promises == nil {
			d.promises = map[uint32]*schema.Method{}
		}
		d.promises[r.PromiseID] = m
		if name == "stream-open" { // the promise id is the stream id
			if d.streams == nil {
				d.streams = map[uint32]*schema.Method{}
			}
			d.streams[r.PromiseID] = m
		}
	}
	payloadAt := base + tailOffset(env, 20)
	if r.PayloadDeflated {
		payload, err := inflateBody(r.Payload)
		if err != nil {
			d.fail(indent, payloadAt, "compressed payload: %v (a zapcodec server answers 400)", err)
			return
		}
		d.printf("%spayload inflated: %d bytes (positions in it are the inflated payload's, from 0)\n", indent, len(payload))
		r.Payload, payloadAt = payload, 0
	}
	t := d.opts.Target
	if t.none() || len(r.Payload) == 0 {
		return
	}
	st := t.Struct
	if st == nil {
		switch {
		case m == nil && t.Method != nil:
			d.printf("%spayload not decoded: method %d is not %s.%s (ordinal %d)\n", indent, r.Method, t.Interface.Name, t.Method.Name, t.Method.Ordinal)
			return
		case m == nil:
			d.printf("%spayload not decoded: interface %s has no method %d\n", indent, t.Interface.Name, r.Method)
			return
		case m.Req == nil:
			d.fail(indent, payloadAt, "method %s takes no request, but the payload has %d bytes", m.Name, len(r.Payload))
			return
		}
		st = m.Req
	}
	d.show(indent, r.Payload, payloadAt, st)
}

// methodByOrdinal returns the method of the Target's interface with the
// given ordinal, or nil (also when the Target is a method with another
// ordinal).
func (d *dumper) methodByOrdinal(ord uint32) *schema.Method {
	t := d.opts.Target
	if t.Method != nil {
		if t.Method.Ordinal == ord {
			return t.Method
		}
		return nil
	}
	if t.Interface != nil {
		return t.Interface.MethodByOrdinal(ord)
	}
	return nil
}

// response dumps an answer envelope (at base), its metadata (docs/wire.md
// §8) and, with a schema, its body.
func (d *dumper) response(indent string, env []byte, base int) {
	r, err := wire.ParseResponse(env)
	if err != nil {
		d.printf("response, %d bytes\n", len(env))
		off, reason := envProblem(err)
		d.fail(indent, base+off, "response envelope: %s", reason)
		return
	}
	m := d.promises[r.PromiseID]
	if m == nil {
		m = d.opts.Target.Method
	}
	mname := ""
	if m != nil {
		mname = " (" + d.opts.Target.Interface.Name + "." + m.Name + ")"
	}
	notRun := ""
	if r.NotRun {
		notRun = ", not run (the server refused it before its handler ran: safe to send again)"
	}
	if r.Deflated {
		notRun += ", compressed (raw DEFLATE)"
	}
	if r.TakesDeflate {
		notRun += ", takes compressed requests"
	}
	d.printf("response, promise %d%s, status %d %s%s, body %d bytes\n", r.PromiseID, mname, r.Status, statusText(r.Status), notRun, len(r.Body))
	d.metadata(indent, r.Metadata, base+tailOffset(env, 24), "a zapcodec client fails the call with rpc.ErrResponseMetadata")
	bodyAt := base + tailOffset(env, 12)
	if r.Deflated {
		body, err := inflateBody(r.Body)
		if err != nil {
			d.fail(indent, bodyAt, "compressed body: %v (a zapcodec client fails the call with rpc.ErrDecompress)", err)
			return
		}
		d.printf("%sbody inflated: %d bytes (positions in it are the inflated body's, from 0)\n", indent, len(body))
		r.Body, bodyAt = body, 0
	}
	t := d.opts.Target
	if t.none() || len(r.Body) == 0 {
		return
	}
	if r.Status != rpc.StatusOK {
		if utf8.Valid(r.Body) {
			d.printf("%serror text: %s\n", indent, strconv.Quote(string(r.Body)))
		} else {
			d.printf("%serror body: %x\n", indent, r.Body)
		}
		return
	}
	st := t.Struct
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

// requestExtensions shows the zapcodec extension fields of a request or
// stream-open envelope (docs/wire.md §8) that r holds: the caller's
// deadline, as the time it had left, and the key/value metadata, one pair
// a line, quoted. Metadata that is not a whole number of pairs (which a
// zapcodec server answers with 400) is an input error at its value.
func (d *dumper) requestExtensions(indent string, env []byte, base int, r *wire.Request) {
	if r.Timeout != 0 {
		left := strconv.FormatUint(r.Timeout, 10) + "µs"
		if r.Timeout <= math.MaxInt64/uint64(time.Microsecond) {
			left = (time.Duration(r.Timeout) * time.Microsecond).String()
		}
		d.printf("%sdeadline: %s left when the request was written\n", indent, left)
	}
	d.metadata(indent, r.Metadata, base+tailOffset(env, 36), "a zapcodec server answers 400")
	if r.AcceptDeflate {
		d.printf("%saccepts a compressed answer (raw DEFLATE)\n", indent)
	}
	if r.PayloadDeflated {
		d.printf("%spayload compressed (raw DEFLATE)\n", indent)
	}
}

// metadata shows the key/value metadata md of a request, stream open or
// response envelope (docs/wire.md §8), at position at of the input: one
// pair a line, quoted. Metadata that is not a whole number of pairs is an
// input error at its value; refused says what a zapcodec peer does with
// it.
func (d *dumper) metadata(indent string, md []byte, at int, refused string) {
	if len(md) == 0 {
		return
	}
	var pairs [][2][]byte
	var item [2][]byte
	b, n := md, 0
	for ; len(b) >= 4; n++ {
		l := binary.LittleEndian.Uint32(b)
		if uint64(l) > uint64(len(b)-4) {
			break
		}
		item[n%2] = b[4 : 4+l]
		b = b[4+l:]
		if n%2 == 1 {
			pairs = append(pairs, item)
		}
	}
	s := "s"
	if len(pairs) == 1 {
		s = ""
	}
	d.printf("%smetadata, %d bytes, %d pair%s:\n", indent, len(md), len(pairs), s)
	for _, p := range pairs {
		d.printf("%s  %s: %s\n", indent, strconv.Quote(string(p[0])), strconv.Quote(string(p[1])))
	}
	if len(b) > 0 || n%2 == 1 {
		at += len(md) - len(b)
		if len(b) == 0 { // a key without its value
			at -= 4 + len(item[0])
		}
		d.fail(indent, at, "metadata is not a whole number of key/value pairs (%s)", refused)
	}
}

// tailOffset returns the position, inside an envelope that wire parsed,
// of the bytes value whose slot is at fixed-section offset field (payload
// 20, body 12, a request's metadata 36, a response's 24): the slot's position plus the relative offset it holds.
func tailOffset(env []byte, field int) int {
	m, _ := codec.Parse(env) // checked by wire.ParseRequest/ParseResponse
	root := m.Root()
	return root.Pos() + field + int(root.Uint32(field))
}

// envProblem says where (from the envelope's start: wire.EnvelopeError's
// offset) and why wire refused an envelope.
func envProblem(err error) (off int, reason string) {
	var ee *wire.EnvelopeError
	if errors.As(err, &ee) {
		return ee.Offset, "expected a ZAP-RPC envelope: " + ee.Reason
	}
	return 0, err.Error()
}

func statusText(s uint32) string {
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

// maxInflated bounds what dump inflates of a compressed body: the
// largest frame the canonical runtime takes.
const maxInflated = 64 << 20

// inflateBody inflates a compressed payload or answer body (docs/wire.md §8): a raw
// DEFLATE stream with nothing after it, of at most maxInflated bytes.
func inflateBody(b []byte) ([]byte, error) {
	src := bytes.NewReader(b)
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(src), maxInflated+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("does not inflate: %v", err)
	case len(out) > maxInflated:
		return nil, fmt.Errorf("inflates past %d bytes", maxInflated)
	case src.Len() != 0:
		return nil, fmt.Errorf("%d bytes after the compressed stream", src.Len())
	}
	return out, nil
}
