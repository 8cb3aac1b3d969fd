// Package dump writes a listing of ZAP bytes for people: one message or a
// stream of transport frames, given raw or as hex text, shown raw (the
// header and the root object's fixed section as words, with the slots that
// resolve) or through a schema (the record as JSON with field names; RPC
// envelopes with their method and payload). Envelopes show zapcodec's
// extension fields (docs/wire.md §8) with or without a schema: a request's
// deadline and metadata, an answer's metadata and not-run flag, and a
// stream trailer's (kind 10) metadata. It is the zapcodec dump
// subcommand, which only parses flags and reads files.
//
// Input is checked by the packages that own each layer: the message
// header by codec.Parse, frames by frame.Reader, envelopes by rpc/wire, records
// by dynamic. dump only says where the input broke and why, in place
// ("error: at byte N: ..."), and goes on where it can. Every position in
// the listing ("@N") and in its errors is a byte offset of the input (of
// the bytes hex text decodes to), also inside a message that is not the
// first; offsets inside an object are shown as "+N".
package dump

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// Options say how to read the input and what to decode it as.
type Options struct {
	// Hex and Raw force the input form (hex text or raw bytes); by default
	// input that is only hex digits and white space is hex text.
	Hex, Raw bool
	// Message and Frames force one message or a stream of transport
	// frames; by default input that starts with "ZAP\x00" is a message.
	Message, Frames bool
	// HTTP: frames are ZAP-over-HTTP (big-endian u32 length, no kind).
	HTTP bool
	// Response: a bare payload given with a method Target is the method's
	// response (by default its request).
	Response bool
	// Target is what to decode records as; the zero Target shows them raw.
	Target Target
}

// Target is what -type named: one struct, or a method (with its
// interface), or an interface whose methods are picked by the envelope's
// method ordinal. The zero value means no schema.
type Target struct {
	Struct    *schema.Struct
	Method    *schema.Method
	Interface *schema.Interface
}

func (t Target) none() bool { return t.Struct == nil && t.Method == nil && t.Interface == nil }

// ResolveTarget finds what name stands for in f: a struct first, then
// "Iface.method", an interface, and last a method name that must be unique
// across the interfaces. Each may also be given qualified by the schema's
// package, as service names are ("eth.Eth", "eth.Eth.getBalance": what a
// generated IServiceName holds and zapcodec health takes).
func ResolveTarget(f *schema.File, name string) (Target, error) {
	t, err := resolveTarget(f, name)
	if err != nil && f.Package != "" {
		if rest, ok := strings.CutPrefix(name, f.Package+"."); ok {
			if t, err2 := resolveTarget(f, rest); err2 == nil {
				return t, nil
			}
		}
	}
	return t, err
}

func resolveTarget(f *schema.File, name string) (Target, error) {
	if s := f.Struct(name); s != nil {
		return Target{Struct: s}, nil
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		it := f.Interface(name[:i])
		if it == nil {
			return Target{}, fmt.Errorf("-type %s: no interface %s in the schema", name, name[:i])
		}
		if m := it.Method(name[i+1:]); m != nil {
			return Target{Method: m, Interface: it}, nil
		}
		return Target{}, fmt.Errorf("-type %s: interface %s has no method %s", name, it.Name, name[i+1:])
	}
	if it := f.Interface(name); it != nil {
		return Target{Interface: it}, nil
	}
	var found Target
	var where []string
	for _, it := range f.Interfaces {
		for _, m := range it.Methods {
			if m.Name == name {
				found = Target{Method: m, Interface: it}
				where = append(where, it.Name+"."+m.Name)
			}
		}
	}
	switch len(where) {
	case 0:
		return Target{}, fmt.Errorf("-type %s: no struct, interface or method of that name in the schema", name)
	case 1:
		return found, nil
	}
	return Target{}, fmt.Errorf("-type %s is ambiguous: %s", name, strings.Join(where, ", "))
}

// Report sums up the problems found in the input.
type Report struct {
	// Problems counts the errors listed in place; 0 when all the input
	// was shown.
	Problems int
	// First is the first of them, "at byte N: reason"; "" without one.
	First string
}

// Write writes the listing of in to w. Malformed input is not an error of
// Write: it is listed in place and counted in the Report. The error is
// w's, from writing the listing. in is only read.
func Write(w io.Writer, in []byte, opts Options) (Report, error) {
	bw := bufio.NewWriter(w)
	d := dumper{opts: opts, w: bw}
	d.run(in)
	return Report{Problems: d.nerr, First: d.first}, bw.Flush()
}

// dumper writes the listing of one input. Errors in the input are written
// in place ("error: at byte N: ...") and counted; the first is kept for
// the Report.
type dumper struct {
	opts  Options
	w     *bufio.Writer
	nerr  int
	first string
	// promises maps the promise_id of each request seen to its method, so
	// that an answer later in the stream decodes as that method's result.
	promises map[uint32]*schema.Method
	// streams maps the id of each stream opened to its method, so that the
	// stream's messages decode as the method's message types.
	streams map[uint32]*schema.Method
	scratch []byte
	// walked and scanned add up the work of the slot guesses of raw
	// objects (guesser), for the tests.
	walked, scanned int
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
	if d.opts.Hex || (!d.opts.Raw && looksHex(in)) {
		var err error
		if data, err = decodeHex(in); err != nil {
			he := err.(*hexError)
			d.failAt("", fmt.Sprintf("at byte %d of the hex text", he.off), "%s", he.reason)
			return
		}
	}
	if len(data) == 0 {
		d.fail("", 0, "empty input: expected a message or frames")
		return
	}
	asMessage := d.opts.Message || (!d.opts.Frames && !d.opts.HTTP && bytes.HasPrefix(data, []byte(codec.Magic)))
	if asMessage {
		d.messages(data)
		return
	}
	d.frames(data, !d.opts.Frames && !d.opts.HTTP)
}
