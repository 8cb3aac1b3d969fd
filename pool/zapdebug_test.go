//go:build zapdebug

package pool_test

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/pool"
)

// TestZapdebugTagPoisons: built with -tags zapdebug, Put poisons without
// any test switch (poison.Set) having turned it on: the tag alone does it,
// as the package doc promises.
func TestZapdebugTagPoisons(t *testing.T) {
	var p pool.SizedPool
	b := p.Get(200, 0)
	copy(b.B, "secret")
	stale := b.B[:cap(b.B)]
	p.Put(b)
	for i, c := range stale {
		if c != poison.Byte {
			t.Fatalf("byte %d is %#x after Put, want %#x", i, c, poison.Byte)
		}
	}
}
