package dynamic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// EncodeError reports a JSON value that does not fit the schema.
type EncodeError struct {
	// Path names the field, "Items[1].Name"; "" for the whole document.
	Path string
	// Reason says what was expected there.
	Reason string
}

// Error returns "dynamic: path: reason".
func (e *EncodeError) Error() string {
	if e.Path == "" {
		return "dynamic: " + e.Reason
	}
	return "dynamic: " + e.Path + ": " + e.Reason
}

// AppendMessage encodes js, one JSON object whose keys are the field names
// of struct s, as one whole version-1 ZAP message and appends it to dst.
// It builds the bytes the generated AppendZAP of s builds for the same
// values: fields set in declaration order, nested structs and lists built
// while their parent is open, text and bytes as deferred tails.
//
// Values: integers as JSON numbers or strings (decimal, or 0x hex), checked
// against the field's range; floats as numbers, or strings: "NaN", "+Inf"
// ("Inf"), "-Inf", or a number in decimal;
// bool as true/false; text as a string; bytes and bytes_fixed[N] as hex
// strings (an optional 0x prefix; bytes_fixed takes exactly N bytes); a
// nested struct as an object, null or absent for a null slot; a list as an
// array. An absent field is its zero value. These are the forms AppendJSON
// writes, so its output encodes back to the same message.
//
// Errors are *[EncodeError] naming the field: invalid JSON (anything but
// white space after the object included, bytes that are not UTF-8
// (encoding/json would read them as U+FFFD; an escaped lone surrogate,
// "\ud800", which is valid JSON, still becomes U+FFFD as encoding/json
// reads it), an object naming a key twice,
// which encoding/json would take with its last value, and arrays and
// objects nested more than 10,000 deep, as encoding/json), an unknown field, a value of
// the wrong JSON type or out of range, records nested deeper than
// AppendJSON and generated DecodeZAP read ([MaxDecodeDepth]), a message
// (or a record in a list) of 2 GiB or more, which [codec.Builder] does not
// write, or a dst so long that the message would pass its first 4 GiB.
// js is only read; on error dst is returned unchanged.
//
// A document with several faults gets one error, the same one each time
// (it does not follow map order), which is not always the first fault in
// the input: bytes that are not UTF-8, then the first fault of JSON
// syntax; then the records' faults in schema order, depth first (a
// record's fields in the order the schema declares them, a nested record
// or list element whole before the next field, and a record's keys that
// name no field after its fields' values, the first in sorted order);
// then the message's size; a key named twice only when nothing else is
// wrong.
func AppendMessage(dst []byte, s *schema.Struct, js []byte) ([]byte, error) {
	if s == nil {
		return dst, &EncodeError{Reason: "no struct type to encode as"}
	}
	// encoding/json reads bytes that are not UTF-8 inside a string as
	// U+FFFD: text would change silently. JSON is UTF-8 (RFC 8259 §8.1),
	// and AppendJSON refuses such text in a message.
	if !utf8.Valid(js) {
		return dst, &EncodeError{Reason: fmt.Sprintf("invalid JSON: not UTF-8 at byte %d", decInvalidUTF8At(js))}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return dst, &EncodeError{Reason: "invalid JSON: " + err.Error()}
	}
	// Only white space may follow the value: Token reads the next one,
	// and fails on anything that does not start one ("{} x"), which is
	// as much an error as a second value.
	switch _, err := dec.Token(); {
	case err == nil:
		return dst, &EncodeError{Reason: "invalid JSON: more than one value"}
	case err != io.EOF:
		return dst, &EncodeError{Reason: "invalid JSON after the value: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return dst, &EncodeError{Reason: "want a JSON object for " + s.Name + ", got " + encKind(v)}
	}
	e := encoder{}
	out, err := e.message(dst, s, obj, 0)
	if err != nil {
		return dst, err
	}
	// Decode keeps the last value of a key named twice in one object,
	// silently, where another reader of the same document (a gateway's
	// filter, say) may keep the first: refuse it. Every object of the
	// document went through object (one anywhere else is an error), which
	// counted the keys left after Decode; the document names more when
	// one is repeated. Only then is it read again, token by token, to name
	// the key.
	if e.keys != encCountKeys(js) {
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		if _, err := encValue(dec, 0); err != nil {
			return dst, err
		}
		return dst, &EncodeError{Reason: fmt.Sprintf("BUG: dynamic: %d keys in the document, %d in its objects, none repeated", encCountKeys(js), e.keys)}
	}
	return out, nil
}

// encCountKeys returns how many keys the objects of js, valid JSON, name
// in all: the colons outside strings.
func encCountKeys(js []byte) int {
	n := 0
	for i := 0; i < len(js); i++ {
		switch js[i] {
		case ':':
			n++
		case '"':
			for i++; i < len(js) && js[i] != '"'; i++ {
				if js[i] == '\\' {
					i++ // the escaped byte: \" does not end the string
				}
			}
		}
	}
	return n
}

// encMaxJSONDepth bounds how deeply arrays and objects may nest in the
// JSON AppendMessage reads, as encoding/json bounds its Decode: deeper
// than any schema's records and lists nest, and encValue recurses once
// per level.
const encMaxJSONDepth = 10000

// encValue reads the next JSON value of dec into the form Decode with
// UseNumber gives (map[string]any, []any, json.Number, string, bool,
// nil), token by token, and refuses an object naming a key twice, which
// Decode takes: AppendMessage reads a document so when it found a key
// repeated, to name it. depth counts the arrays and objects around the
// value.
func encValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, &EncodeError{Reason: "invalid JSON: " + err.Error()}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // a scalar; Token reports a stray ] or } as an error
	}
	if depth >= encMaxJSONDepth {
		return nil, &EncodeError{Reason: fmt.Sprintf("invalid JSON: arrays and objects nested deeper than %d", encMaxJSONDepth)}
	}
	if d == '[' {
		arr := []any{}
		for dec.More() {
			x, err := encValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, x)
		}
		if _, err := dec.Token(); err != nil { // the ]
			return nil, &EncodeError{Reason: "invalid JSON: " + err.Error()}
		}
		return arr, nil
	}
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &EncodeError{Reason: "invalid JSON: " + err.Error()}
		}
		key, ok := tok.(string) // Token refuses a key that is not a string
		if !ok {
			return nil, &EncodeError{Reason: fmt.Sprintf("invalid JSON: object key %v is not a string", tok)}
		}
		if _, dup := obj[key]; dup {
			return nil, &EncodeError{Reason: fmt.Sprintf("invalid JSON: key %q twice in one object (the second ends at byte %d)", encShort(key), dec.InputOffset())}
		}
		x, err := encValue(dec, depth+1)
		if err != nil {
			return nil, err
		}
		obj[key] = x
	}
	if _, err := dec.Token(); err != nil { // the }
		return nil, &EncodeError{Reason: "invalid JSON: " + err.Error()}
	}
	return obj, nil
}

