package all

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// TestReadersIgnoreBytesPastSize: the bytes past a message's size field
// are not part of it (WIRE.md §1), so no reader may look at them: a value,
// element or object that ends past the size reads as it would at the end
// of the buffer. Messages of random records, their size field cut by 0 to
// 16 bytes (so that the last values, often text or list elements, end
// past it), are read with the bytes past the size all 0x00 and all 0xFF:
// DecodeZAP, the view and package dynamic each read the two alike, and
// check.DiffRead finds them agreeing with each other.
func TestReadersIgnoreBytesPastSize(t *testing.T) {
	structs := check.Structs(t, schemaFile, types)
	r := rand.New(rand.NewPCG(11, 13))
	for name, typ := range types {
		st := structs[name]
		for k := range 2 {
			msg := check.RandomRecord(r, typ).AppendZAP(nil)
			for _, cut := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16} {
				if len(msg)-cut < 16 {
					break
				}
				what := fmt.Sprintf("%s #%d, size cut by %d", name, k, cut)
				var recs [2]check.Record
				var errs [2]error
				var views, jsons [2][]byte
				for i, fill := range []byte{0x00, 0xFF} {
					b := bytes.Clone(msg)
					binary.LittleEndian.PutUint32(b[12:], uint32(len(msg)-cut))
					for j := len(msg) - cut; j < len(b); j++ {
						b[j] = fill
					}
					b = append(b, bytes.Repeat([]byte{fill}, 9)...)
					if d := check.DiffRead(b, types, structs); d != "" {
						t.Fatalf("%s, filled with %#x: %s", what, fill, d)
					}
					recs[i] = typ.New()
					errs[i] = recs[i].DecodeZAP(b)
					if errs[i] == nil {
						v, err := typ.Read(b)
						if err != nil {
							t.Fatalf("%s: the view: %v", what, err)
						}
						views[i] = check.ViewJSON(nil, v, st, recs[i])
					}
					js, err := dynamic.AppendJSON(nil, st, b)
					if err != nil {
						js = []byte(err.Error())
					}
					jsons[i] = js
				}
				if (errs[0] == nil) != (errs[1] == nil) {
					t.Fatalf("%s: DecodeZAP: %v past the size 0x00, %v past it 0xFF", what, errs[0], errs[1])
				}
				if errs[0] == nil {
					if d := check.Equal(recs[0], recs[1]); d != "" {
						t.Errorf("%s: DecodeZAP reads the bytes past the size: %s", what, d)
					}
					if !bytes.Equal(views[0], views[1]) {
						t.Errorf("%s: the view reads the bytes past the size:\n%s\n%s", what, views[0], views[1])
					}
				}
				if !bytes.Equal(jsons[0], jsons[1]) {
					t.Errorf("%s: dynamic reads the bytes past the size:\n%s\n%s", what, jsons[0], jsons[1])
				}
			}
		}
	}
}
