package gen

import (
	"go/ast"
	"go/parser"
	"go/types"
	"strings"
	"testing"
)

// TestStreamTypesHaveNoUnusedFields: every typed stream carried both a
// send and a receive buffer, so the server's side of a server stream (it
// only sends) and the sides that only receive kept a 24-byte slice that
// nothing used. Every field of every stream type of streams.zap (a stream
// each way, both ways, with and without a request and a result) must now
// be read or written by the generated code.
func TestStreamTypesHaveNoUnusedFields(t *testing.T) {
	file := generate(t, "testdata/streams.zap", "")
	fset, imp := sources()
	af, err := parser.ParseFile(fset, file.Name, file.Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check("p", fset, []*ast.File{af}, info)
	if err != nil {
		t.Fatal(err)
	}
	used := map[types.Object]bool{}
	for _, sel := range info.Selections {
		if sel.Kind() == types.FieldVal {
			used[sel.Obj()] = true
		}
	}
	streams := 0
	for _, name := range pkg.Scope().Names() {
		if !strings.HasSuffix(name, "Stream") {
			continue
		}
		st, ok := pkg.Scope().Lookup(name).Type().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		streams++
		for i := range st.NumFields() {
			if f := st.Field(i); !used[f] {
				t.Errorf("%s.%s is never used", name, f.Name())
			}
		}
	}
	if streams != 10 {
		t.Fatalf("%d stream types, want 10 (two per streaming method)", streams)
	}
}
