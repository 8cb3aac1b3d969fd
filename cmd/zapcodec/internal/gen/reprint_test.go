package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// checkServiceSchema fails t unless ServiceSchema(f, it) parses alone
// into the same interface (names, ordinals, parameters, streams) over
// structs laid out as f lays them out (every field at its offset, with
// its type, every struct its size), in f's package.
func checkServiceSchema(t testing.TB, f *schema.File, it *schema.Interface) {
	t.Helper()
	src := ServiceSchema(f, it)
	g, err := schema.Parse("reflected.zap", []byte(src))
	if err != nil {
		t.Fatalf("interface %s: the re-print does not parse: %v\n%s", it.Name, err, src)
	}
	if g.Package != f.Package || len(g.Interfaces) != 1 || g.Interfaces[0].Name != it.Name {
		t.Fatalf("interface %s: the re-print declares package %q and %d interfaces:\n%s", it.Name, g.Package, len(g.Interfaces), src)
	}
	if got, want := describeInterface(g.Interfaces[0]), describeInterface(it); got != want {
		t.Fatalf("interface %s re-printed:\n%s\nwant:\n%s\nsource:\n%s", it.Name, got, want, src)
	}
}

// describeInterface writes out an interface, its methods and, once each,
// the layout of every struct they reach.
func describeInterface(it *schema.Interface) string {
	var b strings.Builder
	seen := map[string]bool{}
	var st func(s *schema.Struct)
	st = func(s *schema.Struct) {
		if s == nil || seen[s.Name] {
			return
		}
		seen[s.Name] = true
		fmt.Fprintf(&b, "struct %s size %d\n", s.Name, s.Size)
		for _, fl := range s.Fields {
			fmt.Fprintf(&b, "  %s %s @%d width %d\n", fl.Name, fl.Type, fl.Offset, fl.Width)
		}
		for _, fl := range s.Fields {
			t := fl.Type
			for t.Kind == schema.KindList {
				t = t.Elem
			}
			st(t.Struct)
		}
	}
	fmt.Fprintf(&b, "interface %s\n", it.Name)
	for _, m := range it.Methods {
		var req, resp string
		if m.Req != nil {
			req = m.Req.Name
		}
		if m.Resp != nil {
			resp = m.Resp.Name
		}
		fmt.Fprintf(&b, "  %d %s(%s %s %v) (%s %s %v)\n", m.Ordinal, m.Name, m.ReqName, req, m.ReqStream, m.RespName, resp, m.RespStream)
	}
	for _, m := range it.Methods {
		st(m.Req)
		st(m.Resp)
	}
	return b.String()
}

// TestServiceSchema: the schema each interface of every committed target
// reflects parses alone into the same interface and layouts.
func TestServiceSchema(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/*.zap")
	for _, tt := range targets {
		paths = append(paths, tt.schema)
	}
	n := 0
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := schema.Parse(filepath.Base(p), src)
		if err != nil {
			continue // testdata holds bad schemas too
		}
		for _, it := range f.Interfaces {
			checkServiceSchema(t, f, it)
			n++
		}
	}
	if n < 5 {
		t.Fatalf("only %d interfaces checked", n)
	}
}

// TestServiceSchemaParts: an interface whose types come from another
// file of the package, through aliases, with offsets given and gaps,
// streams with and without names, and structs it does not use beside it:
// its text holds what it uses, parses alone and lays out as the package
// does; the unused struct, the other interface and the comments stay out.
func TestServiceSchemaParts(t *testing.T) {
	t.Parallel()
	f, err := schema.ParseFiles(
		schema.Source{Name: "types.zap", Src: []byte("package p\n# secret note\ntype hash = bytes_fixed[32]\ntype ids = list<list<Leaf>>\nstruct Leaf\n    V u16\nstruct Req {\n    H hash @8\n    I ids\n    N Nest\n}\nstruct Nest\n    X u8\nstruct Unused\n    Y u64\n")},
		schema.Source{Name: "svc.zap", Src: []byte("interface S {\n    get(req: Req) returns (resp: Leaf)\n    up(stream Leaf) returns (out: stream Req)\n    ping()\n}\ninterface Other {\n    x(req: Unused)\n}\n")},
	)
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interface("S")
	checkServiceSchema(t, f, it)
	src := ServiceSchema(f, it)
	for _, out := range []string{"Unused", "Other", "secret", "hash", "ids", "#"} {
		if strings.Contains(src, out) {
			t.Errorf("the re-print holds %q:\n%s", out, src)
		}
	}
	want := `package p

struct Leaf {
    V u16 @0
}

struct Req {
    H bytes_fixed[32] @8
    I list<list<Leaf>> @40
    N Nest @48
}

struct Nest {
    X u8 @0
}

interface S {
    get(req: Req) returns (resp: Leaf)
    up(stream Leaf) returns (out: stream Req)
    ping()
}
`
	if src != want {
		t.Errorf("re-print:\n%s\nwant:\n%s", src, want)
	}
}

// FuzzServiceSchema: for every schema the parser accepts, the schema text
// of each interface (what a server reflects) parses alone into the same
// interface and layouts. (FuzzGenerate checks it too, among much slower
// checks.)
func FuzzServiceSchema(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.zap")
	for _, pattern := range []string{"*.zap", "more/*.zap"} {
		more, _ := filepath.Glob(filepath.Join(canonical, pattern))
		paths = append(paths, more...)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("package p\ntype q = bytes_fixed[2]\nstruct A\n\tX list<list<list<q>>>\n\tY list<list<A>> @40\ninterface S { m(stream A) returns (r: stream A); stream(stream: A) }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := schema.Parse("f.zap", src)
		if err != nil {
			return
		}
		for _, it := range file.Interfaces {
			checkServiceSchema(t, file, it)
		}
	})
}
