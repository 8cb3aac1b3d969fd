package evolve

import (
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evnew"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evold"
)

const (
	oldSchema = "../../../cmd/zapcodec/internal/gen/testdata/evolve_old.zap"
	newSchema = "../../../cmd/zapcodec/internal/gen/testdata/evolve_new.zap"
)

var oldTypes = map[string]check.Type{
	"Leaf": {New: func() check.Record { return new(evold.Leaf) }, Read: func(b []byte) (any, error) { return evold.ReadLeaf(b) }},
	"Rec":  {New: func() check.Record { return new(evold.Rec) }, Read: func(b []byte) (any, error) { return evold.ReadRec(b) }},
}

var newTypes = map[string]check.Type{
	"Leaf": {New: func() check.Record { return new(evnew.Leaf) }, Read: func(b []byte) (any, error) { return evnew.ReadLeaf(b) }},
	"Rec":  {New: func() check.Record { return new(evnew.Rec) }, Read: func(b []byte) (any, error) { return evnew.ReadRec(b) }},
}

// messages returns n random messages of each type in types (seeded).
func messages(seed uint64, n int, types map[string]check.Type) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed))
	var msgs [][]byte
	for _, name := range []string{"Leaf", "Rec"} {
		for range n {
			msgs = append(msgs, check.RandomRecord(r, types[name]).AppendZAP(nil))
		}
	}
	return msgs
}

// FuzzOldReaders: the three readers of the old schema agree on arbitrary
// bytes, starting from messages of both schemas (see check.DiffRead).
func FuzzOldReaders(f *testing.F) {
	check.FuzzRead(f, oldSchema, 41, oldTypes, messages(42, 4, newTypes)...)
}

// FuzzNewReaders: the three readers of the new schema agree on arbitrary
// bytes, starting from messages of both schemas.
func FuzzNewReaders(f *testing.F) {
	check.FuzzRead(f, newSchema, 43, newTypes, messages(44, 4, oldTypes)...)
}

// FuzzOldEdits: the three readers of the old schema agree on messages of
// the new one with a few bytes set (see check.FuzzReadEdits).
func FuzzOldEdits(f *testing.F) { check.FuzzReadEdits(f, oldSchema, oldTypes, newTypes) }

// FuzzNewEdits: the three readers of the new schema agree on messages of
// the old one with a few bytes set.
func FuzzNewEdits(f *testing.F) { check.FuzzReadEdits(f, newSchema, newTypes, oldTypes) }

// TestReadersAcrossVersions: DecodeZAP, the views and package dynamic of
// one schema agree on the messages the other writes.
func TestReadersAcrossVersions(t *testing.T) {
	for _, c := range []struct {
		name    string
		readers map[string]check.Type
		schema  string
		writers map[string]check.Type
		seed    uint64
	}{
		{"old reads new", oldTypes, oldSchema, newTypes, 45},
		{"new reads old", newTypes, newSchema, oldTypes, 46},
	} {
		structs := check.Structs(t, c.schema, c.readers)
		for i, msg := range messages(c.seed, 300, c.writers) {
			if d := check.DiffRead(msg, c.readers, structs); d != "" {
				t.Fatalf("%s #%d: %s\n%x", c.name, i, d, msg)
			}
		}
	}
}

// TestWriters: AppendZAP, package dynamic and codec.Builder write the same
// bytes for records of both schemas, which read back alike.
func TestWriters(t *testing.T) {
	check.Writers(t, oldSchema, 47, 300, oldTypes)
	check.Writers(t, newSchema, 48, 300, newTypes)
}
