package lists

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// TestReadersZeroDistanceList: a list slot whose distance is 0 reads as a
// null, empty list whatever its count, in all three readers (DecodeZAP,
// the view, package dynamic) and for every list<T>, as the canonical
// reader reads it (docs/wire.md §3; codec's TestListZeroDistanceIsNull
// says why). Each list field of a record holding one element in every
// list is given a slot {0, count}, count being its own 1 or 0xFFFFFFFF;
// the other fields read as written, and check.DiffRead finds the three
// readers agreeing on the whole message.
func TestReadersZeroDistanceList(t *testing.T) {
	rec := &Lists{
		Count: 7, Name: "zero",
		U8s: []uint8{1}, U16s: []uint16{2}, U32s: []uint32{3}, U64s: []uint64{4},
		I16s: []int16{-5}, I32s: []int32{-6}, I64s: []int64{-7}, F32s: []float32{8.5}, F64s: []float64{9.5},
		Bools: []bool{true}, Texts: []string{"ten"}, Blobs: [][]byte{{11}}, Quads: [][4]byte{{1, 2, 3, 4}},
		Items: []Item{{Tag: 12, Name: "twelve"}},
	}
	msg := rec.AppendZAP(nil)
	structs := check.Structs(t, schemaFile, types)
	st := structs["Lists"]
	for i, f := range st.Fields {
		if f.Type.Elem == nil {
			continue // not a list
		}
		for _, count := range []uint32{1, 0xFFFFFFFF} {
			bad := bytes.Clone(msg)
			slot := 16 + f.Offset // the root is at 16
			if binary.LittleEndian.Uint32(bad[slot+4:]) != 1 {
				t.Fatalf("%s: the slot at %d is not a list of one element", f.Name, slot)
			}
			binary.LittleEndian.PutUint64(bad[slot:], uint64(count)<<32)

			if d := check.DiffRead(bad, types, structs); d != "" {
				t.Fatalf("%s {0, %d}: %s", f.Name, count, d)
			}
			var got Lists
			if err := got.DecodeZAP(bad); err != nil {
				t.Fatalf("%s {0, %d}: DecodeZAP: %v", f.Name, count, err)
			}
			want := *rec
			reflect.ValueOf(&want).Elem().Field(i).SetZero()
			if d := check.Equal(&want, &got); d != "" {
				t.Errorf("%s {0, %d}: DecodeZAP: %s", f.Name, count, d)
			}
			v, err := ReadLists(bad)
			if err != nil {
				t.Fatal(err)
			}
			l := reflect.ValueOf(v).MethodByName(f.Name).Call(nil)[0]
			if null, n := l.MethodByName("IsNull").Call(nil)[0].Bool(), l.MethodByName("Len").Call(nil)[0].Int(); !null || n != 0 {
				t.Errorf("%s {0, %d}: the view's list: IsNull %v, Len %d; want null, 0", f.Name, count, null, n)
			}
			js, err := dynamic.AppendJSON(nil, st, bad)
			if err != nil {
				t.Fatalf("%s {0, %d}: dynamic: %v", f.Name, count, err)
			}
			if !strings.Contains(string(js), `"`+f.Name+`":[]`) {
				t.Errorf("%s {0, %d}: dynamic reads %s", f.Name, count, js)
			}
		}
	}
}
