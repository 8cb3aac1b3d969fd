package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestAwkwardNames: schema identifiers that are Go keywords, predeclared
// identifiers, names of the packages a generated file imports, or names
// of what gen itself declares (views, readers, list types, iterators,
// pools, methods of records, views, lists and stream types) either
// generate Go that type-checks or are refused with a positioned
// *schema.Error, as a struct, a field of each kind, a list field, an
// interface and a method.
func TestAwkwardNames(t *testing.T) {
	t.Parallel()
	var names []string
	for tok := token.BREAK; tok <= token.VAR; tok++ {
		names = append(names, tok.String())
	}
	names = append(names,
		"bool", "string", "error", "int", "byte", "rune", "any", "nil", "true", "iota", "len", "cap", "new", "make", "append", "copy", "min", "max", "clear", "panic", "unsafe",
		"codec", "rpc", "binary", "context", "encoding", "errors", "io", "math", "slices", "sync",
		"m", "v", "l", "it", "o", "b", "c", "s", "x", "p", "dst", "base", "root", "msg", "err", "ok", "n", "budget", "depth", "ctx", "req", "resp", "out", "impl", "opts", "in", "bp", "buf", "st", "init",
		"view", "read", "list", "iter", "elem", "value", "index", "next", "at", "atBytes", "bytes", "len", "isNull", "stream", "send", "recv", "closeSend", "closeAndRecv", "zapObject", "zapSize", "zapDecode", "zapAppend", "zapDecodeMessage",
		"_", "__", "_x", "X_", "Ordinal", "Server", "Client", "ServiceName", "Pool",
	)
	for _, n := range names {
		for _, src := range []string{
			fmt.Sprintf("package p\nstruct %s\n    %s u32\n    y text\n", n, n),
			fmt.Sprintf("package p\nstruct T\n    %s list<list<T>>\n    z text\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s T\n    w bytes_fixed[2]\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s text\n    q list<bytes_fixed[2]>\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s bytes_fixed[3]\n    q list<text>\n", n),
			fmt.Sprintf("package p\nstruct T\n    a u8\ninterface %s\n    %s(req: T) returns (resp: T)\n    get(req: T) returns (stream T)\n", n, n),
			fmt.Sprintf("package p\nstruct T\n    a u8\ninterface S\n    %s(stream T) returns (stream T)\n    put(req: T) returns (resp: T)\n", n),
		} {
			f, err := schema.Parse("t.zap", []byte(src))
			if err != nil {
				continue // the schema language does not take it
			}
			files, err := Generate(f, Options{})
			var se *schema.Error
			if err != nil {
				if !errors.As(err, &se) {
					t.Errorf("%q: %v (%T), want a *schema.Error", src, err, err)
				}
				continue
			}
			if err := typeCheck(files); err != nil {
				t.Errorf("generated Go does not compile: %v\n%s", err, src)
			}
		}
	}
}

// TestVetMethodNames: a field whose Go name is a method go vet checks the
// signature of (MarshalJSON, UnmarshalJSON, Unwrap, Is ...) gave the view
// an accessor of that name with the wrong signature, which go vet
// reports in the generated file; a text field named error or string gave
// every view an Error() string or String() string method, making it an
// error or a fmt.Stringer. Such accessors are renamed F+"Field", for every
// kind of field, and an interface method of such a name (its client
// method would have it) is refused with a positioned *schema.Error.
func TestVetMethodNames(t *testing.T) {
	t.Parallel()
	kinds := []string{"u32", "text", "bytes", "bytes_fixed[2]", "T", "list<T>", "list<text>"}
	names := []string{"error", "string"}
	for n := range vetMethods {
		names = append(names, strings.ToLower(n[:1])+n[1:])
	}
	sort.Strings(names)
	for _, name := range names {
		for _, kind := range kinds {
			src := fmt.Sprintf("package p\nstruct T\n    %s %s\n    y u8\n", name, kind)
			f, err := schema.Parse("t.zap", []byte(src))
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			files, err := Generate(f, Options{})
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			if err := typeCheck(files); err != nil {
				t.Fatalf("generated Go does not compile: %v\n%s", err, src)
			}
			af, err := parser.ParseFile(token.NewFileSet(), files[0].Name, files[0].Data, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := GoName(name) + "Field"
			found := false
			for _, d := range af.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv == nil {
					continue
				}
				m := fd.Name.Name
				if _, vet := vetMethods[m]; vet || m == "Error" || m == "String" {
					t.Errorf("field %s %s: generated method %s", name, kind, m)
				}
				found = found || m == want
			}
			if !found {
				t.Errorf("field %s %s: no view accessor %s", name, kind, want)
			}
		}
		src := fmt.Sprintf("package p\nstruct T\n    a u8\ninterface S\n    get(req: T) returns (resp: T)\n    %s(req: T) returns (resp: T)\n", name)
		f, err := schema.Parse("t.zap", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		files, err := Generate(f, Options{})
		if _, vet := vetMethods[GoName(name)]; !vet {
			if err != nil {
				t.Errorf("method %s: %v", name, err)
			}
			continue
		}
		var se *schema.Error
		if !errors.As(err, &se) || se.Pos.Line != 6 || !strings.Contains(se.Msg, "go vet") {
			t.Errorf("method %s: %v (%d files), want a *schema.Error at line 6 naming go vet", name, err, len(files))
		}
	}
}
