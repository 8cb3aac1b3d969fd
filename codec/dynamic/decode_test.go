package dynamic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// decTestSchema covers every field kind and every list element kind.
const decTestSchema = `
package t

struct Inner {
    Tag  u32  @0
    Name text @4
}

struct All {
    Flag   bool        @0
    U8     u8          @1
    U16    u16         @2
    U32    u32         @4
    U64    u64         @8
    I8     i8          @16
    I16    i16         @18
    I32    i32         @20
    I64    i64         @24
    F32    f32         @32
    F64    f64         @36
    Text   text        @44
    Blob   bytes       @52
    Fixed  bytes_fixed[3] @60
    Child  Inner       @63
    None   Inner       @67
    U32s   list<u32>   @71
    Bools  list<bool>  @79
    F64s   list<f64>   @87
    Texts  list<text>  @95
    Blobs  list<bytes> @103
    Items  list<Inner> @111
    Empty  list<u64>   @119
    Quads  list<bytes_fixed[2]> @127
    Grid   list<list<u16>> @135
}

struct Node {
    Next Node @0
}

struct Tree {
    Left  Tree @0
    Right Tree @4
    Data  bytes_fixed[256] @8
}
`

func decParseSchema(t testing.TB) *schema.File {
	t.Helper()
	f, err := schema.Parse("t.zap", []byte(decTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// decInner builds one whole Inner message.
func decInner(tag uint32, name string) []byte {
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(12)
	o.SetUint32(0, tag)
	o.SetText(4, name)
	b.SetRoot(o.Finish())
	return b.Finish()
}

// decAllMessage builds an All record by hand with package codec.
func decAllMessage(t testing.TB) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	child := b.StartObject(12)
	child.SetUint32(0, 77)
	child.SetText(4, "kid")
	childRef := child.Finish()
	o := b.StartObject(143)
	o.SetBool(0, true)
	o.SetUint8(1, 200)
	o.SetUint16(2, 65535)
	o.SetUint32(4, 4000000000)
	o.SetUint64(8, math.MaxUint64)
	o.SetInt8(16, -128)
	o.SetInt16(18, -300)
	o.SetInt32(20, -70000)
	o.SetInt64(24, math.MinInt64)
	o.SetFloat32(32, 0.5)
	o.SetFloat64(36, math.Inf(-1))
	o.SetText(44, "quote\" tab\t ü \x01")
	o.SetBytes(52, []byte{0xde, 0xad})
	o.SetBytesFixed(60, []byte{1, 2, 3})
	o.SetObject(63, childRef)
	// Every list is a variable-element list: [u32 size][bytes] per element.
	l := b.StartList(0)
	l.AddUint32Element(1)
	l.AddUint32Element(4294967295)
	o.SetList(71, l.Finish())
	l = b.StartList(0)
	l.AddUint8Element(1)
	l.AddUint8Element(0)
	l.AddUint8Element(7)
	o.SetList(79, l.Finish())
	l = b.StartList(0)
	l.AddUint64Element(math.Float64bits(2.75))
	l.AddUint64Element(math.Float64bits(math.NaN()))
	o.SetList(87, l.Finish())
	l = b.StartList(0)
	l.AddMessage([]byte("a"))
	l.AddMessage([]byte(""))
	l.AddMessage([]byte("日本"))
	o.SetList(95, l.Finish())
	l = b.StartList(0)
	l.AddMessage([]byte{0, 0xff})
	o.SetList(103, l.Finish())
	l = b.StartList(0)
	l.AddMessage(decInner(1, "first"))
	l.AddMessage(decInner(2, ""))
	o.SetList(111, l.Finish())
	l = b.StartList(0)
	l.Finish() // Empty: started, nothing added
	l = b.StartList(0)
	l.AddMessage([]byte{0xab, 0xcd})
	o.SetList(127, l.Finish())
	l = b.StartList(0)
	buf := l.BeginElement() // [[1, 2], [], [3]]
	buf = codec.AppendUint16Element(buf, 1)
	buf = codec.AppendUint16Element(buf, 2)
	l.EndElement(buf)
	l.EndElement(l.BeginElement())
	l.EndElement(codec.AppendUint16Element(l.BeginElement(), 3))
	o.SetList(135, l.Finish())
	b.SetRoot(o.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(msg)
}

const decAllJSON = `{"Flag":true,"U8":200,"U16":65535,"U32":4000000000,"U64":18446744073709551615,` +
	`"I8":-128,"I16":-300,"I32":-70000,"I64":-9223372036854775808,"F32":0.5,"F64":"-Inf",` +
	`"Text":"quote\" tab\t ü \u0001","Blob":"dead","Fixed":"010203","Child":{"Tag":77,"Name":"kid"},` +
	`"None":null,"U32s":[1,4294967295],"Bools":[true,false,true],"F64s":[2.75,"NaN"],` +
	`"Texts":["a","","日本"],"Blobs":["00ff"],"Items":[{"Tag":1,"Name":"first"},{"Tag":2,"Name":""}],"Empty":[],` +
	`"Quads":["abcd"],"Grid":[[1,2],[],[3]]}`

func TestAppendJSONAllKinds(t *testing.T) {
	f := decParseSchema(t)
	msg := decAllMessage(t)
	got, err := AppendJSON([]byte("prefix:"), f.Struct("All"), msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "prefix:" + decAllJSON; string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got[len("prefix:"):]) {
		t.Fatal("output is not valid JSON")
	}
}

// TestAppendJSONGenerated decodes the bytes the canonical generated
// constructors wrote (generated.json) and compares every field with the
// values they were given.
func TestAppendJSONGenerated(t *testing.T) {
	cases, byName, parse := generatedCases(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f := parse(t, c.Schema)
			s := f.Struct(c.Struct)
			msg, err := hex.DecodeString(c.Hex)
			if err != nil {
				t.Fatal(err)
			}
			out, err := AppendJSON(nil, s, msg)
			if err != nil {
				t.Fatal(err)
			}
			decCheckValues(t, out, s, c.Values, byName)
		})
	}
	if len(cases) == 0 {
		t.Fatal("generated.json has no cases")
	}
}

// decCheckValues compares decoded JSON with a generated.json values map
// (integers as decimal strings, bytes as hex, list<Item> as case names).
func decCheckValues(t *testing.T, out []byte, s *schema.Struct, values map[string]any, byName map[string]map[string]any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var got map[string]any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(got) != len(s.Fields) {
		t.Fatalf("%s: %d keys, struct has %d fields", out, len(got), len(s.Fields))
	}
	for _, fl := range s.Fields {
		g, ok := got[fl.Name]
		if !ok {
			t.Fatalf("field %s missing in %s", fl.Name, out)
		}
		want, given := values[fl.Name]
		switch k := fl.Type.Kind; {
		case k == schema.KindBool:
			if g != (given && want == true) {
				t.Errorf("%s = %v, want %v", fl.Name, g, want)
			}
		case k == schema.KindF32 || k == schema.KindF64:
			w := 0.0
			if given {
				w = want.(float64)
			}
			if gf, err := g.(json.Number).Float64(); err != nil || gf != w {
				t.Errorf("%s = %v, want %v", fl.Name, g, w)
			}
		case k.Scalar():
			w := "0"
			if given {
				w = want.(string)
			}
			if g.(json.Number).String() != w {
				t.Errorf("%s = %v, want %s", fl.Name, g, w)
			}
		case k == schema.KindText || k == schema.KindBytes:
			w := ""
			if given {
				w = want.(string)
			}
			if g != w {
				t.Errorf("%s = %q, want %q", fl.Name, g, w)
			}
		case k == schema.KindBytesFixed:
			w := strings.Repeat("00", fl.Type.N)
			if given {
				w = want.(string)
			}
			if g != w {
				t.Errorf("%s = %q, want %q", fl.Name, g, w)
			}
		case k == schema.KindStruct:
			if !given || caseName(want) == "" {
				if g != nil {
					t.Errorf("%s = %v, want null", fl.Name, g)
				}
				continue
			}
			b, _ := json.Marshal(g)
			decCheckValues(t, b, fl.Type.Struct, byName[caseName(want)], byName)
		case k == schema.KindList:
			var wants []any
			if given {
				wants = want.([]any)
			}
			elems := g.([]any)
			if len(elems) != len(wants) {
				t.Fatalf("%s has %d elements, want %d", fl.Name, len(elems), len(wants))
			}
			for i, e := range elems {
				if el := fl.Type.Elem; el.Kind == schema.KindStruct {
					b, _ := json.Marshal(e)
					decCheckValues(t, b, el.Struct, byName[caseName(wants[i])], byName)
				} else if !decSameValue(e, wants[i], el.Kind) {
					t.Errorf("%s[%d] = %v, want %v", fl.Name, i, e, wants[i])
				}
			}
		default:
			t.Fatalf("field %s: kind %s not covered by the fixture check", fl.Name, k)
		}
	}
}

// decListStart returns the position of the first element of the list whose
// slot is at absolute position slot of msg.
func decListStart(msg []byte, slot int) int {
	return slot + int(int32(binary.LittleEndian.Uint32(msg[slot:])))
}

// decFlatU32 is an All whose U32s is a flat list (4 bytes per element, no
// size words), as zapcodec wrote it before it followed the canonical
// compiler: it must not read as a list of u32.
func decFlatU32(t testing.TB) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	l := b.StartList(4)
	l.AddUint32(1)
	l.AddUint32(2)
	lr := l.Finish()
	o := b.StartObject(143)
	o.SetList(71, lr)
	b.SetRoot(o.Finish())
	return bytes.Clone(b.Finish())
}

