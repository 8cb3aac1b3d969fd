package order

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Item": {
		New:  func() check.Record { return new(Item) },
		Read: func(b []byte) (any, error) { return ReadItem(b) },
	},
	"Address": {
		New:  func() check.Record { return new(Address) },
		Read: func(b []byte) (any, error) { return ReadAddress(b) },
	},
	"Order": {
		New:  func() check.Record { return new(Order) },
		Read: func(b []byte) (any, error) { return ReadOrder(b) },
	},
}

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 12, 2000, types) }

func TestAllocs(t *testing.T) { check.Allocs(t, 12, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../cmd/zapcodec/internal/gen/testdata/order.zap", 12, 500, types)
}
