package wire

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/zapcodec/zapcodec/internal/fixture"
)

// rpcFixtures is the part of the canonical fixtures/rpc.json these tests
// read: envelopes the canonical runtime built, with their inputs.
type rpcFixtures struct {
	Envelopes []struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
		In   struct {
			Cap       string `json:"cap"`
			Method    uint32 `json:"method"`
			Payload   string `json:"payload"`
			PromiseID uint32 `json:"promise_id"`
			Target    uint32 `json:"target"`
			Body      string `json:"body"`
			Status    uint32 `json:"status"`
		} `json:"in"`
		Hex string `json:"hex"`
	} `json:"envelopes"`
}

// loadFixtures reads the canonical fixtures/rpc.json (testdata/canonical).
func loadFixtures(t testing.TB) *rpcFixtures {
	t.Helper()
	var f rpcFixtures
	if err := json.Unmarshal(fixture.Read(t, "fixtures/rpc.json"), &f); err != nil {
		t.Fatalf("rpc.json: %v", err)
	}
	return &f
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}
