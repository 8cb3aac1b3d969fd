package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// wideSchema is a schema of struct Big with n fields of the types given,
// in turn, and a struct Box that nests and lists it.
func wideSchema(n int, types ...string) string {
	var b strings.Builder
	b.WriteString("package p\nstruct Big\n")
	for i := range n {
		fmt.Fprintf(&b, "    F%d %s\n", i, types[i%len(types)])
	}
	b.WriteString("struct Box\n    One Big\n    Many list<Big>\n")
	return b.String()
}

// TestWideRecordShape: the code of a record with many text and bytes fields
// grows with them only linearly where tools are slow on its shape. Its
// sums of lengths (SizeZAP, and a flat record's AppendZAP) were one binary
// expression of a term per field, which gofmt took quadratic time to
// print (32,000 text fields: 19 s to generate, more than half of it
// there; 50,000 over ten minutes); its decodes held each value in a variable of its own, all live
// at once across a block per field, which the Go compiler took quadratic
// time and memory for (2,000 text fields: 170 s and 6 GB to compile). Now
// no sum has more than maxSumTerms terms and no function declares more
// than a few variables; the code type-checks, with or without fixed fields
// beside the text (which decide the shape of the decode's start).
func TestWideRecordShape(t *testing.T) {
	t.Parallel()
	const n = 5 * maxHeldTails
	for _, kinds := range [][]string{{"text", "bytes"}, {"text", "u32", "bytes", "bytes_fixed[3]"}} {
		t.Run(strings.Join(kinds, ","), func(t *testing.T) {
			f, err := schema.Parse("wide.zap", []byte(wideSchema(n, kinds...)))
			if err != nil {
				t.Fatal(err)
			}
			files, err := Generate(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := typeCheck(files); err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), "wide.zap.go", files[0].Data, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				name := fn.Name.Name
				if fn.Recv != nil {
					name = types.ExprString(fn.Recv.List[0].Type) + "." + name
				}
				vars := 0
				ast.Inspect(fn, func(x ast.Node) bool {
					switch x := x.(type) {
					case *ast.BinaryExpr:
						if terms := sumTerms(x); terms > maxSumTerms {
							t.Errorf("%s: a sum of %d terms", name, terms)
						}
						return false // its operands are in the count
					case *ast.AssignStmt:
						if x.Tok == token.DEFINE {
							vars += len(x.Lhs)
						}
					case *ast.ValueSpec:
						vars += len(x.Names)
					}
					return true
				})
				if vars > 16 {
					t.Errorf("%s declares %d variables", name, vars)
				}
			}
		})
	}
}

// sumTerms counts the terms of the chain of "+" that x heads.
func sumTerms(x ast.Expr) int {
	b, ok := x.(*ast.BinaryExpr)
	if !ok || b.Op != token.ADD {
		return 1
	}
	return sumTerms(b.X) + sumTerms(b.Y)
}

// TestMaxFields: a struct of more than MaxFields fields is refused, at its
// name, saying the limit.
func TestMaxFields(t *testing.T) {
	t.Parallel()
	f, err := schema.Parse("wide.zap", []byte(wideSchema(MaxFields+1, "u8")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Generate(f, Options{})
	want := fmt.Sprintf("wide.zap:2:8: struct Big has %d fields; zapcodec gen takes at most %d (the Go compiler's time for a record's decode grows faster than its fields: split the struct)", MaxFields+1, MaxFields)
	if se := (*schema.Error)(nil); err == nil || err.Error() != want || !errors.As(err, &se) {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}