// encoder holds the field path of one AppendMessage call.
type encoder struct {
	path []string
	keys int // the keys of the objects encoded so far
}

func (e *encoder) errorf(format string, args ...any) error {
	return &EncodeError{Path: strings.Join(e.path, ""), Reason: fmt.Sprintf(format, args...)}
}

// push adds a path step: a field name (with a dot when not first) or [i].
func (e *encoder) push(name string) {
	if len(e.path) > 0 && !strings.HasPrefix(name, "[") {
		name = "." + name
	}
	e.path = append(e.path, name)
}

func (e *encoder) pop() { e.path = e.path[:len(e.path)-1] }

// message appends a whole message with obj as its root record of s,
// nested depth levels deep (as AppendJSON counts them).
func (e *encoder) message(dst []byte, s *schema.Struct, obj map[string]any, depth int) ([]byte, error) {
	var b codec.Builder
	b.Reset(dst)
	ref, err := e.object(&b, s, obj, depth)
	if err != nil {
		return dst, err
	}
	b.SetRoot(ref)
	out := b.Finish()
	if err := b.Err(); err != nil {
		// The Builder's limits, which a large document reaches: they
		// are the caller's to know, not a bug.
		if size := len(out) - len(dst); size > math.MaxInt32 {
			return dst, e.errorf("message of %d bytes, too large: the Builder writes at most 2 GiB - 1 (%d bytes)", size, math.MaxInt32)
		}
		if uint64(len(out)) > math.MaxUint32 {
			return dst, e.errorf("message ending %d bytes into dst: the Builder starts objects within the first 4 GiB of its buffer", len(out))
		}
		return dst, e.errorf("BUG: builder: %v", err)
	}
	return out, nil
}