// decSameValue compares a decoded JSON element with a fixture value:
// integers are decimal strings there, floats numbers, bytes hex.
func decSameValue(got, want any, k schema.Kind) bool {
	switch {
	case k == schema.KindBool:
		return got == want
	case k == schema.KindF32:
		g, err := strconv.ParseFloat(string(got.(json.Number)), 32)
		return err == nil && float32(g) == float32(want.(float64))
	case k == schema.KindF64:
		g, err := got.(json.Number).Float64()
		return err == nil && g == want.(float64)
	case k.Scalar():
		return got.(json.Number).String() == want
	}
	return got == want
}

// decPut returns a copy of msg with v written little-endian at off.
func decPut(msg []byte, off int, v uint32) []byte {
	m := bytes.Clone(msg)
	binary.LittleEndian.PutUint32(m[off:], v)
	return m
}

func TestAppendJSONErrors(t *testing.T) {
	f := decParseSchema(t)
	inner := decInner(5, "name")
	// inner: header 16, fixed section @16..28 (Tag @16, Name slot @20), tail @28.
	all := decAllMessage(t)
	allRoot := int(binary.LittleEndian.Uint32(all[8:]))

	// Two Nodes pointing at each other.
	var b2 codec.Builder
	b2.Reset(nil)
	first := b2.StartObject(4)
	firstRef := first.Finish()
	second := b2.StartObject(4)
	second.SetObject(0, firstRef)
	b2.SetRoot(second.Finish())
	loop := bytes.Clone(b2.Finish())
	// first is @16, second @24: make first point at second (rel +8).
	binary.LittleEndian.PutUint32(loop[16:], 8)

	tests := []struct {
		name   string
		msg    []byte
		typ    string
		offset int
		reason string
	}{
		{"empty", nil, "Inner", 0, "header truncated"},
		{"magic", append([]byte("ZAQ\x00"), inner[4:]...), "Inner", 2, "expected magic"}, // the first wrong byte
		{"short", inner[:11], "Inner", 11, "header truncated: need 16 bytes, have 11"},   // where it ends
		{"version", decPut(inner, 4, 3), "Inner", 4, "version 3"},
		{"size big", decPut(inner, 12, 1000), "Inner", 12, "size 1000"},
		{"size small", decPut(inner, 12, 8), "Inner", 12, "size 8"},
		{"root in header", decPut(inner, 8, 4), "Inner", 8, "root offset 4"},
		{"root past end", decPut(inner, 8, uint32(len(inner)+1)), "Inner", 8, "root offset"},
		{"root at end", decPut(inner, 8, uint32(len(inner))), "Inner", len(inner), "fixed section of Inner needs 12 bytes"},
		{"fixed section short", decPut(inner, 8, 24), "Inner", 24, "needs 12 bytes"},
		{"text past end", decPut(inner, 20, 100), "Inner", 20, "text slot"},
		{"text huge length", decPut(inner, 24, 0xffffffff), "Inner", 20, "outside the message"},
		{"text not utf8", append(inner[:len(inner)-2:len(inner)-2], 0xff, 'e'), "Inner", 30, "not valid UTF-8"},
		{"child outside", decPut(all, allRoot+63, 0x7fffffff), "All", allRoot + 63, "object slot"},
		{"list count", decPut(all, allRoot+71+4, 0xffffffff), "All", allRoot + 75, "list count"},
		{"list outside", decPut(all, allRoot+71, 0x80000000), "All", allRoot + 71, "list slot"},
		{"list long", decPut(all, allRoot+71+4, uint32(len(all)-2)), "All", -1, "element of 1 bytes, want 4"},
		{"flat list of u32", decFlatU32(t), "All", -1, "element of 1 bytes, want 4"},
		{"scalar element size", decPut(all, decListStart(all, allRoot+71), 8), "All", -1, "element of 8 bytes, want 4 for u32"},
		{"fixed element size", decPut(all, decListStart(all, allRoot+127), 1), "All", -1, "element of 1 bytes, want 2"},
		{"nested element overrun", decPut(all, decListStart(all, allRoot+135)+4, 100), "All", -1, "passes the end of the enclosing element"},
		{"cycle", loop, "Node", -1, "cyclic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AppendJSON(nil, f.Struct(tc.typ), tc.msg)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			if !strings.Contains(de.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", de.Reason, tc.reason)
			}
			if tc.offset >= 0 && de.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", de.Offset, tc.offset, err)
			}
			if !strings.HasPrefix(err.Error(), "dynamic: at byte ") {
				t.Errorf("error text %q", err)
			}
		})
	}
}

