package dump

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

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
// malformed (its size is then unknown). With a method or interface Target,
// an RPC envelope (message type 200) is shown as its frame would be: a
// request, or an answer with Response; any other message is the method's
// request (or, with Response, response) payload.
func (d *dumper) one(indent string, data []byte, base int) (size int, ok bool) {
	t := d.opts.Target
	if t.Struct != nil || t.none() {
		return d.show(indent, data, base, t.Struct)
	}
	m, err := codec.Parse(data)
	if err != nil {
		return d.show(indent, data, base, nil) // reports the error
	}
	if m.Type() == wire.EnvelopeType {
		d.printf("%senvelope @%d: %d bytes, ", indent, base, m.Size())
		if d.opts.Response {
			d.response(indent+"  ", m.Bytes(), base)
		} else {
			d.request(indent+"  ", m.Bytes(), base, "request")
		}
		return m.Size(), true
	}
	if t.Method == nil {
		d.show(indent, data, base, nil)
		if len(t.Interface.Methods) == 0 {
			d.fail(indent, base, "-type %s names an interface without methods: none decodes a bare payload", t.Interface.Name)
		} else {
			d.fail(indent, base, "-type %s names an interface: give one of its methods (%s.%s) to decode a bare payload",
				t.Interface.Name, t.Interface.Name, t.Interface.Methods[0].Name)
		}
		return m.Size(), true
	}
	st := t.Method.Req
	if d.opts.Response {
		st = t.Method.Resp
	}
	if st == nil {
		d.show(indent, data, base, nil)
		d.fail(indent, base, "method %s.%s has no %s struct: expected an empty payload", t.Interface.Name, t.Method.Name, which(d.opts.Response))
		return m.Size(), true
	}
	return d.show(indent, data, base, st)
}

// show dumps the message that starts at data[0] (at base of the input):
// its header, then the record decoded as st, or without a schema (st nil)
// the root object's raw fixed section. It returns the message size; ok is
// false when the header is malformed.
func (d *dumper) show(indent string, data []byte, base int, st *schema.Struct) (size int, ok bool) {
	m, err := codec.Parse(data)
	if err != nil {
		off, reason := headerProblem(data, err)
		d.fail(indent, base+off, "%s", reason)
		return 0, false
	}
	size, root := m.Size(), rootOffset(m)
	d.printf("%smessage @%d: %d bytes, version %d, flags 0x%04x%s, type %d, root @%d\n",
		indent, base, size, m.Version(), m.Flags(), flagNames(m.Flags()), m.Type(), int64(base)+root)
	// codec gives a null root for a root offset inside the header or past
	// the end; root == size is a struct of size 0 placed last (the
	// canonical runtime writes one so): present, with no fixed section.
	if m.Root().IsNull() {
		d.fail(indent, base+8, "root offset %d outside %d..%d (the header's end to the message's)", root, codec.HeaderSize, size)
		return size, true
	}
	if st != nil {
		d.json(indent+"  ", m.Bytes(), base, st)
		return size, true
	}
	if m.Type() == wire.EnvelopeType {
		d.printf("%s  type %d is an RPC envelope: request: method u32 +0, promise u32 +4, target u32 +8, cap bytes +12, payload bytes +20; answer: status u32 +0, promise u32 +4, body bytes +12\n",
			indent, wire.EnvelopeType)
	}
	d.rawObject(indent+"  ", m.Bytes(), base, int(root)) // a root that is not null is at most size
	return size, true
}

// headerProblem says where and why codec.Parse refused the header of the
// message at b[0]: the offset is codec's (*codec.ParseError, relative to
// b), the reason names the values found there.
func headerProblem(b []byte, err error) (off int, reason string) {
	var pe *codec.ParseError
	if !errors.As(err, &pe) {
		return 0, err.Error()
	}
	if pe.Reason == "" {
		return pe.Offset, pe.Err.Error()
	}
	return pe.Offset, pe.Reason
}

// rootOffset returns the root offset of the header of m as written, for
// the listing: the whole 32-bit value, also past the message's end (it
// was capped at the size, which showed a root the header does not hold,
// and one that is valid). int64 holds it on 32-bit platforms too.
func rootOffset(m codec.Message) int64 {
	return int64(binary.LittleEndian.Uint32(m.Bytes()[8:]))
}

func which(response bool) string {
	if response {
		return "response"
	}
	return "request"
}

func flagNames(f uint16) string {
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

// json writes message m (at base) decoded as st, indented.
func (d *dumper) json(indent string, m []byte, base int, st *schema.Struct) {
	out, err := dynamic.AppendJSON(d.scratch[:0], st, m)
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
