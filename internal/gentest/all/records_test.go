package all

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Empties": {
		New:  func() check.Record { return new(Empties) },
		Read: func(b []byte) (any, error) { return ReadEmpties(b) },
	},
	"Scalars": {
		New:  func() check.Record { return new(Scalars) },
		Read: func(b []byte) (any, error) { return ReadScalars(b) },
	},
	"Point": {
		New:  func() check.Record { return new(Point) },
		Read: func(b []byte) (any, error) { return ReadPoint(b) },
	},
	"Kitchen": {
		New:  func() check.Record { return new(Kitchen) },
		Read: func(b []byte) (any, error) { return ReadKitchen(b) },
	},
	"Pair": {
		New:  func() check.Record { return new(Pair) },
		Read: func(b []byte) (any, error) { return ReadPair(b) },
	},
	"Sparse": {
		New:  func() check.Record { return new(Sparse) },
		Read: func(b []byte) (any, error) { return ReadSparse(b) },
	},
	"Deep": {
		New:  func() check.Record { return new(Deep) },
		Read: func(b []byte) (any, error) { return ReadDeep(b) },
	},
	"Empty": {
		New:  func() check.Record { return new(Empty) },
		Read: func(b []byte) (any, error) { return ReadEmpty(b) },
	},
	"Node": {
		New:  func() check.Record { return new(Node) },
		Read: func(b []byte) (any, error) { return ReadNode(b) },
	},
	"Block": {
		New:  func() check.Record { return new(Block) },
		Read: func(b []byte) (any, error) { return ReadBlock(b) },
	},
	"Blocks": {
		New:  func() check.Record { return new(Blocks) },
		Read: func(b []byte) (any, error) { return ReadBlocks(b) },
	},
	"Wide": {
		New:  func() check.Record { return new(Wide) },
		Read: func(b []byte) (any, error) { return ReadWide(b) },
	},
	"Broad": {
		New:  func() check.Record { return new(Broad) },
		Read: func(b []byte) (any, error) { return ReadBroad(b) },
	},
	"BroadBox": {
		New:  func() check.Record { return new(BroadBox) },
		Read: func(b []byte) (any, error) { return ReadBroadBox(b) },
	},
}

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 3, 2000, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../cmd/zapcodec/internal/gen/testdata/all.zap", 9, 300, types)
}
