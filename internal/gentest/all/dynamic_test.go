package all

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestDynamicDepthAgrees: package dynamic and DecodeZAP refuse nesting at
// the same depth, counted in records: a chain of 101 Kitchens (depths 0 to
// 100) decodes with both, one of 102 with neither, whether it nests
// through an object slot (Self) or through a list of records in a list of
// lists (Deep.Trees holds Kitchens, which hold Selfs). AppendMessage
// builds the message AppendZAP builds for the chain that decodes. dynamic
// stopped at 64 and counted each list level as one more, so it refused
// chains the generated code reads.
func TestDynamicDepthAgrees(t *testing.T) {
	src, err := os.ReadFile("../../../cmd/zapcodec/internal/gen/testdata/all.zap")
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Parse("all.zap", src)
	if err != nil {
		t.Fatal(err)
	}
	chain := func(n int) *Kitchen {
		k := &Kitchen{Tail: 1}
		for range n - 1 {
			k = &Kitchen{Self: k, Tail: 1}
		}
		return k
	}
	for _, tc := range []struct {
		name string
		typ  string
		rec  func(n int) depthRecord
		max  int // the longest chain that decodes
	}{
		{"Self", "Kitchen", func(n int) depthRecord { return chain(n) }, 101},
		// Deep is depth 0, the Kitchen in Trees[0][0] depth 1.
		{"Trees", "Deep", func(n int) depthRecord { return &Deep{Trees: [][]Kitchen{{*chain(n)}}} }, 100},
	} {
		s := f.Struct(tc.typ)
		for _, n := range []int{tc.max, tc.max + 1} {
			msg := tc.rec(n).AppendZAP(nil)
			genErr := tc.rec(1).DecodeZAP(msg)
			js, dynErr := dynamic.AppendJSON(nil, s, msg)
			if n == tc.max {
				if genErr != nil || dynErr != nil {
					t.Fatalf("%s, %d records: DecodeZAP %v, dynamic.AppendJSON %v", tc.name, n, genErr, dynErr)
				}
				back, err := dynamic.AppendMessage(nil, s, js)
				if err != nil || string(back) != string(msg) {
					t.Fatalf("%s, %d records: AppendMessage %v, or other bytes than AppendZAP's", tc.name, n, err)
				}
				continue
			}
			if !errors.Is(genErr, codec.ErrTooDeep) || dynErr == nil || !strings.Contains(dynErr.Error(), "deeper than") {
				t.Fatalf("%s, %d records: DecodeZAP %v, dynamic.AppendJSON %v; want both refused as too deep", tc.name, n, genErr, dynErr)
			}
		}
	}
}

// depthRecord is what TestDynamicDepthAgrees needs of a generated record.
type depthRecord interface {
	AppendZAP([]byte) []byte
	DecodeZAP([]byte) error
}

// sharedLongs builds a chain of k Kitchens (through Self) whose Longs
// lists all point at one list of n u64s: k paths to the same list.
func sharedLongs(t *testing.T, k, n int) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	l := b.StartList(0)
	for i := range n {
		l.AddUint64Element(uint64(i))
	}
	longs := l.Finish()
	var next codec.Ref
	for i := range k {
		o := b.StartObject(105)
		o.SetList(80, longs)
		if i > 0 {
			o.SetObject(100, next)
		}
		next = o.Finish()
	}
	b.SetRoot(next)
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestDynamicBudgetDiffers pins what the docs of both say of their
// budgets against shared objects (generated DecodeZAP: 6 bytes of Go
// memory per byte of input; dynamic.AppendJSON: 2 units, a value or a
// byte of data, per byte): every message a writer makes decodes with
// both, the costliest for each included; a message that shares its
// objects far enough fails with both; and in between they can disagree
// either way, since they count different things. 7 Nodes of 1 KiB along
// the 2^3 paths of a 3,112-byte message decode (7.3 KB of Go records,
// within 18.7 KB) but do not print (7.2 K units, over 6.3 K); a list of
// 1,000 u64s shared by 10 Kitchens (13,129 bytes) prints (10.6 K units,
// within 26.3 K) but does not decode (82 KB of Go memory, 80 KB of it
// []uint64, over 78.8 KB).
func TestDynamicBudgetDiffers(t *testing.T) {
	src, err := os.ReadFile("../../../cmd/zapcodec/internal/gen/testdata/all.zap")
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Parse("all.zap", src)
	if err != nil {
		t.Fatal(err)
	}
	type decoder interface{ DecodeZAP([]byte) error }
	both := func(rec decoder, typ string, msg []byte) (genErr, dynErr error) {
		_, dynErr = dynamic.AppendJSON(nil, f.Struct(typ), msg)
		return rec.DecodeZAP(msg), dynErr
	}
	shared := func(err error) bool {
		return err != nil && (errors.Is(err, codec.ErrShared) || strings.Contains(err.Error(), "more often than the message size allows"))
	}
	// Honest messages, the costliest for each budget among them.
	for _, tc := range []struct {
		name string
		typ  string
		rec  interface {
			decoder
			AppendZAP([]byte) []byte
		}
		fresh decoder
	}{
		{"empty bytes values", "Sparse", &Sparse{Raw: make([][]byte, 10000)}, new(Sparse)},
		{"empty nested lists", "Deep", &Deep{Grid: make([][]uint16, 10000)}, new(Deep)},
		{"bools", "Deep", &Deep{Bools: make([]bool, 10000)}, new(Deep)},
		{"u8 fields", "Scalars", &Scalars{Flag: true, Small: 1}, new(Scalars)},
		{"Kitchen chain", "Kitchen", &Kitchen{Self: &Kitchen{Self: &Kitchen{Title: "x"}}}, new(Kitchen)},
	} {
		if genErr, dynErr := both(tc.fresh, tc.typ, tc.rec.AppendZAP(nil)); genErr != nil || dynErr != nil {
			t.Errorf("%s: DecodeZAP %v, AppendJSON %v; want both to decode", tc.name, genErr, dynErr)
		}
	}
	// Shared far: both refuse.
	for _, tc := range []struct {
		name string
		msg  []byte
		rec  decoder
		typ  string
	}{
		{"Nodes along 2^13 paths", sharedNodes(t, 13), new(Node), "Node"},
		{"1,000 u64s in 100 Kitchens", sharedLongs(t, 100, 1000), new(Kitchen), "Kitchen"},
	} {
		if genErr, dynErr := both(tc.rec, tc.typ, tc.msg); !shared(genErr) || !shared(dynErr) {
			t.Errorf("%s: DecodeZAP %v, AppendJSON %v; want both refused as shared", tc.name, genErr, dynErr)
		}
	}
	// In between: either way.
	if genErr, dynErr := both(new(Node), "Node", sharedNodes(t, 3)); genErr != nil || !shared(dynErr) {
		t.Errorf("Nodes along 2^3 paths: DecodeZAP %v, AppendJSON %v; want it decoded, not printed", genErr, dynErr)
	}
	if genErr, dynErr := both(new(Kitchen), "Kitchen", sharedLongs(t, 10, 1000)); !shared(genErr) || dynErr != nil {
		t.Errorf("1,000 u64s in 10 Kitchens: DecodeZAP %v, AppendJSON %v; want it printed, not decoded", genErr, dynErr)
	}
}
