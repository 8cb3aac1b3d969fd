package check

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// The differential checks: three readers of the same bytes (DecodeZAP into
// a record, the generated view, dynamic.AppendJSON) and three writers of
// the same values (AppendZAP, dynamic.AppendMessage from the record's JSON,
// and a codec.Builder driven by the schema, written here apart from both)
// must agree. Each side is turned into the JSON AppendJSON prints, by code
// of this file that follows only the schema: a record through its fields, a
// view through its accessors.

// Structs parses schemaFile and returns its struct of each name in types.
func Structs(tb testing.TB, schemaFile string, types map[string]Type) map[string]*schema.Struct {
	tb.Helper()
	src, err := os.ReadFile(schemaFile)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := schema.Parse(filepath.Base(schemaFile), src)
	if err != nil {
		tb.Fatal(err)
	}
	structs := map[string]*schema.Struct{}
	for name := range types {
		st := f.Struct(name)
		if st == nil {
			tb.Fatalf("%s has no struct %s", schemaFile, name)
		}
		structs[name] = st
	}
	return structs
}

// goField returns the field of record struct v that holds schema field i
// of st: generated records declare their fields in schema order.
func goField(v reflect.Value, st *schema.Struct, i int) (reflect.Value, string) {
	if v.NumField() != len(st.Fields) {
		panic(fmt.Sprintf("%s has %d fields, schema struct %s %d", v.Type(), v.NumField(), st.Name, len(st.Fields)))
	}
	return v.Field(i), v.Type().Field(i).Name
}

// RecordJSON appends record rec (a pointer to a generated record of st) as
// dynamic.AppendJSON prints the message holding it. Text that is not UTF-8
// is printed with its bad bytes as \ufffd escapes, which AppendJSON never
// writes (it refuses such text).
func RecordJSON(dst []byte, rec any, st *schema.Struct) []byte {
	return recordJSON(dst, reflect.ValueOf(rec).Elem(), st)
}

func recordJSON(dst []byte, v reflect.Value, st *schema.Struct) []byte {
	dst = append(dst, '{')
	for i, f := range st.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonString(dst, f.Name)
		dst = append(dst, ':')
		fv, _ := goField(v, st, i)
		dst = recordValue(dst, fv, f.Type)
	}
	return append(dst, '}')
}

func recordValue(dst []byte, v reflect.Value, t *schema.Type) []byte {
	switch t.Kind {
	case schema.KindStruct:
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return append(dst, "null"...)
			}
			v = v.Elem()
		}
		return recordJSON(dst, v, t.Struct)
	case schema.KindList:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = recordValue(dst, v.Index(i), t.Elem)
		}
		return append(dst, ']')
	case schema.KindText:
		return jsonString(dst, v.String())
	case schema.KindBytes:
		return jsonHex(dst, v.Bytes())
	case schema.KindBytesFixed:
		b := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(b), v)
		return jsonHex(dst, b)
	}
	return scalarJSON(dst, v, t.Kind)
}

// ViewJSON appends what view (a generated TView of st) shows, read through
// its accessors, as RecordJSON prints a record. The root is printed as an
// object even when null (its reads are all zero), as DecodeZAP fills a
// record from it. The view must be of a message DecodeZAP decodes without
// error: a cyclic one would print without end.
func ViewJSON(dst []byte, view any, st *schema.Struct, rec any) []byte {
	return viewJSON(dst, reflect.ValueOf(view), st, reflect.ValueOf(rec).Elem().Type())
}

// viewJSON prints view v of st; typ is the record type of st, which names
// the accessors.
func viewJSON(dst []byte, v reflect.Value, st *schema.Struct, typ reflect.Type) []byte {
	dst = append(dst, '{')
	for i, f := range st.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonString(dst, f.Name)
		dst = append(dst, ':')
		name := typ.Field(i).Name
		if !hasMethod(v, name) {
			name += "Field" // a name go vet checks the signature of (gen renames it so)
		}
		dst = viewValue(dst, call(v, name), f.Type, typ.Field(i).Type)
	}
	return append(dst, '}')
}

