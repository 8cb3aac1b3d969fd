package ethzap

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"GetBalanceRequest": {
		New:  func() check.Record { return new(GetBalanceRequest) },
		Read: func(b []byte) (any, error) { return ReadGetBalanceRequest(b) },
	},
	"GetBalanceResponse": {
		New:  func() check.Record { return new(GetBalanceResponse) },
		Read: func(b []byte) (any, error) { return ReadGetBalanceResponse(b) },
	},
	"LogFilter": {
		New:  func() check.Record { return new(LogFilter) },
		Read: func(b []byte) (any, error) { return ReadLogFilter(b) },
	},
	"Log": {
		New:  func() check.Record { return new(Log) },
		Read: func(b []byte) (any, error) { return ReadLog(b) },
	},
	"Logs": {
		New:  func() check.Record { return new(Logs) },
		Read: func(b []byte) (any, error) { return ReadLogs(b) },
	},
}

func TestFixtures(t *testing.T) { check.Fixtures(t, "eth.zap", types) }

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 1, 3000, types) }

func fixtureRequest() GetBalanceRequest {
	r := GetBalanceRequest{Block: 19_000_000, ID: 1, Method: "eth_getBalance"}
	for i := range r.Account {
		r.Account[i] = 0xa0 + byte(i)
	}
	return r
}

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../eth.zap", 9, 300, types)
}