// TestAppendJSONElementOffsets checks that an error inside a list element
// names the offset in the outer message and the element's path.
func TestAppendJSONElementOffsets(t *testing.T) {
	f := decParseSchema(t)
	all := decAllMessage(t)
	// Find the second Inner element ("ZAP\x00" ... Tag 2) and break its version.
	first := bytes.Index(all, decInner(1, "first"))
	second := bytes.Index(all, decInner(2, ""))
	if first < 0 || second < 0 {
		t.Fatal("elements not found")
	}
	bad := decPut(all, second+4, 9)
	_, err := AppendJSON(nil, f.Struct("All"), bad)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	if de.Offset != second+4 || de.Path != "Items[1]" {
		t.Fatalf("got offset %d path %q, want %d Items[1] (%v)", de.Offset, de.Path, second+4, err)
	}
	bad = decPut(all, first+20, 1000) // element 0's Name slot
	_, err = AppendJSON(nil, f.Struct("All"), bad)
	if !errors.As(err, &de) || de.Offset != first+20 || de.Path != "Items[0].Name" {
		t.Fatalf("got %v", err)
	}
}

// TestAppendJSONSharedBudget points many text slots at one long value: the
// output must stay proportional to the input, so decoding fails instead.
func TestAppendJSONSharedBudget(t *testing.T) {
	var src strings.Builder
	src.WriteString("struct Wide\n")
	const n = 64
	for i := 0; i < n; i++ {
		src.WriteString("    F" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + " text\n")
	}
	f, err := schema.Parse("w.zap", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Structs[0]
	msg := make([]byte, 16+n*8+1024)
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], 1)
	binary.LittleEndian.PutUint32(msg[8:], 16)
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(msg)))
	for i := 0; i < n; i++ {
		slot := 16 + i*8
		binary.LittleEndian.PutUint32(msg[slot:], uint32(16+n*8-slot))
		binary.LittleEndian.PutUint32(msg[slot+4:], 1024)
	}
	for i := 16 + n*8; i < len(msg); i++ {
		msg[i] = 'a'
	}
	out, err := AppendJSON(nil, s, msg)
	if err == nil || !strings.Contains(err.Error(), "shared or cyclic") {
		t.Fatalf("err = %v (output %d bytes)", err, len(out))
	}
	if len(out) > 8*len(msg) {
		t.Fatalf("output %d bytes for a %d-byte message", len(out), len(msg))
	}
}

