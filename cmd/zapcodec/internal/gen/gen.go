package gen

import (
	"bytes"
	"fmt"
	"go/build"
	"go/format"
	"go/token"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Options controls generation. The zero value uses the schema's package name.
type Options struct {
	// Package is the Go package name of the output; "" means the schema's
	// package clause.
	Package string
}

// File is one generated Go file.
type File struct {
	Name   string // base name: "eth.zap.go" for "eth.zap"
	Source string // base name of the schema file it comes from
	Data   []byte // gofmt'd Go source
}

// FormatError reports generated source that go/format rejected (a bug in
// the generator). Src holds the unformatted output, to be written to
// Name+".broken" for inspection.
type FormatError struct {
	Name string
	Src  []byte
	Err  error
}

// Error returns "gen: formatting NAME: ERR".
func (e *FormatError) Error() string { return fmt.Sprintf("gen: formatting %s: %v", e.Name, e.Err) }

// Unwrap returns the go/format error.
func (e *FormatError) Unwrap() error { return e.Err }

// MaxFields is the most fields a struct may have for Generate. The
// generated code grows with a record's fields, but the Go compiler's
// time for one record's decode (one function holding every field) grows
// faster: 4,000 text fields took it 25 s of CPU and 1.2 GB, 2.5 times
// what 2,000 took.
const MaxFields = 4096

// Generate returns one Go file per schema file of f, in the order of
// f.Files; a schema file that declares no struct and no interface still
// gets a (nearly empty) file so that outputs track inputs. Errors: the
// package name is missing, not a Go identifier, or init (which no Go file
// can import); Go names collide (as a [*schema.Error]
// "file:line:col: message"); a struct has more than [MaxFields] fields (a
// [*schema.Error] too); a schema file's name gives an
// output name that go build ignores or compiles for one platform only
// ("_x.zap", "api_linux.zap": go help buildconstraint) or holds what a Go
// comment cannot (a control character, a byte order mark, invalid UTF-8);
// or a [*FormatError].
func Generate(f *schema.File, opt Options) ([]File, error) {
	pkg := opt.Package
	if pkg == "" {
		pkg = f.Package
	}
	if pkg == "" {
		return nil, fmt.Errorf("gen: no package name: add a package clause to the schema or pass -package")
	}
	if !token.IsIdentifier(pkg) || pkg == "_" {
		return nil, fmt.Errorf("gen: package name %q is not a Go identifier", pkg)
	}
	if pkg == "init" {
		return nil, fmt.Errorf("gen: package name %q cannot be imported (Go reserves init for functions)", pkg)
	}
	if err := checkNames(f); err != nil {
		return nil, err
	}
	for _, s := range f.Structs {
		if len(s.Fields) > MaxFields {
			return nil, &schema.Error{Pos: s.Pos, Msg: fmt.Sprintf("struct %s has %d fields; zapcodec gen takes at most %d (the Go compiler's time for a record's decode grows faster than its fields: split the struct)", s.Name, len(s.Fields), MaxFields)}
		}
	}
	nested, elem := uses(f)
	results := promised(f)
	var out []File
	seen := map[string]string{}
	for _, src := range f.Files {
		base := filepath.Base(src)
		name := strings.TrimSuffix(base, ".zap") + ".zap.go"
		if prev, ok := seen[name]; ok {
			return nil, fmt.Errorf("gen: schema files %s and %s would both write %s", prev, src, name)
		}
		seen[name] = src
		if !commentable(base) {
			return nil, fmt.Errorf("gen: schema file name %q holds a control character, a byte order mark or invalid UTF-8, which the generated file's header comment cannot: rename the schema file", src)
		}
		if !buildable(name) {
			return nil, fmt.Errorf("gen: schema file %s would write %s, which go build ignores or compiles for one platform only (a name starting with _ or ., or ending in _GOOS or _GOARCH: go help buildconstraint); rename the schema file", src, name)
		}
		g := &generator{f: f, pkg: pkg, source: src, imports: map[string]bool{}, nested: nested, elem: elem, results: results}
		raw := g.file()
		data, err := format.Source(raw)
		if err != nil {
			return nil, &FormatError{Name: name, Src: raw, Err: err}
		}
		out = append(out, File{Name: name, Source: base, Data: data})
	}
	return out, nil
}

// commentable reports whether s can stand in a Go line comment as it is:
// valid UTF-8 without control characters or byte order marks (a newline
// would end the comment, gofmt drops a carriage return).
func commentable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == 0xfeff })
}

