package dynamic

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// encSchema covers every kind, lists of each element kind and nesting.
const encSchema = `package t
type h4 = bytes_fixed[4]
struct Inner {
    Tag  u32
    Name text
}
struct All {
    B    bool
    U8   u8
    U16  u16
    U32  u32
    U64  u64
    I8   i8
    I16  i16
    I32  i32
    I64  i64
    F32  f32
    F64  f64
    T    text
    Raw  bytes
    Fix  h4
    One  Inner
    Objs list<Inner>
    U8s  list<u8>
    I16s list<i16>
    F64s list<f64>
    Bs   list<bool>
    Ts   list<text>
    Rs   list<bytes>
    Qs   list<h4>
    G    list<list<u16>>
    GT   list<list<text>>
}
`

func encParse(t testing.TB) *schema.File {
	t.Helper()
	f, err := schema.Parse("t.zap", []byte(encSchema))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const encAllJSON = `{"B":true,"U8":255,"U16":65535,"U32":"0xdeadbeef","U64":18446744073709551615,
"I8":-128,"I16":-300,"I32":-70000,"I64":"-5000000000","F32":0.5,"F64":"NaN","T":"héllo","Raw":"0xdead",
"Fix":"01020304","One":{"Tag":7,"Name":"seven"},"Objs":[{"Tag":1,"Name":"a"},{"Tag":2}],
"U8s":[1,2,3],"I16s":[-1,2],"F64s":[1.5,"-Inf"],"Bs":[true,false],"Ts":["x","","yz"],"Rs":["00ff",""],
"Qs":["01020304"],"G":[[1,2],[],[3]],"GT":[["a"],[]]}`

// TestEncodeReadBack checks field values through package codec's reader.
func TestEncodeReadBack(t *testing.T) {
	f := encParse(t)
	s := f.Struct("All")
	msg, err := AppendMessage([]byte("prefix"), s, []byte(encAllJSON))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg[:6]) != "prefix" {
		t.Fatal("dst prefix lost")
	}
	m, err := codec.Parse(msg[6:])
	if err != nil {
		t.Fatal(err)
	}
	r := m.Root()
	off := func(name string) int { return s.Field(name).Offset }
	if !r.Bool(off("B")) || r.Uint8(off("U8")) != 255 || r.Uint16(off("U16")) != 65535 || r.Uint32(off("U32")) != 0xdeadbeef ||
		r.Uint64(off("U64")) != 1<<64-1 || r.Int8(off("I8")) != -128 || r.Int16(off("I16")) != -300 ||
		r.Int32(off("I32")) != -70000 || r.Int64(off("I64")) != -5000000000 || r.Float32(off("F32")) != 0.5 ||
		r.Float64(off("F64")) == r.Float64(off("F64")) /* NaN */ || r.Text(off("T")) != "héllo" ||
		!bytes.Equal(r.Bytes(off("Raw")), []byte{0xde, 0xad}) || !bytes.Equal(r.BytesFixed(off("Fix"), 4), []byte{1, 2, 3, 4}) {
		t.Fatalf("scalar fields read back wrong from %x", msg[6:])
	}
	if in := r.Object(off("One")); in.Uint32(0) != 7 || in.Text(4) != "seven" {
		t.Fatalf("nested: tag %d name %q", in.Uint32(0), in.Text(4))
	}
	objs := r.List(off("Objs"))
	if objs.Len() != 2 || objs.ObjectAt(0).Text(4) != "a" || objs.ObjectAt(1).Uint32(0) != 2 {
		t.Fatalf("list<Inner> reads wrong")
	}
	if u := r.List(off("U8s")); u.Len() != 3 || u.VarUint8(2) != 3 {
		t.Fatalf("list<u8> reads wrong")
	}
	if u := r.List(off("I16s")); u.Len() != 2 || int16(u.VarUint16(0)) != -1 || u.VarUint16(1) != 2 {
		t.Fatalf("list<i16> reads wrong")
	}
	if q := r.List(off("Qs")); q.Len() != 1 || !bytes.Equal(q.VarFixed(0, 4), []byte{1, 2, 3, 4}) {
		t.Fatalf("list<bytes_fixed[4]> reads wrong")
	}
	g := r.List(off("G"))
	g0, ok0 := codec.VarListOf(g.BytesAt(0))
	g1, ok1 := codec.VarListOf(g.BytesAt(1))
	g2, ok2 := codec.VarListOf(g.BytesAt(2))
	if g.Len() != 3 || !ok0 || !ok1 || !ok2 || g0.Len() != 2 || g0.VarUint16(1) != 2 || g1.Len() != 0 || g2.VarUint16(0) != 3 {
		t.Fatalf("list<list<u16>> reads wrong")
	}
	if ts := r.List(off("Ts")); ts.Len() != 3 || string(ts.BytesAt(2)) != "yz" || len(ts.BytesAt(1)) != 0 {
		t.Fatalf("list<text> reads wrong")
	}
}

