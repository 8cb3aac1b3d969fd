package check

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Oracle checks js, what dynamic.AppendJSON printed for record rec (a
// pointer to a generated record of st), with encoding/json as the judge
// instead of a printer written alike: js must be valid JSON (json.Valid),
// one object with st's fields, and json.Unmarshal of each value into a Go
// value of the record field's type must give the record's value (text
// byte for byte, integers exact beyond 2^53, floats bit for bit, -0
// included); the forms JSON has no value for are the ones AppendJSON
// documents: "NaN", "+Inf", "-Inf" for floats, lowercase hex strings for
// bytes and bytes_fixed, null for a nil nested record. It returns a
// description of the first disagreement, or "".
func Oracle(js []byte, rec any, st *schema.Struct) string {
	if !json.Valid(js) {
		return fmt.Sprintf("not valid JSON: %q", js)
	}
	return oracleObject(js, reflect.ValueOf(rec).Elem(), st, "")
}

func oracleObject(js []byte, v reflect.Value, st *schema.Struct, path string) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil {
		return fmt.Sprintf("%s: want an object for %s: %v: %s", path, st.Name, err, js)
	}
	if len(obj) != len(st.Fields) {
		return fmt.Sprintf("%s: %d keys for the %d fields of %s: %s", path, len(obj), len(st.Fields), st.Name, js)
	}
	for i, f := range st.Fields {
		raw, ok := obj[f.Name]
		if !ok {
			return fmt.Sprintf("%s: no key %q: %s", path, f.Name, js)
		}
		fv, _ := goField(v, st, i)
		if d := oracleValue(raw, fv, f.Type, path+"."+f.Name); d != "" {
			return d
		}
	}
	return ""
}

func oracleValue(raw json.RawMessage, v reflect.Value, t *schema.Type, path string) string {
	switch t.Kind {
	case schema.KindStruct:
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if string(raw) != "null" {
					return fmt.Sprintf("%s: nil record printed as %s", path, raw)
				}
				return ""
			}
			v = v.Elem()
		}
		return oracleObject(raw, v, t.Struct, path)
	case schema.KindList:
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
			return fmt.Sprintf("%s: want an array: %v: %s", path, err, raw)
		}
		if len(elems) != v.Len() {
			return fmt.Sprintf("%s: %d elements printed, the record has %d", path, len(elems), v.Len())
		}
		for i, e := range elems {
			if d := oracleValue(e, v.Index(i), t.Elem, fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case schema.KindText:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != v.String() {
			return fmt.Sprintf("%s: %s reads as %q (%v), the record has %q", path, raw, s, err, v.String())
		}
		return ""
	case schema.KindBytes, schema.KindBytesFixed:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Sprintf("%s: want a string: %v: %s", path, err, raw)
		}
		want := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(want), v)
		if s != hex.EncodeToString(want) {
			return fmt.Sprintf("%s: %s, the record has %x", path, raw, want)
		}
		return ""
	case schema.KindF32, schema.KindF64:
		f := v.Float()
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
				return fmt.Sprintf("%s: %v printed as %s", path, f, raw)
			}
			return ""
		}
	}
	// A scalar: json.Unmarshal into a new value of the field's own Go type
	// (float32 for f32, uint64 for u64, ...), which encoding/json parses
	// at that type's width and refuses when out of its range.
	got := reflect.New(v.Type())
	if err := json.Unmarshal(raw, got.Interface()); err != nil {
		return fmt.Sprintf("%s: json.Unmarshal of %s into %s: %v", path, raw, v.Type(), err)
	}
	if d := diff(got.Elem(), v, path); d != "" {
		return fmt.Sprintf("%s (printed %s)", d, raw)
	}
	return ""
}
