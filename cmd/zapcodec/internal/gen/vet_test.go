package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// oddSchemas are schemas the parser takes that are awkward for a
// generator: names that are Go keywords, predeclared identifiers or the
// names of generated methods (renamed, not refused), long names, deep and
// recursive nesting, comments in odd places and holding what Go comments
// treat specially, CRLF line endings and a byte order mark, and records
// that take each path of the generated decoders.
var oddSchemas = map[string]string{
	"keywords": `package p
struct T
    type u32
    func text
    range list<T>
    map T
    go bytes
    select bytes_fixed[3]
    defer list<list<text>>
    chan list<bytes>
interface I
    type(req: T) returns (resp: T)
    func(stream T) returns (stream T)
    range()
`,
	"predeclared": `package p
struct string
    int u8
    error text
    nil T
    len list<u16>
    true bool
    iota i64
struct T
    append f32
    copy f64
    make list<string>
    new string
`,
	"methodnames": `package p
struct T
    reset u32
    string text
    error bytes
    marshalJSON text
    unmarshalJSON u8
    unwrap T
    is list<T>
    format bytes_fixed[2]
    writeTo text
    readFrom u64
    scan u8
`,
	"recursive": `package p
struct A
    b B
    as list<A>
    deep list<list<list<list<list<B>>>>>
struct B
    a A
    self B
    pairs list<list<A>>
struct Leaf {}
struct Holder
    leaf Leaf
    leaves list<Leaf>
    n u8
`,
	"long": "package p\nstruct " + strings.Repeat("Long", 80) + "\n    " + strings.Repeat("field", 60) + " text\n    " + strings.Repeat("list", 60) + " list<" + strings.Repeat("Long", 80) + ">\n" +
		"interface " + strings.Repeat("Svc", 50) + "\n    " + strings.Repeat("call", 50) + "(req: " + strings.Repeat("Long", 80) + ") returns (resp: " + strings.Repeat("Long", 80) + ")\n",
	"comments": `# A doc comment with */ and /* and a backtick ` + "`" + ` and %d %s %v.
#go:build ignore
#line 1 "x.go"
package p # after the package
# go:generate rm -rf /
struct T # after the name
    # Deprecated: a field doc.
    a u32 # trailing %!s(MISSING) "quoted" \n
    # between fields

    b text    #
#  at column one, inside the struct
    c list<T> #go:noinline
struct U {   # after a brace
    x u8 @0  # after an offset
    # before the brace
}            # after the closing brace
interface S { # after the interface brace
    # before a method
    get(req: T) returns (resp: U) # after a method
}
`,
	"crlf": "\ufeffpackage p\r\n# a comment\r\nstruct T\r\n    a u32\r\n    b text\r\n    c list<T>\r\n\r\nstruct U {\r\n    x u8 @0\r\n    y bytes @8\r\n}\r\ninterface S {\r\n    get(req: T) returns (resp: U)\r\n    put(req: U)\r\n}\r\n",
	"wide": `package p
type k = bytes_fixed[8]
struct Wide
    a text
    b text
    c bytes
    d text
    e bytes
    f text
    g text
    n u32
    h bytes
    i k
struct Outer
    w Wide
    ws list<Wide>
interface S
    get(req: Wide) returns (resp: Wide)
`,
	"large": `package p
struct T
    b bytes_fixed[16777200]
    c text
struct U
    l list<bytes_fixed[16777216]>
    t list<T>
    x T
`,
	"empty": `package p
struct E {}
struct F
interface None
interface Only
    ping()
`,
	"streams": `package p
struct M
    v u64
    s text
interface S {
    both(stream M) returns (stream M)
    up(stream M) returns (resp: M)
    down(req: M) returns (stream M)
    downNoReq() returns (stream M)
    upNoResp(stream M)
}
`,
}

// TestOddSchemasVet generates each schema of oddSchemas into a package of
// a module of its own, which requires this one (a replace directive), and
// runs go vet and go build over them all: the generated code must build
// and vet clean, as a user's would, not only type-check (TestAwkwardNames,
// FuzzGenerate).
func TestOddSchemasVet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module oddschemas\n\ngo 1.24\n\nrequire github.com/zapcodec/zapcodec v0.0.0\n\nreplace github.com/zapcodec/zapcodec => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, src := range oddSchemas {
		f, err := schema.Parse(name+".zap", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		files, err := Generate(f, Options{Package: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pkg := filepath.Join(dir, name)
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, gf := range files {
			if err := os.WriteFile(filepath.Join(pkg, gf.Name), gf.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// go vet type-checks the packages; go build compiles them too.
	for _, verb := range []string{"vet", "build"} {
		cmd := exec.Command(goCmd, verb, "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the generated packages: %v\n%s", verb, err, out)
		}
	}
}
