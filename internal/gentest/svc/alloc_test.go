//go:build !race

package svc

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var sink uint64

// TestAllocs: AppendZAP into a buffer with room, and a warm DecodeZAP of the
// same message, allocate nothing for random records of every type.
func TestAllocs(t *testing.T) { check.Allocs(t, 14, types) }

// TestViewAllocs: the Shape view (nested Point, list<u32>) allocates nothing.
func TestViewAllocs(t *testing.T) {
	m := Shape{ID: 3, Origin: &Point{X: -5, Y: 7}, Tags: []uint32{1, 2, 3}, Label: "tri"}
	msg := m.AppendZAP(nil)
	f := func() {
		v, _ := ReadShape(msg)
		sink += uint64(v.ID()) + uint64(v.Origin().Y()) + uint64(v.Tags().At(2)) + uint64(len(v.Label()))
		it := v.Tags().Iter()
		for it.Next() {
			sink += uint64(it.Value())
		}
	}
	f()
	if sink == 0 {
		t.Fatal("nothing read")
	}
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("views: %v allocations, want 0", n)
	}
}
