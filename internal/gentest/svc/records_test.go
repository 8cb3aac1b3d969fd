package svc

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Point": {
		New:  func() check.Record { return new(Point) },
		Read: func(b []byte) (any, error) { return ReadPoint(b) },
	},
	"Shape": {
		New:  func() check.Record { return new(Shape) },
		Read: func(b []byte) (any, error) { return ReadShape(b) },
	},
}

func TestFixtures(t *testing.T) { check.Fixtures(t, "service_ws.zap", types) }

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 12, 2000, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../testdata/canonical/schemas/more/service_ws.zap", 9, 300, types)
}
