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