// buildable reports whether go build compiles the Go file named name
// on every platform: its name does not start with "_" or "." (which the go
// command ignores) and has no _GOOS or _GOARCH suffix before its first dot
// ("api_linux.zap.go" builds on Linux only).
func buildable(name string) bool {
	ctxt := build.Context{
		GOOS: "zapcodec", GOARCH: "zapcodec", Compiler: "gc", // match no platform suffix
		OpenFile: func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("package p\n")), nil
		},
	}
	ok, err := ctxt.MatchFile(".", name)
	return ok && err == nil
}

// uses returns the structs of f nested as a field of some struct, and
// those that are the elements of some list (at any list depth).
func uses(f *schema.File) (nested, elem map[*schema.Struct]bool) {
	nested, elem = map[*schema.Struct]bool{}, map[*schema.Struct]bool{}
	for _, s := range f.Structs {
		for _, fl := range s.Fields {
			t := fl.Type
			if t.Kind == schema.KindStruct {
				nested[t.Struct] = true
			}
			for t.Kind == schema.KindList {
				t = t.Elem
				if t.Kind == schema.KindStruct {
					elem[t.Struct] = true
				}
			}
		}
	}
	return nested, elem
}

// promised returns the structs of f that get a typed promise (<T>Promise):
// the results of the methods with a Send<M> stub, which returns it, and
// the requests of those with an <M>On stub, which takes it.
func promised(f *schema.File) map[*schema.Struct]bool {
	out := map[*schema.Struct]bool{}
	for _, it := range f.Interfaces {
		results := pipelineResults(it)
		for _, m := range it.Methods {
			if sendStub(m) {
				out[m.Resp] = true
			}
			if onStub(m, results) {
				out[m.Req] = true
			}
		}
	}
	return out
}

// generator writes the Go file for one schema file.
type generator struct {
	f       *schema.File
	pkg     string
	source  string // schema file name as given
	imports map[string]bool
	body    bytes.Buffer
	// nested and elem hold the structs of the package (every file) that
	// some struct nests as a field or as list elements: only those need
	// the helpers a parent calls (zapObject, zapSize, zapDecode,
	// zapDecodeMessage).
	nested, elem map[*schema.Struct]bool
	// results holds the structs of the package that get a typed promise
	// (promised), written beside their records.
	results map[*schema.Struct]bool
}

func (g *generator) p(format string, args ...any) {
	fmt.Fprintf(&g.body, format, args...)
	g.body.WriteByte('\n')
}

func (g *generator) use(path string) { g.imports[path] = true }

func (g *generator) file() []byte {
	for _, s := range g.f.Structs {
		if s.Pos.Filename == g.source {
			g.record(s)
		}
	}
	for _, it := range g.f.Interfaces {
		if it.Pos.Filename == g.source {
			g.stubs(it)
		}
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "%s\n\n", Header(g.source))
	fmt.Fprintf(&h, "package %s\n\n", g.pkg)
	if len(g.imports) > 0 {
		paths := make([]string, 0, len(g.imports))
		for p := range g.imports {
			paths = append(paths, p)
		}
		isStd := func(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }
		sort.Slice(paths, func(i, j int) bool {
			if isStd(paths[i]) != isStd(paths[j]) {
				return isStd(paths[i])
			}
			return paths[i] < paths[j]
		})
		h.WriteString("import (\n")
		std := true
		for _, p := range paths {
			if std && !isStd(p) {
				std = false
				h.WriteString("\n") // standard library first, then modules
			}
			fmt.Fprintf(&h, "\t%q\n", p)
		}
		h.WriteString(")\n\n")
		if g.imports[codecPath] {
			h.WriteString("// This file needs version 2 of codec's API for generated code.\nconst _ = codec.GeneratedVersion2\n\n")
		}
	}
	h.Write(g.body.Bytes())
	return h.Bytes()
}

// Version is the generator's version, written into the header of every
// generated file. It goes up whenever the generated code changes shape
// (what a regenerated file would differ in), so a reader of a generated
// file can tell which generator wrote it.
const Version = 9