// hasMethod reports whether a value of v's type, or a pointer to one, has
// the method.
func hasMethod(v reflect.Value, name string) bool {
	_, ok := reflect.PointerTo(v.Type()).MethodByName(name)
	return ok
}

// viewValue prints x, what an accessor returned for a value of type t;
// typ is the record's Go type for it.
func viewValue(dst []byte, x reflect.Value, t *schema.Type, typ reflect.Type) []byte {
	switch t.Kind {
	case schema.KindStruct:
		if call(x, "IsNull").Bool() {
			return append(dst, "null"...)
		}
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		return viewJSON(dst, x, t.Struct, typ)
	case schema.KindList:
		dst = append(dst, '[')
		n := int(call(x, "Len").Int())
		for i := range n {
			if i > 0 {
				dst = append(dst, ',')
			}
			e := call(x, "At", reflect.ValueOf(i))
			if t.Elem.Kind == schema.KindStruct {
				// An element is a value, never null: a null element view
				// (a message whose root does not fit) reads all zero.
				dst = viewJSON(dst, e, t.Elem.Struct, typ.Elem())
				continue
			}
			dst = viewValue(dst, e, t.Elem, typ.Elem())
		}
		return append(dst, ']')
	case schema.KindText:
		return jsonString(dst, x.String())
	case schema.KindBytes:
		return jsonHex(dst, x.Bytes())
	case schema.KindBytesFixed:
		if x.Kind() == reflect.Slice {
			return jsonHex(dst, x.Bytes())
		}
		b := make([]byte, x.Len())
		reflect.Copy(reflect.ValueOf(b), x)
		return jsonHex(dst, b)
	}
	return scalarJSON(dst, x, t.Kind)
}

// scalarJSON prints a Go scalar of schema kind k: integers in decimal,
// floats as the shortest number of their width that reads back the same,
// or "NaN", "+Inf", "-Inf".
func scalarJSON(dst []byte, v reflect.Value, k schema.Kind) []byte {
	switch k {
	case schema.KindBool:
		return strconv.AppendBool(dst, v.Bool())
	case schema.KindU8, schema.KindU16, schema.KindU32, schema.KindU64:
		return strconv.AppendUint(dst, v.Uint(), 10)
	case schema.KindI8, schema.KindI16, schema.KindI32, schema.KindI64:
		return strconv.AppendInt(dst, v.Int(), 10)
	case schema.KindF32, schema.KindF64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			return append(dst, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(dst, `"+Inf"`...)
		case math.IsInf(f, -1):
			return append(dst, `"-Inf"`...)
		}
		bits := 64
		if k == schema.KindF32 {
			bits = 32
		}
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	panic("check: no scalar kind " + k.String())
}

func jsonHex(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, b)
	return append(dst, '"')
}

// jsonString prints s as a JSON string the way AppendJSON does: quote and
// backslash escaped, \n \r \t, other control characters and DEL as \u00XX,
// the rest as is; a byte that is not UTF-8 as \ufffd.
func jsonString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c < 0x20 || c == 0x7f:
			dst = fmt.Appendf(dst, `\u%04x`, c)
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// BuilderEncode writes record rec (a pointer to a generated record of st)
// through codec.Builder, following only the schema: fields in declaration
// order, a nested struct built while its parent is open, every list a
// variable-element list whose struct elements are messages built apart,
// text and bytes left to the Builder's tails. It is the third writer that
// AppendZAP and dynamic.AppendMessage must agree with.
func BuilderEncode(dst []byte, rec any, st *schema.Struct) []byte {
	var b codec.Builder
	b.Reset(dst)
	b.SetRoot(builderObject(&b, reflect.ValueOf(rec).Elem(), st))
	out := b.Finish()
	if err := b.Err(); err != nil {
		panic(err)
	}
	return out
}