// TestEncodeDecodeRoundTrip: AppendJSON's output encodes back to the same
// bytes, and decoding the re-encoded message gives the same JSON.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	f := encParse(t)
	for _, js := range []string{encAllJSON, `{}`, `{"One":null,"Objs":[]}`, `{"Objs":[{"Name":"only"}]}`} {
		s := f.Struct("All")
		msg, err := AppendMessage(nil, s, []byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		out, err := AppendJSON(nil, s, msg)
		if err != nil {
			t.Fatalf("%s: decode: %v", js, err)
		}
		again, err := AppendMessage(nil, s, out)
		if err != nil {
			t.Fatalf("re-encode of %s: %v", out, err)
		}
		if !bytes.Equal(msg, again) {
			t.Fatalf("%s:\nfirst  %x\nsecond %x\nvia %s", js, msg, again, out)
		}
	}
}

// TestEncodeGeneratedFixtures encodes the values of generated.json and
// generated-lists.json (every list<T>, empty lists, whitespace form) and
// compares with the bytes the canonical generated constructors wrote.
func TestEncodeGeneratedFixtures(t *testing.T) {
	cases, byName, parse := generatedCases(t)
	for _, c := range cases {
		f := parse(t, c.Schema)
		js, _ := json.Marshal(fixtureJSON(f.Struct(c.Struct), c.Values, byName))
		got, err := AppendMessage(nil, f.Struct(c.Struct), js)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if h := hex.EncodeToString(got); h != c.Hex {
			t.Errorf("%s:\n got  %s\n want %s", c.Name, h, c.Hex)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	f := encParse(t)
	s := f.Struct("All")
	for _, tc := range []struct{ js, want string }{
		{`{"Nope":1}`, `unknown field "Nope" of All (fields: B, U8,`},
		{`{"U8":256}`, `U8: bad u8 "256": value out of range`},
		{`{"I8":-129}`, `I8: bad i8 "-129": value out of range`},
		{`{"U32":-1}`, `U32: bad u32 "-1": invalid syntax`},
		{`{"U16":1.5}`, `U16: bad u16 "1.5": invalid syntax`},
		{`{"B":1}`, `B: want true or false, got a number`},
		{`{"T":5}`, `T: want a string for text, got a number`},
		{`{"Raw":"xyz"}`, `Raw: bad hex "xyz"`},
		{`{"Fix":"0102"}`, `Fix: want 4 bytes (8 hex digits), got 2`},
		{`{"One":[]}`, `One: want an object for Inner, got an array`},
		{`{"One":{"Tag":"x"}}`, `One.Tag: bad u32 "x"`},
		{`{"Objs":[{"Tag":1},{"Bad":2}]}`, `Objs[1]: unknown field "Bad" of Inner`},
		{`{"Objs":{}}`, `Objs: want an array for list<Inner>, got an object`},
		{`{"U8s":[1,"300"]}`, `U8s[1]: bad u8 "300"`},
		{`{"Ts":[1]}`, `Ts[0]: want a string for text, got a number`},
		{`{"F32":true}`, `F32: want a number for f32, got a boolean`},
		// Floats in strings: the three names, or decimal; not strconv's
		// other forms.
		{`{"F64":"infinity"}`, `F64: bad f64 "infinity": not a decimal number`},
		{`{"F64":"inf"}`, `F64: bad f64 "inf": not a decimal number`},
		{`{"F64":"nan"}`, `F64: bad f64 "nan": not a decimal number`},
		{`{"F64":"0x1p3"}`, `F64: bad f64 "0x1p3": not a decimal number`},
		{`{"F32":"0x_1p0"}`, `F32: bad f32 "0x_1p0": not a decimal number`},
		{`{"F64":"1_0"}`, `F64: bad f64 "1_0": not a decimal number`},
		{`{"F64":"1e"}`, `F64: bad f64 "1e": invalid syntax`},
		{`{"U8":"0b1"}`, `U8: bad u8 "0b1": invalid syntax`},
		{`{"U8":"0o7"}`, `U8: bad u8 "0o7": invalid syntax`},
		{`{"U8":"1_0"}`, `U8: bad u8 "1_0": invalid syntax`},
		{`{"U8":"0x_1"}`, `U8: bad u8 "0x_1": invalid syntax`},
		{`{"I8":"0x-5"}`, `I8: bad i8 "0x-5": invalid syntax`},
		{`{"U8":"0x"}`, `U8: bad u8 "0x": invalid syntax`},
		{`{"U8":"0x100"}`, `U8: bad u8 "0x100": value out of range`},
		{`[1]`, `want a JSON object for All, got an array`},
		{`{"B":true`, `invalid JSON`},
		{`{} {}`, `more than one value`},
		{`{} x`, `invalid JSON after the value`},
		{`{"U8":1}]`, `invalid JSON after the value`},
		{`{}}`, `invalid JSON after the value`},
		{`{} "`, `invalid JSON after the value`},
		{`{} /`, `invalid JSON after the value`},
		{``, `invalid JSON`},
	} {
		dst := []byte("keep")
		out, err := AppendMessage(dst, s, []byte(tc.js))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.js, err, tc.want)
		}
		if string(out) != "keep" {
			t.Errorf("%s: dst changed on error: %q", tc.js, out)
		}
	}
	if _, err := AppendMessage(nil, nil, []byte(`{}`)); err == nil {
		t.Error("nil struct: no error")
	}
}

