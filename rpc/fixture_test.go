package rpc

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
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

// loadFixtures reads ../shared/zap/fixtures/rpc.json (relative to the
// module root) or skips the test when the shared folder is absent.
func loadFixtures(t testing.TB) *rpcFixtures {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("skipping: go.mod not found above the package directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "zap", "fixtures", "rpc.json")
	data, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		t.Skipf("skipping: %s absent", p)
	}
	if err != nil {
		t.Fatal(err)
	}
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
