package rpc

import (
	"encoding/hex"
	"encoding/json"
	"github.com/zapcodec/zapcodec/internal/fixture"
	"testing"
)

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
	Frames []struct {
		Name string `json:"name"`
		Dir  byte   `json:"dir"`
		Hex  string `json:"hex"`
	} `json:"frames"`
}

// loadFixtures reads the canonical fixtures/rpc.json (testdata/canonical).
func loadFixtures(t testing.TB) *rpcFixtures {
	t.Helper()
	data := fixture.Read(t, "fixtures/rpc.json")
	var f rpcFixtures
	if err := json.Unmarshal(data, &f); err != nil {
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
