package kitchen

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Item": {
		New:  func() check.Record { return new(Item) },
		Read: func(b []byte) (any, error) { return ReadItem(b) },
	},
	"Everything": {
		New:  func() check.Record { return new(Everything) },
		Read: func(b []byte) (any, error) { return ReadEverything(b) },
	},
}

func TestFixtures(t *testing.T) { check.Fixtures(t, "kitchen.zap", types) }

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 2, 2000, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../testdata/canonical/schemas/kitchen.zap", 9, 300, types)
}
