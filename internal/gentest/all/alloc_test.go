//go:build !race

package all

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var sink uint64

// TestAllocs: AppendZAP into a buffer with room, and a warm DecodeZAP of the
// same message, allocate nothing for random records of every type.
func TestAllocs(t *testing.T) { check.Allocs(t, 9, types) }

func TestViewAllocs(t *testing.T) {
	k := Kitchen{
		Title: "t", Blob: []byte("b"), Bytes: []byte{1, 2, 3}, Words: []uint32{4, 5}, Longs: []uint64{6},
		Points: []Point{{1, 2}, {3, 4}}, Origin: &Point{7, 8}, Self: &Kitchen{Title: "inner", Tail: 9},
	}
	s := Sparse{Named: []string{"a", "bc"}, Raw: [][]byte{{1}, nil}, Floats: []float64{1.5}}
	km, sm := k.AppendZAP(nil), s.AppendZAP(nil)
	f := func() {
		v, _ := ReadKitchen(km)
		sink += uint64(len(v.Title())+len(v.Blob())+len(v.KeyBytes())) + uint64(v.Hash()[0]) + uint64(v.Tail())
		sink += uint64(v.Bytes().At(2)) + uint64(v.Words().At(1)) + v.Longs().At(0) + uint64(v.Origin().Y())
		for it := v.Points().Iter(); it.Next(); {
			sink += uint64(it.Value().X())
		}
		for it := v.Words().Iter(); it.Next(); {
			sink += uint64(it.Value())
		}
		sink += uint64(len(v.Self().Title())) + uint64(v.Self().Tail())
		w, _ := ReadSparse(sm)
		for it := w.Named().Iter(); it.Next(); {
			sink += uint64(len(it.Value()))
		}
		sink += uint64(len(w.Named().At(1))) + uint64(len(w.Raw().At(0))) + uint64(w.Floats().At(0))
	}
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("views: %v allocations, want 0", n)
	}
}

// TestDeepViewAllocs: the views of every list element type (scalars of each
// width, bytes_fixed, nested lists, lists of structs) allocate nothing.
func TestDeepViewAllocs(t *testing.T) {
	d := Deep{
		Bools: []bool{true, false}, Tiny: []int8{-1}, Shorts: []int16{-2, 3}, Reals: []float32{1.5},
		Quads: [][4]byte{{1, 2, 3, 4}}, Keys: [][16]byte{{9}}, Blobs: [][]byte{{1}, nil},
		Grid: [][]uint16{{1, 2}, nil, {3}}, Runs: [][]uint64{{7}}, Paths: [][]Point{{{1, 2}}},
		Words: [][][]string{{{"a", "bc"}}}, Pairs: []Pair{{A: 1, B: "x"}},
	}
	msg := d.AppendZAP(nil)
	f := func() {
		v, _ := ReadDeep(msg)
		if v.Bools().At(0) {
			sink++
		}
		sink += uint64(v.Tiny().At(0)) + uint64(v.Shorts().At(1)) + uint64(v.Reals().At(0))
		sink += uint64(v.Quads().At(0)[3]) + uint64(len(v.Quads().AtBytes(0))) + uint64(v.Keys().At(0)[0]) + uint64(len(v.Blobs().At(0)))
		for it := v.Grid().Iter(); it.Next(); {
			for in := it.Value().Iter(); in.Next(); {
				sink += uint64(in.Value())
			}
		}
		sink += uint64(v.Grid().At(2).At(0)) + v.Runs().At(0).At(0) + uint64(v.Paths().At(0).At(0).Y())
		sink += uint64(len(v.Words().At(0).At(0).At(1))) + uint64(v.Pairs().At(0).A())
		for it := v.Quads().Iter(); it.Next(); {
			sink += uint64(it.Value()[0])
		}
		for it := v.Bools().Iter(); it.Next(); {
			if it.Value() {
				sink++
			}
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

// TestDecodeViewAllocs: DecodeView allocates only the copies it makes:
// nothing into records that hold the same values already (warm), and one
// string for a Pair whose text it copies anew.
func TestDecodeViewAllocs(t *testing.T) {
	k := Kitchen{
		Title: "t", Blob: []byte("b"), Bytes: []byte{1, 2, 3}, Words: []uint32{4, 5}, Longs: []uint64{6},
		Points: []Point{{1, 2}, {3, 4}}, Origin: &Point{7, 8}, Self: &Kitchen{Title: "inner", Tail: 9},
	}
	d := Deep{
		Grid: [][]uint16{{1, 2}, nil, {3}}, Words: [][][]string{{{"a", "bc"}}}, Pairs: []Pair{{A: 1, B: "x"}},
		Blobs: [][]byte{{1}, nil}, Trees: [][]Kitchen{{{Title: "leaf"}}},
	}
	kv, err := ReadKitchen(k.AppendZAP(nil))
	if err != nil {
		t.Fatal(err)
	}
	dv, err := ReadDeep(d.AppendZAP(nil))
	if err != nil {
		t.Fatal(err)
	}
	var kr Kitchen
	var dr Deep
	warm := func() {
		if kr.DecodeView(kv) != nil || dr.DecodeView(dv) != nil {
			panic("DecodeView failed")
		}
	}
	warm()
	if n := testing.AllocsPerRun(100, warm); n != 0 {
		t.Errorf("warm DecodeView: %v allocations, want 0", n)
	}
	pv, err := ReadPair((&Pair{A: 1, B: "text"}).AppendZAP(nil))
	if err != nil {
		t.Fatal(err)
	}
	var p Pair
	fresh := func() {
		p.B = ""
		if p.DecodeView(pv) != nil {
			panic("DecodeView failed")
		}
	}
	if n := testing.AllocsPerRun(100, fresh); n != 1 {
		t.Errorf("DecodeView of a Pair whose text is new: %v allocations, want 1 (the string)", n)
	}
}
