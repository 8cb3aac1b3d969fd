package check

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// SameAsBuilder checks, for n random records of every type (seeded), that
// AppendZAP writes the very bytes package dynamic writes for the same
// values through codec.Builder: the message is turned into JSON by
// dynamic.AppendJSON (which reads it field by field, whatever its layout)
// and back into a message by dynamic.AppendMessage. Generated code that
// writes messages without a Builder must lay them out as the Builder does.
// schemaFile is the path of the schema the types were generated from.
func SameAsBuilder(t *testing.T, schemaFile string, seed uint64, n int, types map[string]Type) {
	src, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Parse(filepath.Base(schemaFile), src)
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range types {
		st := f.Struct(name)
		if st == nil {
			t.Fatalf("%s has no struct %s", schemaFile, name)
		}
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			for i := range max(n/raceDivisor, 1) {
				rec := typ.New()
				if i > 0 { // the first is the zero record
					Randomize(r, rec)
					validText(reflect.ValueOf(rec).Elem())
				}
				msg := rec.AppendZAP(nil)
				js, err := dynamic.AppendJSON(nil, st, msg)
				if err != nil {
					t.Fatalf("#%d: dynamic.AppendJSON: %v\n%x", i, err, msg)
				}
				want, err := dynamic.AppendMessage(nil, st, js)
				if err != nil {
					t.Fatalf("#%d: dynamic.AppendMessage: %v\n%s", i, err, js)
				}
				if !bytes.Equal(msg, want) {
					t.Fatalf("#%d: AppendZAP and the Builder differ\n got %x\nwant %x\n%s", i, msg, want, js)
				}
			}
		})
	}
}

// validText makes every string in v valid UTF-8, as JSON text must be.
func validText(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.ToValidUTF8(v.String(), "?"))
	case reflect.Pointer:
		if !v.IsNil() {
			validText(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			validText(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			validText(v.Index(i))
		}
	}
}