// TestEncodeIntegerStrings: an integer given as a string is decimal, or
// hex after "0x": a leading zero is not octal ("010" is ten, as AppendJSON
// would never write it otherwise).
func TestEncodeIntegerStrings(t *testing.T) {
	f := encParse(t)
	s := f.Struct("All")
	for _, tc := range []struct {
		js    string
		field string
		want  int64
	}{
		{`{"U8":"010"}`, "U8", 10},
		{`{"U16":"0080"}`, "U16", 80},
		{`{"I8":"-010"}`, "I8", -10},
		{`{"I16":"-0x10"}`, "I16", -16},
		{`{"U32":"0X1f"}`, "U32", 31},
		{`{"I64":"+7"}`, "I64", 7},
		{`{"U8":"0"}`, "U8", 0},
	} {
		msg, err := AppendMessage(nil, s, []byte(tc.js))
		if err != nil {
			t.Errorf("%s: %v", tc.js, err)
			continue
		}
		js, err := AppendJSON(nil, s, msg)
		if err != nil {
			t.Fatalf("%s: %v", tc.js, err)
		}
		var got map[string]any
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if n, _ := got[tc.field].(json.Number).Int64(); n != tc.want {
			t.Errorf("%s: %s = %v, want %d", tc.js, tc.field, got[tc.field], tc.want)
		}
	}
}

