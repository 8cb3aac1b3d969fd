package lists

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Item": {
		New:  func() check.Record { return new(Item) },
		Read: func(b []byte) (any, error) { return ReadItem(b) },
	},
	"Lists": {
		New:  func() check.Record { return new(Lists) },
		Read: func(b []byte) (any, error) { return ReadLists(b) },
	},
}

func TestFixtures(t *testing.T) { check.Fixtures(t, "lists.zap", types) }

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 11, 2000, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../testdata/canonical/schemas/more/lists.zap", 9, 300, types)
}
