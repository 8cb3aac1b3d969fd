//go:build !race

package lists

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var sink uint64

// TestAllocs: AppendZAP into a buffer with room, and a warm DecodeZAP of the
// same message, allocate nothing for random records of every type.
func TestAllocs(t *testing.T) { check.Allocs(t, 13, types) }

// TestViewAllocs: At and Iter of every list view allocate nothing.
func TestViewAllocs(t *testing.T) {
	m := Lists{
		U8s: []uint8{1}, U16s: []uint16{2}, U32s: []uint32{3}, U64s: []uint64{4}, I16s: []int16{-5},
		I32s: []int32{-6}, I64s: []int64{-7}, F32s: []float32{8.5}, F64s: []float64{9.5}, Bools: []bool{true},
		Texts: []string{"ten"}, Blobs: [][]byte{{11}}, Quads: [][4]byte{{12}}, Items: []Item{{Tag: 13, Name: "x"}},
	}
	msg := m.AppendZAP(nil)
	f := func() {
		v, _ := ReadLists(msg)
		sink += uint64(v.U8s().At(0)) + uint64(v.U16s().At(0)) + uint64(v.U32s().At(0)) + v.U64s().At(0)
		sink += uint64(v.I16s().At(0)) + uint64(v.I32s().At(0)) + uint64(v.I64s().At(0))
		sink += uint64(v.F32s().At(0)) + uint64(v.F64s().At(0)) + uint64(len(v.Texts().At(0))) + uint64(len(v.Blobs().At(0)))
		sink += uint64(v.Quads().At(0)[0]) + uint64(v.Items().At(0).Tag())
		if v.Bools().At(0) {
			sink++
		}
		for it := v.U64s().Iter(); it.Next(); {
			sink += it.Value()
		}
		for it := v.Texts().Iter(); it.Next(); {
			sink += uint64(len(it.Value()))
		}
		for it := v.Items().Iter(); it.Next(); {
			sink += uint64(len(it.Value().Name()))
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
