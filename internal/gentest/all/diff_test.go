package all

import (
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

const schemaFile = "../../../cmd/zapcodec/internal/gen/testdata/all.zap"

// FuzzReaders: on arbitrary bytes, DecodeZAP, the views and package
// dynamic agree field by field (see check.DiffRead).
func FuzzReaders(f *testing.F) { check.FuzzRead(f, schemaFile, 32, types) }

// FuzzEdits is FuzzReaders over messages of random records with a few
// bytes set (see check.FuzzReadEdits).
func FuzzEdits(f *testing.F) { check.FuzzReadEdits(f, schemaFile, types, nil) }

// FuzzWriters: AppendZAP, dynamic.AppendMessage and codec.Builder write
// the same bytes for random records, which read back alike (see
// check.DiffWrite).
func FuzzWriters(f *testing.F) { check.FuzzWrite(f, schemaFile, types) }

// TestWriters is FuzzWriters over more records.
func TestWriters(t *testing.T) { check.Writers(t, schemaFile, 32, 150, types) }

// TestDepthLimit: DecodeZAP and package dynamic draw the nesting limit at
// the same depth, for nested records and for records in lists: a chain of
// k Selfs (the last holding a Point in a list when inList) decodes in
// both, or in neither, and dynamic.AppendMessage builds what they read.
func TestDepthLimit(t *testing.T) {
	st := check.Structs(t, schemaFile, types)["Kitchen"]
	for _, inList := range []bool{false, true} {
		for k := 97; k <= 102; k++ {
			root := &Kitchen{Tail: 1}
			last := root
			for range k {
				last.Self = &Kitchen{Tail: 2}
				last = last.Self
			}
			depth := k // of the deepest record
			if inList {
				last.Points = []Point{{X: 3}}
				depth++
			}
			want := depth <= 100
			msg := root.AppendZAP(nil)
			derr := new(Kitchen).DecodeZAP(msg)
			_, jerr := dynamic.AppendJSON(nil, st, msg)
			if (derr == nil) != want || (jerr == nil) != want {
				t.Errorf("depth %d (list %v): DecodeZAP error %v, dynamic.AppendJSON error %v; want them to succeed: %v", depth, inList, derr, jerr, want)
			}
			if _, err := dynamic.AppendMessage(nil, st, check.RecordJSON(nil, root, st)); (err == nil) != want {
				t.Errorf("depth %d (list %v): dynamic.AppendMessage error %v, want success %v", depth, inList, err, want)
			}
		}
	}
}