func builderObject(b *codec.Builder, v reflect.Value, st *schema.Struct) codec.Ref {
	o := b.StartObject(st.Size)
	for i, f := range st.Fields {
		fv, _ := goField(v, st, i)
		at := f.Offset
		switch f.Type.Kind {
		case schema.KindBool:
			o.SetBool(at, fv.Bool())
		case schema.KindU8:
			o.SetUint8(at, uint8(fv.Uint()))
		case schema.KindI8:
			o.SetInt8(at, int8(fv.Int()))
		case schema.KindU16:
			o.SetUint16(at, uint16(fv.Uint()))
		case schema.KindI16:
			o.SetInt16(at, int16(fv.Int()))
		case schema.KindU32:
			o.SetUint32(at, uint32(fv.Uint()))
		case schema.KindI32:
			o.SetInt32(at, int32(fv.Int()))
		case schema.KindU64:
			o.SetUint64(at, fv.Uint())
		case schema.KindI64:
			o.SetInt64(at, fv.Int())
		case schema.KindF32:
			o.SetFloat32(at, float32(fv.Float()))
		case schema.KindF64:
			o.SetFloat64(at, fv.Float())
		case schema.KindText:
			o.SetText(at, fv.String())
		case schema.KindBytes:
			o.SetBytes(at, fv.Bytes())
		case schema.KindBytesFixed:
			p := make([]byte, fv.Len())
			reflect.Copy(reflect.ValueOf(p), fv)
			o.SetBytesFixed(at, p)
		case schema.KindStruct:
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			o.SetObject(at, builderObject(b, fv, f.Type.Struct))
		case schema.KindList:
			l := b.StartList(0)
			for j := range fv.Len() {
				l.AddMessage(elementBytes(nil, fv.Index(j), f.Type.Elem))
			}
			o.SetList(at, l.Finish())
		}
	}
	return o.Finish()
}

// elementBytes appends the bytes of list element v of type t, without its
// size word.
func elementBytes(dst []byte, v reflect.Value, t *schema.Type) []byte {
	switch t.Kind {
	case schema.KindStruct:
		return BuilderEncode(dst, v.Addr().Interface(), t.Struct)
	case schema.KindList:
		for j := range v.Len() {
			e := elementBytes(nil, v.Index(j), t.Elem)
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e)))
			dst = append(dst, e...)
		}
		return dst
	case schema.KindText:
		return append(dst, v.String()...)
	case schema.KindBytes:
		return append(dst, v.Bytes()...)
	case schema.KindBytesFixed:
		p := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(p), v)
		return append(dst, p...)
	case schema.KindBool:
		if v.Bool() {
			return append(dst, 1)
		}
		return append(dst, 0)
	case schema.KindU8, schema.KindI8:
		return append(dst, byte(intBits(v)))
	case schema.KindU16, schema.KindI16:
		return binary.LittleEndian.AppendUint16(dst, uint16(intBits(v)))
	case schema.KindU32, schema.KindI32:
		return binary.LittleEndian.AppendUint32(dst, uint32(intBits(v)))
	case schema.KindU64, schema.KindI64:
		return binary.LittleEndian.AppendUint64(dst, intBits(v))
	case schema.KindF32:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(v.Float())))
	case schema.KindF64:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float()))
	}
	panic("check: no element kind " + t.Kind.String())
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func intBits(v reflect.Value) uint64 {
	if v.CanUint() {
		return v.Uint()
	}
	return uint64(v.Int())
}

