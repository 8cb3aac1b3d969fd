package kitchen

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

const schemaFile = "../../../testdata/canonical/schemas/kitchen.zap"

// FuzzReaders: on arbitrary bytes, DecodeZAP, the views and package
// dynamic agree field by field (see check.DiffRead).
func FuzzReaders(f *testing.F) { check.FuzzRead(f, schemaFile, 31, types) }

// FuzzEdits is FuzzReaders over messages of random records with a few
// bytes set (see check.FuzzReadEdits).
func FuzzEdits(f *testing.F) { check.FuzzReadEdits(f, schemaFile, types, nil) }

// FuzzWriters: AppendZAP, dynamic.AppendMessage and codec.Builder write
// the same bytes for random records, which read back alike (see
// check.DiffWrite).
func FuzzWriters(f *testing.F) { check.FuzzWrite(f, schemaFile, types) }

// TestWriters is FuzzWriters over more records.
func TestWriters(t *testing.T) { check.Writers(t, schemaFile, 31, 500, types) }