// object builds the fixed section of s from obj, nested depth levels
// deep, and returns its Ref.
func (e *encoder) object(b *codec.Builder, s *schema.Struct, obj map[string]any, depth int) (codec.Ref, error) {
	if depth > MaxDecodeDepth {
		return 0, e.errorf("objects nested deeper than %d (MaxDecodeDepth), which AppendJSON refuses", MaxDecodeDepth)
	}
	ob := b.StartObject(s.Size)
	known := 0 // fields present in obj
	for _, f := range s.Fields {
		v, ok := obj[f.Name]
		if !ok {
			if f.Type.Kind == schema.KindList {
				// An absent list is empty, and an empty list is still
				// started (padding to 8), as AppendZAP does.
				l := b.StartList(0)
				l.Finish()
			}
			continue
		}
		known++
		e.push(f.Name)
		if err := e.field(b, &ob, f.Offset, f.Type, v, depth); err != nil {
			return 0, err
		}
		e.pop()
	}
	// Every key of obj names a field when as many fields were found as
	// obj has keys (field names are distinct, as are keys): the lookups
	// above decide it, where a search of the fields for each key cost
	// keys × fields.
	if known != len(obj) {
		return 0, e.unknownField(s, obj)
	}
	e.keys += known
	return ob.Finish(), nil
}

// unknownField returns the error for the keys of obj that name no field of
// s, naming the first of them in sorted order.
func (e *encoder) unknownField(s *schema.Struct, obj map[string]any) error {
	names := make([]string, len(s.Fields))
	fields := make(map[string]bool, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
		fields[f.Name] = true
	}
	var unknown []string
	for k := range obj {
		if !fields[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return e.errorf("unknown field %q of %s (fields: %s)", unknown[0], s.Name, strings.Join(names, ", "))
}

// field sets the slot at off of ob, an object nested depth levels deep,
// from the JSON value v.
func (e *encoder) field(b *codec.Builder, ob *codec.ObjectBuilder, off int, t *schema.Type, v any, depth int) error {
	switch t.Kind {
	case schema.KindText:
		s, ok := v.(string)
		if !ok {
			return e.errorf("want a string for text, got %s", encKind(v))
		}
		ob.SetText(off, s)
	case schema.KindBytes:
		p, err := e.hexValue(v, -1)
		if err != nil {
			return err
		}
		ob.SetBytes(off, p)
	case schema.KindBytesFixed:
		p, err := e.hexValue(v, t.N)
		if err != nil {
			return err
		}
		ob.SetBytesFixed(off, p)
	case schema.KindStruct:
		if v == nil {
			return nil // null slot
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return e.errorf("want an object for %s, got %s", t.Struct.Name, encKind(v))
		}
		ref, err := e.object(b, t.Struct, obj, depth+1)
		if err != nil {
			return err
		}
		ob.SetObject(off, ref)
	case schema.KindList:
		var arr []any
		if v != nil {
			var ok bool
			if arr, ok = v.([]any); !ok {
				return e.errorf("want an array for %s, got %s", t, encKind(v))
			}
		}
		// An empty or null list is still started (the buffer pads to 8) and
		// leaves the slot {0, 0}, as the canonical constructors do.
		l := b.StartList(0)
		for i, x := range arr {
			e.push("[" + strconv.Itoa(i) + "]")
			buf, err := e.element(l.BeginElement(), t.Elem, x, depth)
			if err != nil {
				return err
			}
			l.EndElement(buf)
			e.pop()
		}
		ob.SetList(off, l.Finish())
	default:
		u, err := e.scalar(t.Kind, v)
		if err != nil {
			return err
		}
		switch t.Kind.Width() {
		case 1:
			ob.SetUint8(off, uint8(u))
		case 2:
			ob.SetUint16(off, uint16(u))
		case 4:
			ob.SetUint32(off, uint32(u))
		case 8:
			ob.SetUint64(off, u)
		}
	}
	return nil
}

// element appends the bytes of one list element of type t (without its
// size word) to buf: scalars little-endian at their width, text and bytes
// as they are, bytes_fixed its N bytes, a struct a whole message, a list
// its elements ([u32 size][bytes] each). depth is that of the record
// holding the list: a record element is one deeper, however deep the lists
// nest, as AppendJSON counts.
func (e *encoder) element(buf []byte, t *schema.Type, v any, depth int) ([]byte, error) {
	switch t.Kind {
	case schema.KindStruct:
		obj, ok := v.(map[string]any)
		if !ok {
			return buf, e.errorf("want an object for %s, got %s", t.Struct.Name, encKind(v))
		}
		return e.message(buf, t.Struct, obj, depth+1)
	case schema.KindText:
		s, ok := v.(string)
		if !ok {
			return buf, e.errorf("want a string for text, got %s", encKind(v))
		}
		return append(buf, s...), nil
	case schema.KindBytes, schema.KindBytesFixed:
		n := -1
		if t.Kind == schema.KindBytesFixed {
			n = t.N
		}
		p, err := e.hexValue(v, n)
		if err != nil {
			return buf, err
		}
		return append(buf, p...), nil
	case schema.KindList:
		var arr []any
		if v != nil {
			var ok bool
			if arr, ok = v.([]any); !ok {
				return buf, e.errorf("want an array for %s, got %s", t, encKind(v))
			}
		}
		for i, x := range arr {
			e.push("[" + strconv.Itoa(i) + "]")
			var at int
			buf, at = codec.StartElement(buf)
			var err error
			if buf, err = e.element(buf, t.Elem, x, depth); err != nil {
				return buf, err
			}
			codec.FinishElement(buf, at)
			e.pop()
		}
		return buf, nil
	}
	u, err := e.scalar(t.Kind, v)
	if err != nil {
		return buf, err
	}
	switch t.Kind.Width() {
	case 1:
		return append(buf, uint8(u)), nil
	case 2:
		return binary.LittleEndian.AppendUint16(buf, uint16(u)), nil
	case 4:
		return binary.LittleEndian.AppendUint32(buf, uint32(u)), nil
	}
	return binary.LittleEndian.AppendUint64(buf, u), nil
}

// hexValue decodes a hex string; n >= 0 requires exactly n bytes.
func (e *encoder) hexValue(v any, n int) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, e.errorf("want a hex string, got %s", encKind(v))
	}
	h := s
	if len(h) >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		h = h[2:] // one prefix: "0x0Xab" is not hex
	}
	p, err := hex.DecodeString(h)
	if err != nil {
		return nil, e.errorf("bad hex %q: %v", encShort(s), err)
	}
	if n >= 0 && len(p) != n {
		return nil, e.errorf("want %d bytes (%d hex digits), got %d", n, 2*n, len(p))
	}
	return p, nil
}