// DiffRead checks the three readers on b, arbitrary bytes, for every type:
// what dynamic.AppendJSON prints, DecodeZAP decodes to a record that prints
// the same; what DecodeZAP decodes, the view shows field by field alike
// (its accessors are total: nothing panics, the same null and zero
// decisions); and what dynamic read, dynamic.AppendMessage writes as a
// message that DecodeZAP reads as the same JSON and AppendZAP writes
// again byte for byte. It returns a description of the first
// disagreement, or "". DecodeZAP into a record holding random values
// must give what it gives into a new one.
func DiffRead(b []byte, types map[string]Type, structs map[string]*schema.Struct) string {
	for name, typ := range types {
		st := structs[name]
		js, jerr := dynamic.AppendJSON(nil, st, b)
		rec := typ.New()
		derr := rec.DecodeZAP(b)
		v, verr := typ.Read(b)
		if derr == nil && verr != nil {
			return fmt.Sprintf("%s: DecodeZAP error %v, Read error %v", name, derr, verr)
		}
		if jerr == nil && derr != nil {
			return fmt.Sprintf("%s: dynamic.AppendJSON reads %s, DecodeZAP fails: %v", name, js, derr)
		}
		if derr != nil {
			continue
		}
		// Decoding into a record that holds other values, whose strings,
		// slices and nested records DecodeZAP reuses, gives the same.
		stale := RandomRecord(rand.New(rand.NewPCG(uint64(len(b)), 3)), typ)
		if err := stale.DecodeZAP(b); err != nil {
			return fmt.Sprintf("%s: DecodeZAP into a fresh record succeeds, into a used one fails: %v", name, err)
		}
		if d := Equal(rec, stale); d != "" {
			return fmt.Sprintf("%s: DecodeZAP into a fresh record and into a used one differ: %s", name, d)
		}
		got := RecordJSON(nil, rec, st)
		if jerr == nil && !bytes.Equal(got, js) {
			return fmt.Sprintf("%s: dynamic.AppendJSON reads\n%s\nDecodeZAP\n%s", name, js, got)
		}
		if jerr == nil {
			if d := Oracle(js, rec, st); d != "" {
				return fmt.Sprintf("%s: encoding/json reads dynamic.AppendJSON's output otherwise than DecodeZAP: %s", name, d)
			}
		}
		if jerr == nil {
			// What dynamic read, it writes again as AppendZAP writes the
			// record, and that reads back as the same JSON (bools and NaNs
			// become canonical on the way, which JSON does not show).
			m2, err := dynamic.AppendMessage(nil, st, js)
			if err != nil {
				return fmt.Sprintf("%s: dynamic.AppendMessage of what dynamic.AppendJSON read: %v\n%s", name, err, js)
			}
			rec2 := typ.New()
			if err := rec2.DecodeZAP(m2); err != nil {
				return fmt.Sprintf("%s: DecodeZAP of dynamic.AppendMessage's message: %v\n%x", name, err, m2)
			}
			if m3 := rec2.AppendZAP(nil); !bytes.Equal(m2, m3) {
				return fmt.Sprintf("%s: dynamic.AppendMessage of what AppendJSON read\n%x\nAppendZAP of it decoded\n%x", name, m2, m3)
			}
			if js2 := RecordJSON(nil, rec2, st); !bytes.Equal(js2, js) {
				return fmt.Sprintf("%s: DecodeZAP of dynamic.AppendMessage's message reads\n%s\nnot\n%s", name, js2, js)
			}
			if js2, err := dynamic.AppendJSON(nil, st, m2); err != nil || !bytes.Equal(js2, js) {
				return fmt.Sprintf("%s: dynamic.AppendJSON of its own message reads\n%s (%v)\nnot\n%s", name, js2, err, js)
			}
		}
		if vj := ViewJSON(nil, v, st, rec); !bytes.Equal(vj, got) {
			return fmt.Sprintf("%s: the view shows\n%s\nDecodeZAP\n%s", name, vj, got)
		}
		if d := ViewLoose(rec, v); d != "" {
			return fmt.Sprintf("%s: the view and the record differ: %s", name, d)
		}
	}
	return ""
}

