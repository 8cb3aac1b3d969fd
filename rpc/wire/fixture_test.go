package wire

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/fixture"
)

type rpcFixtures = fixture.RPC

// loadFixtures reads the canonical fixtures/rpc.json (testdata/canonical).
func loadFixtures(t testing.TB) *rpcFixtures { return fixture.ReadRPC(t) }

func unhex(t testing.TB, s string) []byte { return fixture.Hex(t, s) }
