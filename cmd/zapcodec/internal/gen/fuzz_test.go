package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// FuzzGenerate: every schema the parser accepts generates Go that parses
// and formats (a *FormatError is a generator bug), declares no name twice
// and type-checks against packages codec and rpc, or is refused with a
// positioned *schema.Error (a Go name collision); the schema text of each
// of its interfaces (ServiceSchema) parses alone into the same interface
// and layouts.
func FuzzGenerate(f *testing.F) {
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
	f.Add([]byte("package p\ntype q = bytes_fixed[2]\nstruct A\n\tX list<list<list<q>>>\n\tY list<list<A>>\ninterface S\n"))
	// Import what generated code imports before fuzzing. typeCheck
	// makes its importer the first time (go list -export, or, failing
	// that, packages from source: rpc brings net and crypto/tls), and
	// under -fuzz the first input that imported from source took more
	// than the 10 s a fuzz worker gives one input on a loaded machine:
	// the worker panicked ("fuzzing process hung or terminated
	// unexpectedly" on seed#0) and the target never fuzzed. Done here,
	// once per worker process, it is outside any input's time.
	_, imp := sources()
	for _, path := range generatedImports {
		if _, err := imp.Import(path); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := schema.Parse("f.zap", src)
		if err != nil {
			return
		}
		for _, it := range file.Interfaces {
			checkServiceSchema(t, file, it) // what a server reflects parses alone, the same
		}
		files, err := Generate(file, Options{Package: "p"})
		for _, gf := range files {
			if name := redeclared(t, gf.Data); name != "" {
				t.Fatalf("generated Go declares %s twice (a collision checkNames missed):\n%s", name, src)
			}
		}
		var fe *FormatError
		if errors.As(err, &fe) {
			t.Fatalf("generated Go does not parse: %v\n%s", fe, fe.Src)
		}
		var se *schema.Error
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		if err == nil {
			if err := typeCheck(files); err != nil {
				t.Fatalf("generated Go does not compile: %v\n%s", err, src)
			}
		}
	})
}

// generatedImports are the packages generated code may import.
var generatedImports = []string{
	"context", "encoding", "encoding/binary", "errors", "io", "math", "slices", "unsafe",
	codecPath, rpcPath,
}

// sources returns the importer of all of typeCheck's calls, made once: it
// reads the packages' export data, which go list -export gives from the
// build cache, or, where that fails (no go command, export data of another
// format than this binary reads), it imports them from their source. From
// source, each test process type-checked rpc's dependencies (net,
// crypto/tls ...) again: about 3 s of the package's tests, and 35 s of
// them under -race.
var sources = sync.OnceValues(func() (*token.FileSet, types.Importer) {
	fset := token.NewFileSet()
	if imp := exportImporter(fset); imp != nil {
		return fset, imp
	}
	return fset, &cachedImporter{imp: importer.ForCompiler(fset, "source", nil), pkgs: map[string]*types.Package{}}
})

// exportImporter returns an importer of generatedImports and their
// dependencies from the export data go list -export names, or nil if go
// list fails or any of generatedImports does not import.
func exportImporter(fset *token.FileSet) types.Importer {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, generatedImports...)...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	files := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			files[path] = file
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("go list -export named no export data of %s", path)
		}
		return os.Open(file)
	}
	imp := &cachedImporter{imp: importer.ForCompiler(fset, "gc", lookup), pkgs: map[string]*types.Package{}}
	for _, path := range generatedImports {
		if _, err := imp.Import(path); err != nil {
			return nil
		}
	}
	return imp
}

// cachedImporter remembers the packages it imported by path: the source
// importer keeps them too but looks for each package's files on disk
// again at every import, which took most of a type check's time.
type cachedImporter struct {
	mu   sync.Mutex
	imp  types.Importer
	pkgs map[string]*types.Package
}

func (c *cachedImporter) Import(path string) (*types.Package, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pkgs[path]; ok {
		return p, nil
	}
	p, err := c.imp.Import(path)
	if err == nil {
		c.pkgs[path] = p
	}
	return p, err
}

// typeCheck type-checks the generated files as one package.
func typeCheck(files []File) error {
	fset, imp := sources()
	var afs []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f.Name, f.Data, 0)
		if err != nil {
			return err
		}
		afs = append(afs, af)
	}
	conf := types.Config{Importer: imp}
	_, err := conf.Check("p", fset, afs, nil)
	return err
}

// redeclared returns the first name the Go source src declares twice at
// top level (a type, function, constant or variable) or as a method of one
// type ("T.M"), or "" when there is none.
func redeclared(t *testing.T, src []byte) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "gen.go", src, 0)
	if err != nil {
		t.Fatalf("generated Go does not parse: %v", err)
	}
	seen := map[string]bool{}
	for _, d := range f.Decls {
		var names []string
		switch d := d.(type) {
		case *ast.FuncDecl:
			n := d.Name.Name
			if d.Recv != nil {
				typ := d.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					n = id.Name + "." + n
				}
			}
			names = append(names, n)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names = append(names, spec.Name.Name)
				case *ast.ValueSpec:
					for _, id := range spec.Names {
						if id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			}
		}
		for _, n := range names {
			if seen[n] {
				return n
			}
			seen[n] = true
		}
	}
	return ""
}