// TestEncodeFloatStrings: a float given as a string is one of the names
// AppendJSON writes, "Inf", or a decimal number.
func TestEncodeFloatStrings(t *testing.T) {
	s := encParse(t).Struct("All")
	for js, want := range map[string]string{
		`{"F64":"1.5","F32":"-2e3"}`: `"F32":-2000,"F64":1.5,`,
		`{"F64":"Inf","F32":"-Inf"}`: `"F32":"-Inf","F64":"+Inf",`,
		`{"F64":".5","F32":"+5."}`:   `"F32":5,"F64":0.5,`,
		`{"F64":"NaN"}`:              `"F32":0,"F64":"NaN",`,
	} {
		msg, err := AppendMessage(nil, s, []byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		out, err := AppendJSON(nil, s, msg)
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("%s: %s (%v), want it to contain %s", js, out, err, want)
		}
	}
}

// FuzzAppendMessage: any input gives a message or an error, never a panic;
// a message comes only from one valid JSON value (nothing but white space
// after it), and always decodes and re-encodes to itself.
func FuzzAppendMessage(f *testing.F) {
	for _, js := range []string{encAllJSON, `{}`, `{"Objs":[{"Tag":1}]}`, `{"U64":"0x10"}`, `{"F64s":[1e308,"+Inf"]}`, "{} \n", `{"U8":1,"U8":1}`, ` [ 1 , {"a" : [ ] } ] `} {
		f.Add([]byte(js))
	}
	file := encParse(f)
	s := file.Struct("All")
	f.Fuzz(func(t *testing.T, js []byte) {
		msg, err := AppendMessage(nil, s, js)
		if err != nil {
			if _, ok := err.(*EncodeError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			// What encoding/json takes is invalid JSON here only for a
			// key named twice or bytes that are not UTF-8.
			if json.Valid(js) && utf8.Valid(js) && !strings.Contains(err.Error(), "twice") &&
				(strings.Contains(err.Error(), "invalid JSON") || strings.Contains(err.Error(), "BUG")) {
				t.Fatalf("encoding/json takes %q, AppendMessage: %v", js, err)
			}
			return
		}
		if !json.Valid(js) {
			t.Fatalf("a message from invalid JSON %q", js)
		}
		out, err := AppendJSON(nil, s, msg)
		if err != nil {
			t.Fatalf("own message does not decode: %v\n%x", err, msg)
		}
		again, err := AppendMessage(nil, s, out)
		if err != nil || !bytes.Equal(again, msg) {
			t.Fatalf("round trip: %v\n%x\n%x", err, msg, again)
		}
	})
}

// TestEncodeDepthLimit: AppendMessage refuses to nest records deeper than
// AppendJSON reads (MaxDecodeDepth), counting as AppendJSON does: one
// level per nested record, one per record in a list, however deep the
// lists nest. It built such messages, which AppendJSON (and the dump
// subcommand) then refused; at the limit the message is built and decodes
// to the same JSON.
func TestEncodeDepthLimit(t *testing.T) {
	f, err := schema.Parse("d.zap", []byte(`
struct Node { Next Node @0 }
struct Tree { Kids list<Tree> @0 }
struct Grid { Rows list<list<Grid>> @0 }
`))
	if err != nil {
		t.Fatal(err)
	}
	nest := func(n int, open, close, leaf string) string {
		return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		typ  string
		json func(n int) string // the root and n records nested below it
	}{
		{"Node", func(n int) string { return nest(n, `{"Next":`, `}`, `{"Next":null}`) }},
		{"Tree", func(n int) string { return nest(n, `{"Kids":[`, `]}`, `{"Kids":[]}`) }},
		{"Grid", func(n int) string { return nest(n, `{"Rows":[[`, `]]}`, `{"Rows":[]}`) }},
	} {
		s := f.Struct(tc.typ)
		for _, n := range []int{MaxDecodeDepth, MaxDecodeDepth + 1} {
			js := tc.json(n)
			msg, encErr := AppendMessage(nil, s, []byte(js))
			out, decErr := AppendJSON(nil, s, msg)
			if n == MaxDecodeDepth {
				if encErr != nil || decErr != nil || string(out) != js {
					t.Fatalf("%s, %d levels: AppendMessage %v, AppendJSON %v (%.60s...)", tc.typ, n, encErr, decErr, out)
				}
				continue
			}
			var ee *EncodeError
			if !errors.As(encErr, &ee) || !strings.Contains(ee.Reason, "deeper than") {
				t.Fatalf("%s, %d levels: AppendMessage error %v, want one for the depth (AppendJSON of its message: %v)", tc.typ, n, encErr, decErr)
			}
		}
	}
}

// TestEncodeUnknownFieldsOfLargeObject: the check for keys that name no
// field looked each key up among the fields, keys × fields compares; it
// now looks each field up among the keys. On a struct of thousands of
// fields it still names the first unknown key in sorted order, whether
// the unknown keys come beside every field or in place of some, and
// passes an object whose keys are all fields. (The cost itself is not
// asserted: that would take a time limit.)
func TestEncodeUnknownFieldsOfLargeObject(t *testing.T) {
	const n = 3000
	var src strings.Builder
	src.WriteString("struct Big {\n")
	for i := range n {
		fmt.Fprintf(&src, "    F%d u8\n", i)
	}
	src.WriteString("}\n")
	f, err := schema.Parse("big.zap", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Struct("Big")
	doc := func(from int, extra ...string) []byte {
		obj := map[string]any{}
		for i := from; i < n; i++ {
			obj[fmt.Sprintf("F%d", i)] = 1
		}
		for _, k := range extra {
			obj[k] = 1
		}
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	if _, err := AppendMessage(nil, s, doc(0)); err != nil {
		t.Fatalf("every field: %v", err)
	}
	for _, tc := range []struct {
		name string
		js   []byte
	}{
		{"beside every field", doc(0, "zz", "Nope", "F3000")},
		{"in place of fields", doc(3, "zz", "Nope", "F3000")},
		{"alone", doc(n, "zz", "Nope", "F3000")},
	} {
		_, err := AppendMessage(nil, s, tc.js)
		if err == nil || !strings.Contains(err.Error(), `unknown field "F3000" of Big (fields: F0, F1,`) {
			t.Errorf("%s: %v, want unknown field F3000", tc.name, err)
		}
	}
}

// TestEncodeDuplicateKeys: an object naming a key twice is refused, at
// any depth; encoding/json's Decode, which AppendMessage used, kept the
// last value silently, where another reader of the same document (a
// gateway's filter, say) may keep the first.
func TestEncodeDuplicateKeys(t *testing.T) {
	s := encParse(t).Struct("All")
	for _, js := range []string{
		`{"U8":1,"U8":2}`,
		`{"T":"a","T":"b"}`,
		`{"One":{"Tag":1},"One":null}`,
		`{"One":{"Tag":1,"Tag":2}}`,
		`{"Objs":[{"Name":"x"},{"Name":"x","Name":"y"}]}`,
		`{"T":"a","\u0054":"b"}`, // the same key, escaped
	} {
		msg, err := AppendMessage([]byte("pre"), s, []byte(js))
		if err == nil || !strings.Contains(err.Error(), "twice") || string(msg) != "pre" {
			t.Errorf("%s: %q, %v; want a duplicate-key error", js, msg, err)
		}
	}
	// The same name in two objects is no duplicate, nor is a colon in a
	// string (after escaped quotes and backslashes).
	for _, js := range []string{
		`{"One":{"Tag":1},"Objs":[{"Tag":2},{"Tag":3}]}`,
		`{"T":"a:\":b\\","Ts":[":","\\\":"],"One":{"Name":"\\"}}`,
	} {
		if _, err := AppendMessage(nil, s, []byte(js)); err != nil {
			t.Errorf("%s: %v", js, err)
		}
	}
}

// TestEncodeDeepJSON: JSON nested deeper than any schema nests fails
// with an error, never a stack overflow: AppendMessage's Decode refuses
// more than encMaxJSONDepth levels, and so does encValue, which reads a
// document again to name a repeated key and recurses once per level.
func TestEncodeDeepJSON(t *testing.T) {
	s := encParse(t).Struct("All")
	for _, n := range []int{encMaxJSONDepth - 1, encMaxJSONDepth, 1 << 20} {
		js := `{"G":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
		_, err := AppendMessage(nil, s, []byte(js))
		if err == nil {
			t.Fatalf("depth %d: no error", n)
		}
		if deep := strings.Contains(err.Error(), "depth"); deep != (n+1 > encMaxJSONDepth) {
			t.Errorf("depth %d: %v", n, err)
		}
		dec := json.NewDecoder(strings.NewReader(js))
		_, err = encValue(dec, 0)
		if deep := err != nil && strings.Contains(err.Error(), "nested deeper"); deep != (n+1 > encMaxJSONDepth) {
			t.Errorf("encValue, depth %d: %v", n, err)
		}
	}
}

// TestEncodeHexOnePrefix: bytes take one optional 0x (or 0X) prefix; a
// second one was stripped too, so "0x0Xab" was taken as the byte ab.
func TestEncodeHexOnePrefix(t *testing.T) {
	s := encParse(t).Struct("All")
	for _, js := range []string{`{"Raw":"0x0Xab"}`, `{"Raw":"0X0xab"}`, `{"Fix":"0x0x01020304"}`, `{"Rs":["0x0xab"]}`} {
		if _, err := AppendMessage(nil, s, []byte(js)); err == nil || !strings.Contains(err.Error(), "bad hex") {
			t.Errorf("%s: %v, want a bad-hex error", js, err)
		}
	}
	for _, js := range []string{`{"Raw":"0xab"}`, `{"Raw":"0Xab"}`, `{"Raw":"ab"}`, `{"Raw":"0x"}`, `{"Raw":""}`} {
		if _, err := AppendMessage(nil, s, []byte(js)); err != nil {
			t.Errorf("%s: %v", js, err)
		}
	}
}

// TestEncodeNotUTF8: JSON holding bytes that are not UTF-8 is refused
// with the position of the first; encoding/json read them inside a string
// as U+FFFD, so the text of the message silently differed from the input.
func TestEncodeNotUTF8(t *testing.T) {
	s := encParse(t).Struct("All")
	for _, tc := range []struct {
		js string
		at int
	}{
		{"{\"T\":\"a\xffb\"}", 7},
		{"{\"Ts\":[\"ok\",\"\xed\xa0\x80\"]}", 13}, // a surrogate encoded in UTF-8
		{"{\"T\":\"\xc3\"}", 6},                    // truncated sequence
	} {
		_, err := AppendMessage(nil, s, []byte(tc.js))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("not UTF-8 at byte %d", tc.at)) {
			t.Errorf("%q: %v", tc.js, err)
		}
	}
	msg, err := AppendMessage(nil, s, []byte(`{"T":"\u00ff\ufffd é"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := AppendJSON(nil, s, msg); !strings.Contains(string(out), `"T":"ÿ� é"`) {
		t.Fatalf("valid text changed: %s", out)
	}
}

// TestEncodeErrorPrecedence pins the documented choice among several
// faults of one document (see AppendMessage): syntax first, then the
// records' faults in schema order, depth first, a record's unknown keys
// after its fields' values, and a repeated key last; never the first
// fault in input order when another comes earlier in the schema.
func TestEncodeErrorPrecedence(t *testing.T) {
	s := encParse(t).Struct("All")
	for _, tc := range []struct{ js, want string }{
		{`{"T":5,"U8":300,`, "invalid JSON"},
		{`{"T":5,"U8":300}`, "U8: bad u8"},
		{`{"Nope":1,"T":5}`, "T: want a string"},
		{`{"U8s":5,"One":{"Zz":1}}`, `One: unknown field "Zz"`},
		{`{"One":{"Tag":"x","Zz":1}}`, "One.Tag:"},
		{`{"Zz":1,"Aa":2}`, `unknown field "Aa"`},
		{`{"U8":1,"U8":2,"T":5}`, "T: want a string"},
		{`{"U8":1,"U8":2,"Nope":5}`, `unknown field "Nope"`},
	} {
		_, err := AppendMessage(nil, s, []byte(tc.js))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want the error naming %q", tc.js, err, tc.want)
		}
	}
}