// Header returns the first line of the file generated from schema file
// source: "// Code generated by zapcodec gen vN from NAME. DO NOT EDIT.", in
// the form Go tools recognise as generated code.
func Header(source string) string {
	return fmt.Sprintf("// Code generated by zapcodec gen v%d from %s. DO NOT EDIT.", Version, filepath.Base(source))
}

const (
	codecPath = "github.com/zapcodec/zapcodec/codec"
	rpcPath   = "github.com/zapcodec/zapcodec/rpc"
)

// GoName maps a schema name to an exported Go name: the first letter is
// upper-cased ("getBalance" → "GetBalance"); a name starting with "_" gets
// an "X" prefix.
func GoName(s string) string {
	if s == "" {
		return s
	}
	c := s[0]
	switch {
	case 'a' <= c && c <= 'z':
		return string(c-'a'+'A') + s[1:]
	case 'A' <= c && c <= 'Z':
		return s
	}
	return "X" + s
}

// vetMethods are the method names whose signature go vet's stdmethods
// check requires whatever their parameters (MarshalJSON must be
// MarshalJSON() ([]byte, error), and so on); the names it checks only
// when the first parameter has a given type (Format, ReadFrom, Scan,
// Seek, WriteTo) are left out, since no generated method has such a
// parameter. A view accessor of that name is renamed (viewAccessor), and
// an interface method of that name is refused: its client method would
// have it.
var vetMethods = map[string]string{
	"As": "errors.As", "Is": "errors.Is", "Unwrap": "errors.Unwrap",
	"GobDecode": "gob.GobDecoder", "GobEncode": "gob.GobEncoder",
	"MarshalJSON": "json.Marshaler", "UnmarshalJSON": "json.Unmarshaler",
	"MarshalXML": "xml.Marshaler", "UnmarshalXML": "xml.Unmarshaler",
	"ReadByte": "io.ByteReader", "ReadRune": "io.RuneReader",
	"UnreadByte": "io.ByteScanner", "UnreadRune": "io.RuneScanner",
	"WriteByte": "io.ByteWriter",
}

// viewAccessor returns the name of the view accessor of the field whose Go
// name is n: n, or n+"Field" when n is a method name go vet checks the
// signature of (vetMethods), or Error or String, with which a text field's
// accessor would make every view an error or a fmt.Stringer.
func viewAccessor(n string) string {
	if _, ok := vetMethods[n]; ok || n == "Error" || n == "String" {
		return n + "Field"
	}
	return n
}

// recordMethods are the methods of every generated record type; a field
// may not share their names.
var recordMethods = []string{"AppendZAP", "SizeZAP", "DecodeZAP", "DecodeView", "AppendBinary", "MarshalBinary", "UnmarshalBinary"}