// scalar returns the wire bits of v as a value of kind k.
func (e *encoder) scalar(k schema.Kind, v any) (uint64, error) {
	if k == schema.KindBool {
		bv, ok := v.(bool)
		if !ok {
			return 0, e.errorf("want true or false, got %s", encKind(v))
		}
		if bv {
			return 1, nil
		}
		return 0, nil
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = x
	default:
		return 0, e.errorf("want a number for %s, got %s", k, encKind(v))
	}
	bits := k.Width() * 8
	switch k {
	case schema.KindF32, schema.KindF64:
		var f float64
		switch text {
		case "NaN":
			f = math.NaN()
		case "+Inf", "Inf":
			f = math.Inf(1)
		case "-Inf":
			f = math.Inf(-1)
		default:
			var err error
			if strings.Trim(text, "0123456789+-.eE") != "" {
				// strconv's other forms ("inf", "nan", hex with "p"
				// exponents and underscores) are no JSON number.
				return 0, e.errorf("bad %s %q: not a decimal number", k, encShort(text))
			}
			if f, err = strconv.ParseFloat(text, bits); err != nil {
				return 0, e.errorf("bad %s %q: %v", k, encShort(text), encNumErr(err))
			}
		}
		if k == schema.KindF32 {
			return uint64(math.Float32bits(float32(f))), nil
		}
		return math.Float64bits(f), nil
	case schema.KindU8, schema.KindU16, schema.KindU32, schema.KindU64:
		digits, base := encIntBase(text)
		u, err := strconv.ParseUint(digits, base, bits)
		if err != nil {
			return 0, e.errorf("bad %s %q: %v", k, encShort(text), encNumErr(err))
		}
		return u, nil
	}
	digits, base := encIntBase(text)
	i, err := strconv.ParseInt(digits, base, bits)
	if err != nil {
		return 0, e.errorf("bad %s %q: %v", k, encShort(text), encNumErr(err))
	}
	return uint64(i), nil // two's complement; the setter keeps the low bytes
}

// encIntBase returns the digits and base of an integer's text: hex after
// "0x" or "0X" (and an optional "-"), decimal otherwise, so that a leading
// zero is not octal ("010" is ten) and strconv's other prefixes ("0b",
// "0o") and underscores are refused.
func encIntBase(text string) (string, int) {
	sign, rest := "", text
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	if len(rest) > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') && rest[2] != '-' && rest[2] != '+' {
		return sign + rest[2:], 16
	}
	return text, 10
}

// encNumErr drops strconv's repetition of the input from its error.
func encNumErr(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

func encShort(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// encKind names the JSON type of a decoded value.
func encKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
