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

// FuzzDynamic feeds arbitrary bytes to dynamic.AppendJSON and to DecodeZAP
// of every type in types, as the struct of that name in schemaFile:
// package dynamic reads strictly where generated code reads a field that
// does not fit as its zero value, so whatever AppendJSON decodes DecodeZAP
// must decode too, to the record AppendJSON printed (its AppendZAP prints
// the same JSON). The corpus starts with 4 random records of each type
// (seeded with seed).
func FuzzDynamic(f *testing.F, schemaFile string, seed uint64, types map[string]Type) {
	src, err := os.ReadFile(schemaFile)
	if err != nil {
		f.Fatal(err)
	}
	file, err := schema.Parse(filepath.Base(schemaFile), src)
	if err != nil {
		f.Fatal(err)
	}
	structs := map[string]*schema.Struct{}
	for name := range types {
		if structs[name] = file.Struct(name); structs[name] == nil {
			f.Fatalf("%s has no struct %s", schemaFile, name)
		}
	}
	r := rand.New(rand.NewPCG(seed, seed))
	for _, typ := range types {
		for range 4 {
			rec := typ.New()
			Randomize(r, rec)
			validText(reflect.ValueOf(rec).Elem())
			f.Add(rec.AppendZAP(nil))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, typ := range types {
			js, err := dynamic.AppendJSON(nil, structs[name], b)
			if err != nil {
				continue
			}
			rec := typ.New()
			if err := rec.DecodeZAP(b); err != nil {
				t.Fatalf("%s: dynamic.AppendJSON decodes %s, DecodeZAP fails: %v", name, js, err)
			}
			again, err := dynamic.AppendJSON(nil, structs[name], rec.AppendZAP(nil))
			if err != nil || !bytes.Equal(again, js) {
				t.Fatalf("%s: dynamic.AppendJSON reads %s, DecodeZAP %s (%v)", name, js, again, err)
			}
		}
	})
}
