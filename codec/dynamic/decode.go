package dynamic

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// MaxDecodeDepth bounds how deep records may nest, counted in records (the
// root is at depth 0, a nested record or a record in a list of any depth
// one level below its parent), as generated DecodeZAP counts them and
// with its limit (codec.ErrTooDeep): a hostile message can point an object
// at itself, and the limit turns that into an error instead of an endless
// walk. AppendMessage refuses to build a message nested deeper, which
// AppendJSON would refuse.
const MaxDecodeDepth = 100

// DecodeError reports where a message stops matching its schema.
type DecodeError struct {
	// Offset is the byte position of the problem inside the message given
	// to [AppendJSON] (for list elements too: not inside the element).
	Offset int
	// Path names the field, "Items[1].Name"; "" for the message header.
	Path string
	// Reason says what was expected there.
	Reason string
}

// Error returns "dynamic: at byte N (path): reason".
func (e *DecodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("dynamic: at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("dynamic: at byte %d (%s): %s", e.Offset, e.Path, e.Reason)
}

// AppendJSON decodes msg, one whole ZAP message whose root object is a
// record of struct s, and appends it to dst as compact JSON: an object with
// s's fields in declaration order. Integers are JSON numbers (exact, also
// beyond 2^53), floats are numbers or the strings "NaN", "+Inf", "-Inf",
// bool is true/false, text is a string, bytes and bytes_fixed are lowercase
// hex strings, a nested struct is an object or null, and a list is an array
// of its elements in these forms. A nested struct of size 0 whose object is
// the last thing in the message starts at the message's end, where readers
// take a nested object for null (docs/wire.md §5), so it is null here as
// in generated records, though its slot is set ({} through [AppendMessage]
// comes back so); a root there is present, {}. Every list is read as the canonical
// compiler writes it, [u32 size][element bytes] per element (docs/wire.md §4):
// list<Struct> elements are whole messages, a list<list<T>> element holds
// the inner list's elements, and a scalar or bytes_fixed element of another
// size is an error.
//
// Unlike the total accessors of package codec, which read a field that does
// not fit as zero, AppendJSON is strict: a header, slot, list or element
// that does not lie inside msg, text that is not UTF-8, nesting deeper than
// [MaxDecodeDepth], or values shared so often that the output would grow
// out of proportion to msg (the values and the bytes of text, bytes and
// bytes_fixed data printed, each counted once per path to it, past 2 per
// byte of msg plus 64), stop it with a *[DecodeError] naming the byte
// offset and field. That count is its own: a generated DecodeZAP counts
// Go memory, so on a message whose objects are shared (which no writer
// makes) it may decode what AppendJSON refuses, or refuse what it prints;
// both take every message a writer makes. Bytes past the header's size are ignored. On error the
// returned slice holds dst plus a partial, invalid document; callers discard
// it. Work and output are bounded by a constant times len(msg) for any
// input; it never panics. msg is only read. s is trusted: it is a struct
// as schema.Parse resolves one (a hand-built Struct whose fields do not
// lie inside its Size, or whose types are not resolved, is not checked).
func AppendJSON(dst []byte, s *schema.Struct, msg []byte) ([]byte, error) {
	if s == nil {
		return dst, &DecodeError{Reason: "no struct type to decode as"}
	}
	d := decoder{budget: decBudget(len(msg))}
	return d.message(dst, msg, 0, s, 0)
}

// decBudget returns the budget of a decoder for a message of n bytes:
// 2n + 64, saturated at math.MaxInt (on 32-bit platforms 2n overflows
// for a message over 1 GiB, which would leave no budget at all).
//
// A generated DecodeZAP has a budget of another kind, 6 bytes of Go
// memory per byte of its input (plus 64): each counts what it makes, JSON
// here and Go records there, and each factor admits every message a
// writer makes in that count (the costliest here is a record of 1-byte
// fields, about 1 unit per byte; there a list of empty bytes values, 6
// bytes per byte). Both take every message a writer makes; on one that
// shares objects either may refuse what the other takes (the
// doc of cmd/zapcodec/internal/gen says when, and why they are not made
// to agree; internal/gentest/all's TestDynamicBudgetDiffers pins it).
func decBudget(n int) int {
	if n > (math.MaxInt-64)/2 {
		return math.MaxInt
	}
	return 2*n + 64
}

// decoder holds the state of one AppendJSON call.
type decoder struct {
	// budget is charged one unit per value plus one per byte of text,
	// bytes or bytes_fixed data; a message whose values do not share
	// storage costs at most about twice its size, so running out means
	// shared or cyclic references.
	budget int
	path   []decPathElem
}

// decPathElem is one step of the field path: a field name, or a list index
// when name is "".
type decPathElem struct {
	name string
	idx  int
}

func (d *decoder) errorf(off int, format string, args ...any) error {
	var p []byte
	for _, e := range d.path {
		if e.name == "" {
			p = append(p, '[')
			p = strconv.AppendInt(p, int64(e.idx), 10)
			p = append(p, ']')
			continue
		}
		if len(p) > 0 {
			p = append(p, '.')
		}
		p = append(p, e.name...)
	}
	return &DecodeError{Offset: off, Path: string(p), Reason: fmt.Sprintf(format, args...)}
}

func (d *decoder) charge(off, n int) error {
	d.budget -= n + 1
	if d.budget < 0 {
		return d.errorf(off, "values referenced more often than the message size allows (shared or cyclic offsets)")
	}
	return nil
}

// message decodes the whole message m, found at position base of the
// top-level message, as a record of s.
func (d *decoder) message(dst, m []byte, base int, s *schema.Struct, depth int) ([]byte, error) {
	msg, err := codec.Parse(m)
	if err != nil {
		off, reason := headerProblem(m, err)
		return dst, d.errorf(base+off, "%s", reason)
	}
	// codec gives a null root for a root offset inside the header or past
	// the end. A root at the end (root == size) is a struct of size 0
	// placed last, as the canonical runtime writes one: present, with no
	// fixed section (object fails a larger struct there).
	root := msg.Root()
	if root.IsNull() {
		return dst, d.errorf(base+8, "root offset %d outside %d..%d (the header's end to the message's)",
			binary.LittleEndian.Uint32(m[8:]), codec.HeaderSize, msg.Size())
	}
	return d.object(dst, msg.Bytes(), base, root.Pos(), s, depth)
}

// headerProblem says why codec.Parse refused the header of the message at
// m[0], with the values found there, and where: the offset of its
// *codec.ParseError (relative to m).
func headerProblem(m []byte, err error) (off int, reason string) {
	var pe *codec.ParseError
	if !errors.As(err, &pe) {
		return 0, err.Error()
	}
	if pe.Reason == "" {
		return pe.Offset, pe.Err.Error()
	}
	return pe.Offset, pe.Reason
}

// object decodes the fixed section of s at position pos of m.
func (d *decoder) object(dst, m []byte, base, pos int, s *schema.Struct, depth int) ([]byte, error) {
	if depth > MaxDecodeDepth {
		return dst, d.errorf(base+pos, "objects nested deeper than %d (cyclic offsets?)", MaxDecodeDepth)
	}
	if s.Size > len(m)-pos { // not pos+s.Size, which can wrap on 32-bit
		return dst, d.errorf(base+pos, "fixed section of %s needs %d bytes, the message ends %d bytes after it starts", s.Name, s.Size, len(m)-pos)
	}
	if err := d.charge(base+pos, 0); err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	for i, f := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = decAppendString(dst, f.Name)
		dst = append(dst, ':')
		d.path = append(d.path, decPathElem{name: f.Name})
		var err error
		dst, err = d.field(dst, m, base, pos+f.Offset, f.Type, depth)
		d.path = d.path[:len(d.path)-1]
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// field decodes the slot at position at of m, of type t.
func (d *decoder) field(dst, m []byte, base, at int, t *schema.Type, depth int) ([]byte, error) {
	if err := d.charge(base+at, 0); err != nil {
		return dst, err
	}
	switch t.Kind {
	case schema.KindText, schema.KindBytes:
		rel := binary.LittleEndian.Uint32(m[at:])
		n := binary.LittleEndian.Uint32(m[at+4:])
		if rel == 0 { // null; {0, 0} is also how an empty value is written
			return append(dst, '"', '"'), nil
		}
		start := uint64(at) + uint64(rel)
		if start < codec.HeaderSize || start+uint64(n) > uint64(len(m)) {
			return dst, d.errorf(base+at, "%s slot {offset %d, length %d} points to %d..%d, outside the message (%d..%d)",
				t.Kind, rel, n, start, start+uint64(n), codec.HeaderSize, len(m))
		}
		v := m[start : start+uint64(n)]
		if err := d.charge(base+int(start), len(v)); err != nil {
			return dst, err
		}
		if t.Kind == schema.KindBytes {
			return decAppendHex(dst, v), nil
		}
		if !utf8.Valid(v) {
			return dst, d.errorf(base+int(start)+decInvalidUTF8At(v), "text is not valid UTF-8")
		}
		return decAppendString(dst, string(v)), nil
	case schema.KindBytesFixed:
		// One unit per byte, as bytes data (the field's own unit was
		// charged above): it prints 2N hex digits, once per path to its
		// object when the object is shared.
		if err := d.charge(base+at, t.N-1); err != nil {
			return dst, err
		}
		return decAppendHex(dst, m[at:at+t.N]), nil
	case schema.KindStruct:
		rel := int32(binary.LittleEndian.Uint32(m[at:]))
		if rel == 0 {
			return append(dst, "null"...), nil
		}
		// A target at exactly the end is a struct of size 0 placed last,
		// as the canonical runtime, AppendMessage and generated records
		// write one (messages-more.json, zero_size_child_at_end). Readers
		// take a nested object there for null (WIRE.md §4, docs/wire.md
		// §5: the canonical reader, codec's Object.Object, and so
		// generated DecodeZAP and views), unlike a root there, and so
		// does this: null. A larger struct there is outside the message
		// (object fails it).
		target := int64(at) + int64(rel)
		if target == int64(len(m)) && t.Struct.Size == 0 {
			return append(dst, "null"...), nil
		}
		if target < codec.HeaderSize || target > int64(len(m)) {
			return dst, d.errorf(base+at, "object slot (offset %d) points to %d, outside the data segment %d..%d", rel, target, codec.HeaderSize, len(m)-1)
		}
		return d.object(dst, m, base, int(target), t.Struct, depth+1)
	case schema.KindList:
		return d.list(dst, m, base, at, t.Elem, depth)
	}
	return decAppendScalar(dst, m[at:], t.Kind), nil
}

// list decodes the list whose slot is at position at of m. Every list is a
// variable-element list (docs/wire.md §4): [u32 size][element bytes] each.
func (d *decoder) list(dst, m []byte, base, at int, elem *schema.Type, depth int) ([]byte, error) {
	rel := int32(binary.LittleEndian.Uint32(m[at:]))
	n := binary.LittleEndian.Uint32(m[at+4:])
	if rel == 0 || n == 0 {
		return append(dst, '[', ']'), nil
	}
	if uint64(n) > uint64(len(m)) {
		return dst, d.errorf(base+at+4, "list count %d exceeds the message size %d", n, len(m))
	}
	start := int64(at) + int64(rel)
	if start < codec.HeaderSize || start >= int64(len(m)) {
		return dst, d.errorf(base+at, "list slot (offset %d) points to %d, outside the data segment %d..%d", rel, start, codec.HeaderSize, len(m)-1)
	}
	return d.elements(dst, m, base, int(start), len(m), int(n), elem, depth)
}

// elements decodes the variable-element list at position p of m whose
// elements lie before limit, as a JSON array. n is the element count, or -1
// for the elements of a nested list, which fill p..limit exactly. depth is
// that of the record holding the list: its record elements are one deeper
// however deep the lists nest (the schema bounds that, schema.MaxListDepth).
func (d *decoder) elements(dst, m []byte, base, p, limit, n int, elem *schema.Type, depth int) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; n < 0 && p < limit || i < n; i++ {
		d.path = append(d.path, decPathElem{idx: i})
		if err := d.charge(base+p, 0); err != nil {
			return dst, err
		}
		if p+codec.ElementHeaderSize > limit {
			if n < 0 {
				return dst, d.errorf(base+p, "element %d: size prefix truncated at the end of the enclosing element (%d)", i, base+limit)
			}
			return dst, d.errorf(base+p, "element %d of %d: size prefix truncated at the message end (%d)", i, n, len(m))
		}
		sz := binary.LittleEndian.Uint32(m[p:])
		p += codec.ElementHeaderSize
		if uint64(p)+uint64(sz) > uint64(limit) {
			if n < 0 {
				return dst, d.errorf(base+p-codec.ElementHeaderSize, "element %d: size %d passes the end of the enclosing element (%d bytes left)", i, sz, limit-p)
			}
			return dst, d.errorf(base+p-codec.ElementHeaderSize, "element %d of %d: size %d passes the message end (%d bytes left)", i, n, sz, limit-p)
		}
		v := m[p : p+int(sz)]
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		switch elem.Kind {
		case schema.KindStruct:
			dst, err = d.message(dst, v, base+p, elem.Struct, depth+1)
		case schema.KindBytes:
			if err = d.charge(base+p, len(v)); err == nil {
				dst = decAppendHex(dst, v)
			}
		case schema.KindText:
			if err = d.charge(base+p, len(v)); err == nil {
				if !utf8.Valid(v) {
					err = d.errorf(base+p+decInvalidUTF8At(v), "text is not valid UTF-8")
				} else {
					dst = decAppendString(dst, string(v))
				}
			}
		case schema.KindBytesFixed:
			if len(v) != elem.N {
				err = d.errorf(base+p-codec.ElementHeaderSize, "element of %d bytes, want %d for %s", len(v), elem.N, elem)
			} else if err = d.charge(base+p, len(v)); err == nil {
				dst = decAppendHex(dst, v)
			}
		case schema.KindList:
			dst, err = d.elements(dst, m, base, p, p+len(v), -1, elem.Elem, depth)
		default:
			if w := elem.Kind.Width(); len(v) != w {
				err = d.errorf(base+p-codec.ElementHeaderSize, "element of %d bytes, want %d for %s", len(v), w, elem.Kind)
			} else {
				dst = decAppendScalar(dst, v, elem.Kind)
			}
		}
		if err != nil {
			return dst, err
		}
		d.path = d.path[:len(d.path)-1]
		p += int(sz)
	}
	return append(dst, ']'), nil
}

// decAppendScalar appends the scalar of kind k stored little-endian at the
// start of b, which holds at least k.Width() bytes.
func decAppendScalar(dst, b []byte, k schema.Kind) []byte {
	switch k {
	case schema.KindBool:
		if b[0] != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case schema.KindU8:
		return strconv.AppendUint(dst, uint64(b[0]), 10)
	case schema.KindU16:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint16(b)), 10)
	case schema.KindU32:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(b)), 10)
	case schema.KindU64:
		return strconv.AppendUint(dst, binary.LittleEndian.Uint64(b), 10)
	case schema.KindI8:
		return strconv.AppendInt(dst, int64(int8(b[0])), 10)
	case schema.KindI16:
		return strconv.AppendInt(dst, int64(int16(binary.LittleEndian.Uint16(b))), 10)
	case schema.KindI32:
		return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(b))), 10)
	case schema.KindI64:
		return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(b)), 10)
	case schema.KindF32:
		return decAppendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case schema.KindF64:
		return decAppendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
	}
	panic("BUG: dynamic: decAppendScalar of non-scalar kind " + k.String())
}

// decAppendFloat appends f as the shortest JSON number that reads back as
// the same float of the given bit size; NaN and infinities, which JSON has
// no number for, become the strings "NaN", "+Inf" and "-Inf".
func decAppendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Inf"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// decAppendHex appends v as a JSON string of lowercase hex digits.
func decAppendHex(dst, v []byte) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, v)
	return append(dst, '"')
}

// decAppendString appends s, valid UTF-8, as a JSON string: quote,
// backslash and control characters escaped, everything else as is.
func decAppendString(dst []byte, s string) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20 || c == 0x7f:
			dst = append(dst, '\\', 'u', '0', '0', digits[c>>4], digits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// decInvalidUTF8At returns the index of the first byte of v that does not
// start a valid UTF-8 sequence, or len(v).
func decInvalidUTF8At(v []byte) int {
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRune(v[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(v)
}