// DiffWrite checks the three writers and the three readers on record rec
// of struct st, a generated record with valid UTF-8 text: AppendZAP,
// dynamic.AppendMessage of its JSON and BuilderEncode write the same bytes,
// SizeZAP of them; DecodeZAP gives rec back, the view shows it, and
// dynamic.AppendJSON prints its JSON. It returns a description of the first
// disagreement, or "".
func DiffWrite(rec Record, typ Type, st *schema.Struct) string {
	js := RecordJSON(nil, rec, st)
	msg := rec.AppendZAP(nil)
	if n := rec.SizeZAP(); n != len(msg) {
		return fmt.Sprintf("SizeZAP %d, AppendZAP wrote %d", n, len(msg))
	}
	dyn, err := dynamic.AppendMessage(nil, st, js)
	if err != nil {
		return fmt.Sprintf("dynamic.AppendMessage: %v\n%s", err, js)
	}
	if !bytes.Equal(dyn, msg) {
		return fmt.Sprintf("AppendZAP and dynamic.AppendMessage differ\n got %x\nwant %x\n%s", msg, dyn, js)
	}
	if bld := BuilderEncode(nil, rec, st); !bytes.Equal(bld, msg) {
		return fmt.Sprintf("AppendZAP and the Builder differ\n got %x\nwant %x\n%s", msg, bld, js)
	}
	// After a prefix, which no offset or padding inside the message counts.
	prefix := []byte("0123456789abcdef")[:len(js)%16]
	for w, out := range map[string][]byte{
		"AppendZAP":             rec.AppendZAP(bytes.Clone(prefix)),
		"dynamic.AppendMessage": must(dynamic.AppendMessage(bytes.Clone(prefix), st, js)),
		"the Builder":           BuilderEncode(bytes.Clone(prefix), rec, st),
	} {
		if !bytes.Equal(out[:min(len(prefix), len(out))], prefix) || !bytes.Equal(out[len(prefix):], msg) {
			return fmt.Sprintf("%s after a %d-byte prefix\n got %x\nwant %x%x", w, len(prefix), out, prefix, msg)
		}
	}
	back := reflect.New(reflect.TypeOf(rec).Elem()).Interface().(Record)
	if err := back.DecodeZAP(msg); err != nil {
		return fmt.Sprintf("DecodeZAP: %v\n%x", err, msg)
	}
	if d := Equal(rec, back); d != "" {
		return fmt.Sprintf("DecodeZAP(AppendZAP): %s\n%x", d, msg)
	}
	v, err := typ.Read(msg)
	if err != nil {
		return fmt.Sprintf("Read: %v", err)
	}
	if vj := ViewJSON(nil, v, st, rec); !bytes.Equal(vj, js) {
		return fmt.Sprintf("the view shows\n%s\nthe record is\n%s", vj, js)
	}
	if d := View(rec, v); d != "" {
		return fmt.Sprintf("view: %s", d)
	}
	got, err := dynamic.AppendJSON(nil, st, msg)
	if err != nil {
		return fmt.Sprintf("dynamic.AppendJSON: %v\n%x", err, msg)
	}
	if !bytes.Equal(got, js) {
		return fmt.Sprintf("dynamic.AppendJSON reads\n%s\nthe record is\n%s", got, js)
	}
	if d := Oracle(got, rec, st); d != "" {
		return fmt.Sprintf("encoding/json reads dynamic.AppendJSON's output otherwise than the record: %s", d)
	}
	return ""
}

// RandomRecord returns a random record of typ (Randomize) with valid UTF-8
// text, as JSON carries it.
func RandomRecord(r *rand.Rand, typ Type) Record {
	rec := typ.New()
	Randomize(r, rec)
	validText(reflect.ValueOf(rec).Elem())
	return rec
}