// decTree builds a message of k Tree records of the given fixed size
// (Left @0, Right @4, then bytes_fixed data), each pointing Left at the
// one built before it and, when shared, Right too: k objects, 2^k paths
// from the root.
func decTree(t testing.TB, k, size int, shared bool) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	var next codec.Ref
	for range k {
		o := b.StartObject(size)
		o.SetObject(0, next)
		if shared {
			o.SetObject(4, next)
		}
		next = o.Finish()
	}
	b.SetRoot(next)
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestAppendJSONSharedBytesFixed: a bytes_fixed field prints two hex
// digits per byte, so it is charged per byte, as bytes are. A tree whose
// records (with 1 KiB of bytes_fixed each) all point twice at the next
// one must fail instead of printing them once per path (it printed 14 MB
// from 13 KB); the same records in a chain, and a record of many
// one-byte bytes_fixed fields, decode.
func TestAppendJSONSharedBytesFixed(t *testing.T) {
	const tree = "struct Tree\n    Left  Tree\n    Right Tree\n    Data  bytes_fixed[1024]\n"
	var narrow strings.Builder
	narrow.WriteString("struct Tree\n")
	for i := range 500 {
		narrow.WriteString("    F" + strconv.Itoa(i) + " bytes_fixed[1]\n")
	}
	tests := []struct {
		name, schema string
		msg          []byte
		shared       bool // AppendJSON must fail
	}{
		{"shared", tree, decTree(t, 13, 1032, true), true},
		{"chain", tree, decTree(t, 13, 1032, false), false},
		{"one-byte fields", narrow.String(), decTree(t, 1, 500, false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := schema.Parse("t.zap", []byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			out, err := AppendJSON(nil, f.Struct("Tree"), tt.msg)
			if tt.shared != (err != nil) || err != nil && !strings.Contains(err.Error(), "shared or cyclic") {
				t.Fatalf("err = %v (output %d bytes)", err, len(out))
			}
			if tt.shared && len(out) > 8*len(tt.msg) {
				t.Fatalf("output %d bytes for a %d-byte message", len(out), len(tt.msg))
			}
		})
	}
}

// TestAppendJSONRoundTrip decodes the canonical generated records and
// encodes the JSON back with AppendMessage: the bytes must be the
// fixture's, byte for byte (both follow the generated layout).
func TestAppendJSONRoundTrip(t *testing.T) {
	cases, _, parse := generatedCases(t)
	for _, c := range cases {
		f := parse(t, c.Schema)
		msg, _ := hex.DecodeString(c.Hex)
		js, err := AppendJSON(nil, f.Struct(c.Struct), msg)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		back, err := AppendMessage(nil, f.Struct(c.Struct), js)
		if err != nil {
			t.Fatalf("%s: encoding %s: %v", c.Name, js, err)
		}
		if !bytes.Equal(back, msg) {
			t.Errorf("%s: round trip through %s\n got %x\nwant %x", c.Name, js, back, msg)
		}
	}
}

// TestAppendJSONRoundTripAllKinds does the same for the hand-built record
// with every field kind (NaN and -Inf as strings included).
func TestAppendJSONRoundTripAllKinds(t *testing.T) {
	f := decParseSchema(t)
	js := []byte(decAllJSON)
	msg, err := AppendMessage(nil, f.Struct("All"), js)
	if err != nil {
		t.Fatal(err)
	}
	again, err := AppendJSON(nil, f.Struct("All"), msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != decAllJSON {
		t.Fatalf("got\n%s\nwant\n%s", again, decAllJSON)
	}
}

// TestZeroSizeRoot: a struct of size 0 written last has root offset ==
// size, as the canonical runtime writes it (messages-more.json,
// zero_size_root: the bare header). It decodes as {} and AppendMessage's
// bytes for {} decode back; a non-empty struct read from it fails on its
// fixed section, not on the root offset.
func TestZeroSizeRoot(t *testing.T) {
	f, err := schema.Parse("e.zap", []byte("struct E {}\nstruct N { X u32 }\n"))
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := hex.DecodeString("5a415000010000001000000010000000")
	got, err := AppendJSON(nil, f.Struct("E"), canonical)
	if err != nil || string(got) != "{}" {
		t.Fatalf("canonical zero-size root: %s, %v", got, err)
	}
	built, err := AppendMessage(nil, f.Struct("E"), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := AppendJSON(nil, f.Struct("E"), built); err != nil || string(got) != "{}" {
		t.Fatalf("AppendMessage's {} (%x) decodes as %s, %v", built, got, err)
	}
	_, err = AppendJSON(nil, f.Struct("N"), canonical)
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 16 || !strings.Contains(de.Reason, "fixed section of N needs 4 bytes") {
		t.Fatalf("non-empty struct at root == size: %v", err)
	}
}

// TestZeroSizeChild: a nested struct of size 0 built last lands at the
// message end, its slot pointing at size, as the canonical runtime writes
// it (messages-more.json, zero_size_child_at_end) and as AppendMessage and
// generated records do. Readers take a nested object there for null (the
// canonical reader, codec's Object.Object and so generated DecodeZAP and
// views: WIRE.md §4, docs/wire.md §5); AppendJSON gave {}, so JSON and the
// generated record disagreed on the same bytes. It decodes as null, as
// codec reads it; a non-empty struct there fails on its fixed section.
func TestZeroSizeChild(t *testing.T) {
	f, err := schema.Parse("c.zap", []byte("struct E {}\nstruct N { X u32 }\nstruct R { C E; V u32 }\nstruct RN { C N; V u32 }\n"))
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := hex.DecodeString("5a4150000100000010000000180000000800000009000000")
	m, err := codec.Parse(canonical)
	if err != nil || !m.Root().Object(0).IsNull() {
		t.Fatalf("codec reads the zero-size child as not null (%v)", err)
	}
	got, err := AppendJSON(nil, f.Struct("R"), canonical)
	if err != nil || string(got) != `{"C":null,"V":9}` {
		t.Fatalf("canonical zero-size child: %s, %v", got, err)
	}
	// {} writes the canonical bytes, which read back as null.
	built, err := AppendMessage(nil, f.Struct("R"), []byte(`{"C":{},"V":9}`))
	if err != nil || !bytes.Equal(built, canonical) {
		t.Fatalf("AppendMessage({C:{}}) = %x, %v; want %x", built, err, canonical)
	}
	// A zero-size child that is not last is present.
	f2, err := schema.Parse("c2.zap", []byte("struct E {}\nstruct R2 { C E; T text }\n"))
	if err != nil {
		t.Fatal(err)
	}
	js := `{"C":{},"T":"x"}`
	built, err = AppendMessage(nil, f2.Struct("R2"), []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := AppendJSON(nil, f2.Struct("R2"), built); err != nil || string(got) != js {
		t.Fatalf("zero-size child before a text value: %s, %v", got, err)
	}
	_, err = AppendJSON(nil, f.Struct("RN"), canonical)
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 24 || de.Path != "C" || !strings.Contains(de.Reason, "fixed section of N needs 4 bytes") {
		t.Fatalf("non-empty struct at the message end: %v", err)
	}
}