// checkNames reports the first Go name collision, in declaration order.
func checkNames(f *schema.File) error {
	type owner struct {
		what string
		pos  schema.Pos
	}
	// claimIn claims a Go name in one name space: the package's top-level
	// names, or the methods of one client type.
	claimIn := func(space map[string]owner, name, what string, pos schema.Pos) error {
		if prev, ok := space[name]; ok {
			return &schema.Error{Pos: pos, Msg: fmt.Sprintf("Go name %s of %s collides with %s at %s", name, what, prev.what, prev.pos)}
		}
		space[name] = owner{what, pos}
		return nil
	}
	top := map[string]owner{}
	results := promised(f)
	claim := func(name, what string, pos schema.Pos) error { return claimIn(top, name, what, pos) }
	for _, s := range f.Structs {
		t := GoName(s.Name)
		if err := claim(t, "struct "+s.Name, s.Pos); err != nil {
			return err
		}
	}
	for _, it := range f.Interfaces {
		if err := claim(GoName(it.Name), "interface "+it.Name, it.Pos); err != nil {
			return err
		}
	}
	for _, s := range f.Structs {
		t := GoName(s.Name)
		if err := claim(t+"View", "the view of struct "+s.Name, s.Pos); err != nil {
			return err
		}
		if err := claim("Read"+t, "the reader of struct "+s.Name, s.Pos); err != nil {
			return err
		}
		if results[s] {
			if err := claim(t+"Promise", "the promise of struct "+s.Name, s.Pos); err != nil {
				return err
			}
		}
		fields := map[string]*schema.Field{}
		for _, m := range recordMethods {
			fields[m] = nil
		}
		view := map[string]string{"IsNull": "method IsNull"}
		for _, fl := range s.Fields {
			n := GoName(fl.Name)
			if prev, ok := fields[n]; ok {
				if prev == nil {
					return &schema.Error{Pos: fl.Pos, Msg: fmt.Sprintf("field %s: Go name %s collides with the record method %s", fl.Name, n, n)}
				}
				return &schema.Error{Pos: fl.Pos, Msg: fmt.Sprintf("field %s: Go name %s collides with field %s at %s", fl.Name, n, prev.Name, prev.Pos)}
			}
			fields[n] = fl
			acc := []string{viewAccessor(n)}
			if k := fl.Type.Kind; k == schema.KindText || k == schema.KindBytesFixed {
				acc = append(acc, n+"Bytes")
			}
			for _, a := range acc {
				if prev, ok := view[a]; ok {
					return &schema.Error{Pos: fl.Pos, Msg: fmt.Sprintf("field %s: view accessor %s.%s collides with %s", fl.Name, t+"View", a, prev)}
				}
				view[a] = "the accessor of field " + fl.Name
			}
			if fl.Type.Kind == schema.KindList {
				lists, iters := listTypeNames(t, n, fl.Type)
				for lvl := range lists {
					what := "field " + s.Name + "." + fl.Name
					if lvl > 0 {
						what = fmt.Sprintf("the level-%d elements of field %s.%s", lvl+1, s.Name, fl.Name)
					}
					if err := claim(lists[lvl], "the list view of "+what, fl.Pos); err != nil {
						return err
					}
					if err := claim(iters[lvl], "the list iterator of "+what, fl.Pos); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, it := range f.Interfaces {
		i := GoName(it.Name)
		for _, n := range []struct{ name, what string }{
			{i + "Server", "the server interface of " + it.Name},
			{i + "Client", "the client of " + it.Name},
			{"Register" + i + "Server", "the server registration of " + it.Name},
			{"New" + i + "Client", "the client constructor of " + it.Name},
			{i + "ServiceName", "the service name of " + it.Name},
			{"Unimplemented" + i + "Server", "the unimplemented server of " + it.Name},
			{i + "MethodName", "the method names of " + it.Name},
		} {
			if err := claim(n.name, n.what, it.Pos); err != nil {
				return err
			}
		}
		// The client's methods: one per method, and the pipelined ones
		// pipelineStubs writes (Send<M>, <M>On).
		results := pipelineResults(it)
		client := map[string]owner{}
		methods := map[string]*schema.Method{}
		for _, m := range it.Methods {
			n := GoName(m.Name)
			if prev, ok := methods[n]; ok {
				return &schema.Error{Pos: m.Pos, Msg: fmt.Sprintf("method %s: Go name %s collides with method %s at %s", m.Name, n, prev.Name, prev.Pos)}
			}
			methods[n] = m
			if iface, ok := vetMethods[n]; ok {
				return &schema.Error{Pos: m.Pos, Msg: fmt.Sprintf("method %s: its client method %s would have a signature go vet rejects (%s has the method %s): rename the method", m.Name, n, iface, n)}
			}
			cm := []struct{ name, what string }{{n, "method " + it.Name + "." + m.Name}}
			if sendStub(m) {
				cm = append(cm, struct{ name, what string }{"Send" + n, "the pipelined send of method " + it.Name + "." + m.Name})
			}
			if onStub(m, results) {
				cm = append(cm, struct{ name, what string }{n + "On", "the pipelined call of method " + it.Name + "." + m.Name})
			}
			for _, c := range cm {
				if err := claimIn(client, i+"Client."+c.name, c.what, m.Pos); err != nil {
					return err
				}
			}
			if err := claim(i+n+"Ordinal", "the ordinal of method "+it.Name+"."+m.Name, m.Pos); err != nil {
				return err
			}
			if streaming(m) {
				for _, side := range []string{"Server", "Client"} {
					if err := claim(i+n+side+"Stream", "the "+strings.ToLower(side)+" stream of method "+it.Name+"."+m.Name, m.Pos); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