// FuzzRead is the fuzz target of DiffRead. The corpus starts with 4 random
// records of each type (seeded with seed), the canonical bytes of the
// generated.json and generated-lists.json cases of the schema (by file
// name), and the messages of seeds.
func FuzzRead(f *testing.F, schemaFile string, seed uint64, types map[string]Type, seeds ...[]byte) {
	structs := Structs(f, schemaFile, types)
	r := rand.New(rand.NewPCG(seed, seed))
	for _, typ := range types {
		for range 4 {
			f.Add(RandomRecord(r, typ).AppendZAP(nil))
		}
	}
	for _, c := range Generated(f) {
		if c.Schema == filepath.Base(schemaFile) {
			b, err := hex.DecodeString(c.Hex)
			if err != nil {
				f.Fatalf("%s: %v", c.Name, err)
			}
			f.Add(b)
		}
	}
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if d := DiffRead(b, types, structs); d != "" {
			t.Fatalf("%s\ninput %x", d, b)
		}
	})
}

// FuzzWrite is the fuzz target of DiffWrite: its input seeds the random
// records, one of each type.
func FuzzWrite(f *testing.F, schemaFile string, types map[string]Type) {
	structs := Structs(f, schemaFile, types)
	for i := range uint64(8) {
		f.Add(i, i*7+1)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		for name, typ := range types {
			r := rand.New(rand.NewPCG(s1, s2))
			rec := RandomRecord(r, typ)
			if d := DiffWrite(rec, typ, structs[name]); d != "" {
				t.Fatalf("%s (seed %d, %d): %s", name, s1, s2, d)
			}
		}
	})
}

// Writers runs DiffWrite on n random records of every type (seeded), the
// zero record first, then records whose floats are all one of a few edge
// values (-0, the smallest subnormals, the largest finite, infinities).
func Writers(t *testing.T, schemaFile string, seed uint64, n int, types map[string]Type) {
	structs := Structs(t, schemaFile, types)
	for name, typ := range types {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			for i := range max(n/raceDivisor, 1) {
				rec := typ.New()
				if i > 0 {
					rec = RandomRecord(r, typ)
				}
				if i%4 == 3 {
					setFloats(reflect.ValueOf(rec).Elem(), edgeFloats[i/4%len(edgeFloats)])
				}
				if d := DiffWrite(rec, typ, structs[name]); d != "" {
					t.Fatalf("#%d: %s", i, d)
				}
			}
		})
	}
}

var edgeFloats = []float64{math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat32,
	-math.MaxFloat32, math.MaxFloat64, math.Inf(1), math.Inf(-1), 1e21, 1e-7, 0.1}

// setFloats sets every float in v, however deep, to x (a float32 to x
// rounded to 32 bits).
func setFloats(v reflect.Value, x float64) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		v.SetFloat(x)
		if v.Kind() == reflect.Float32 {
			v.SetFloat(float64(float32(x)))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			setFloats(v.Elem(), x)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			setFloats(v.Field(i), x)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			setFloats(v.Index(i), x)
		}
	}
}

// FuzzReadEdits is DiffRead over messages of random records (one of each
// type, seeded by the input) with a few bytes set: edits holds 3 bytes an
// edit, a position (16 bits, little-endian, taken modulo the message's
// length) and the value. Raw bytes seldom make a message that package
// dynamic, which reads strictly, takes whole; these mostly do. The
// records are of the types in writers, those of types when it is nil
// (another version of the schema, say).
func FuzzReadEdits(f *testing.F, schemaFile string, types, writers map[string]Type) {
	if writers == nil {
		writers = types
	}
	structs := Structs(f, schemaFile, types)
	for i := range uint64(8) {
		f.Add(i, []byte{byte(i * 37), byte(i), byte(i * 101)})
	}
	f.Fuzz(func(t *testing.T, seed uint64, edits []byte) {
		r := rand.New(rand.NewPCG(seed, seed>>32))
		for name, typ := range writers {
			msg := RandomRecord(r, typ).AppendZAP(nil)
			for e := edits; len(e) >= 3 && len(msg) > 0; e = e[3:] {
				msg[int(binary.LittleEndian.Uint16(e))%len(msg)] = e[2]
			}
			if d := DiffRead(msg, types, structs); d != "" {
				t.Fatalf("%s (seed %d): %s\ninput %x", name, seed, d, msg)
			}
		}
	})
}
