package dynamic

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// oracleSchema holds one field of each kind whose JSON form is not obvious.
const oracleSchema = `package o
struct O {
    T  text
    R  bytes
    U  u64
    I  i64
    F  f64
    G  f32
    Ts list<text>
    Fs list<f32>
}
`

// FuzzAppendJSONOracle prints a message of the values given with
// AppendJSON and reads it back with encoding/json, a reader written
// elsewhere: the output must be valid JSON, text must come back byte for
// byte (NUL, control characters, U+2028, U+2029 included), integers
// exactly (beyond 2^53 too), floats bit for bit at their own width (-0,
// subnormals, the largest), bytes as the hex string the doc promises, NaN
// and infinities as "NaN", "+Inf", "-Inf". Text that is not UTF-8 (lone
// surrogates encoded in it too) must be refused with a *DecodeError, never
// printed.
func FuzzAppendJSONOracle(f *testing.F) {
	file, err := schema.Parse("o.zap", []byte(oracleSchema))
	if err != nil {
		f.Fatal(err)
	}
	s := file.Struct("O")
	f.Add("plain", []byte{1, 2}, uint64(1<<53+1), int64(math.MinInt64), math.Float64bits(math.Copysign(0, -1)), uint32(1))
	f.Add("\x00\x1f\x7f\"\\\u2028\u2029\U0001F600", []byte(nil), uint64(math.MaxUint64), int64(-1<<53-1), uint64(1), uint32(0x7f7fffff))
	f.Add("\xed\xa0\x80", []byte{0}, uint64(0), int64(0), math.Float64bits(math.NaN()), math.Float32bits(float32(math.Inf(-1))))
	f.Add("\xff", []byte("x"), uint64(1e19), int64(1e18), math.Float64bits(1e21), math.Float32bits(1e-7))
	f.Fuzz(func(t *testing.T, text string, raw []byte, u uint64, i int64, fbits uint64, gbits uint32) {
		fv, gv := math.Float64frombits(fbits), math.Float32frombits(gbits)
		var b codec.Builder
		b.Reset(nil)
		ts := b.StartList(0)
		for _, e := range []string{text, "", text + text} {
			ts.EndElement(append(ts.BeginElement(), e...))
		}
		tsRef := ts.Finish()
		fs := b.StartList(0)
		for _, x := range []uint32{gbits, gbits ^ 1<<31} {
			buf := fs.BeginElement()
			buf = append(buf, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
			fs.EndElement(buf)
		}
		fsRef := fs.Finish()
		o := b.StartObject(s.Size)
		o.SetText(s.Field("T").Offset, text)
		o.SetBytes(s.Field("R").Offset, raw)
		o.SetUint64(s.Field("U").Offset, u)
		o.SetInt64(s.Field("I").Offset, i)
		o.SetFloat64(s.Field("F").Offset, fv)
		o.SetFloat32(s.Field("G").Offset, gv)
		o.SetList(s.Field("Ts").Offset, tsRef)
		o.SetList(s.Field("Fs").Offset, fsRef)
		b.SetRoot(o.Finish())
		msg := b.Finish()
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}

		out, err := AppendJSON(nil, s, msg)
		if !utf8.ValidString(text) {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("text %q that is not UTF-8 printed as %s (%v)", text, out, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendJSON: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q", out)
		}
		var got struct {
			T, R string
			U    uint64
			I    int64
			F, G json.RawMessage
			Ts   []string
			Fs   []json.RawMessage
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("encoding/json: %v\n%s", err, out)
		}
		if got.T != text || len(got.Ts) != 3 || got.Ts[0] != text || got.Ts[1] != "" || got.Ts[2] != text+text {
			t.Fatalf("text %q reads back as %q, %q\n%s", text, got.T, got.Ts, out)
		}
		if got.R != hex.EncodeToString(raw) {
			t.Fatalf("bytes %x printed as %q", raw, got.R)
		}
		if got.U != u || got.I != i {
			t.Fatalf("integers %d, %d read back as %d, %d\n%s", u, i, got.U, got.I, out)
		}
		oracleFloat(t, got.F, fbits, 64)
		oracleFloat(t, got.G, uint64(gbits), 32)
		if len(got.Fs) != 2 {
			t.Fatalf("Fs: %d elements\n%s", len(got.Fs), out)
		}
		oracleFloat(t, got.Fs[0], uint64(gbits), 32)
		oracleFloat(t, got.Fs[1], uint64(gbits^1<<31), 32)
	})
}

// oracleFloat checks that raw, a JSON value AppendJSON printed for the
// float of the given width whose bits are bits, reads back as it through
// encoding/json: bit for bit, or the documented string for NaN and the
// infinities.
func oracleFloat(t *testing.T, raw json.RawMessage, bits uint64, width int) {
	t.Helper()
	f := math.Float64frombits(bits)
	if width == 32 {
		f = float64(math.Float32frombits(uint32(bits)))
	}
	var special string
	switch {
	case math.IsNaN(f):
		special = `"NaN"`
	case math.IsInf(f, 1):
		special = `"+Inf"`
	case math.IsInf(f, -1):
		special = `"-Inf"`
	}
	if special != "" {
		if string(raw) != special {
			t.Fatalf("f%d %v printed as %s, want %s", width, f, raw, special)
		}
		return
	}
	if width == 32 {
		var g float32
		if err := json.Unmarshal(raw, &g); err != nil || math.Float32bits(g) != uint32(bits) {
			t.Fatalf("f32 %v (%#x) printed as %s, reads back as %v (%v)", f, bits, raw, g, err)
		}
		return
	}
	var g float64
	if err := json.Unmarshal(raw, &g); err != nil || math.Float64bits(g) != bits {
		t.Fatalf("f64 %v (%#x) printed as %s, reads back as %v (%v)", f, bits, raw, g, err)
	}
}
