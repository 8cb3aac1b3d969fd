package schema

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and testdata/bad/*.golden")

// layout renders each struct as "Name=size Field@offset:width ...", one per line.
func layout(f *File) string {
	var b strings.Builder
	for _, s := range f.Structs {
		fmt.Fprintf(&b, "%s=%d", s.Name, s.Size)
		for _, fd := range s.Fields {
			fmt.Fprintf(&b, " %s@%d:%d", fd.Name, fd.Offset, fd.Width)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// dump renders the whole File, types included, for golden files.
func dump(f *File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %q files %q\n", f.Package, f.Files)
	for _, a := range f.Aliases {
		fmt.Fprintf(&b, "alias %s = %s at %s\n", a.Name, typeDump(a.Type), a.Pos)
	}
	for _, s := range f.Structs {
		fmt.Fprintf(&b, "struct %s size %d at %s\n", s.Name, s.Size, s.Pos)
		for _, fd := range s.Fields {
			fmt.Fprintf(&b, "    %s %s @%d width %d explicit %v at %s\n",
				fd.Name, typeDump(fd.Type), fd.Offset, fd.Width, fd.Explicit, fd.Pos)
		}
	}
	for _, it := range f.Interfaces {
		fmt.Fprintf(&b, "interface %s at %s\n", it.Name, it.Pos)
		for _, m := range it.Methods {
			fmt.Fprintf(&b, "    %d %s(%s %s) (%s %s) at %s\n", m.Ordinal, m.Name,
				m.ReqName, structName(m.Req), m.RespName, structName(m.Resp), m.Pos)
		}
	}
	return b.String()
}

// typeDump shows kind, size, element, struct and alias: "bytes_fixed[16](alias key)".
func typeDump(t *Type) string {
	s := t.Kind.String()
	switch t.Kind {
	case KindBytesFixed:
		s += fmt.Sprintf("[%d]", t.N)
	case KindList:
		s += "<" + typeDump(t.Elem) + ">"
	case KindStruct:
		s += " " + t.Struct.Name
	}
	if t.AliasName != "" {
		s += "(alias " + t.AliasName + ")"
	}
	return s
}

func structName(s *Struct) string {
	if s == nil {
		return "-"
	}
	return s.Name
}

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestGoldenSchemas(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.zap")
	if len(paths) == 0 {
		t.Fatal("no testdata/*.zap")
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(filepath.Base(path), src)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		checkInvariants(t, f)
		golden(t, strings.TrimSuffix(path, ".zap")+".golden", dump(f))
	}
}

func TestGoldenErrors(t *testing.T) {
	paths, _ := filepath.Glob("testdata/bad/*.zap")
	if len(paths) == 0 {
		t.Fatal("no testdata/bad/*.zap")
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(filepath.Base(path), src)
		if err == nil {
			t.Errorf("%s: parsed without error:\n%s", path, dump(f))
			continue
		}
		if f != nil {
			t.Errorf("%s: non-nil File with an error", path)
		}
		e, ok := err.(*Error)
		if !ok || e.Pos.Filename != filepath.Base(path) || e.Pos.Line < 1 || e.Pos.Col < 1 {
			t.Errorf("%s: error %#v is not a positioned *Error", path, err)
		}
		golden(t, strings.TrimSuffix(path, ".zap")+".golden", err.Error()+"\n")
	}
}

// checkInvariants asserts what every successfully parsed File guarantees.
func checkInvariants(t *testing.T, f *File) {
	t.Helper()
	var checkType func(ty *Type)
	checkType = func(ty *Type) {
		switch {
		case ty == nil || ty.Kind == KindInvalid || ty.ref != "":
			t.Fatalf("unresolved type %#v", ty)
		case ty.Kind == KindStruct && ty.Struct == nil,
			ty.Kind == KindList && ty.Elem == nil,
			ty.Kind == KindBytesFixed && ty.N < 1:
			t.Fatalf("incomplete type %#v", ty)
		case ty.Kind == KindList:
			checkType(ty.Elem)
		}
	}
	for _, a := range f.Aliases {
		checkType(a.Type)
	}
	for _, s := range f.Structs {
		end, used := 0, make([]*Field, s.Size)
		for _, fd := range s.Fields {
			checkType(fd.Type)
			if fd.Width != fd.Type.Width() || fd.Width < 1 || fd.Offset < 0 {
				t.Fatalf("%s.%s: offset %d width %d", s.Name, fd.Name, fd.Offset, fd.Width)
			}
			end = max(end, fd.Offset+fd.Width)
			for i := fd.Offset; i < fd.Offset+fd.Width && i < len(used); i++ {
				if used[i] != nil {
					t.Fatalf("%s: %s overlaps %s at byte %d", s.Name, fd.Name, used[i].Name, i)
				}
				used[i] = fd
			}
		}
		if end != s.Size {
			t.Fatalf("%s: size %d, last field ends at %d", s.Name, s.Size, end)
		}
	}
	for _, it := range f.Interfaces {
		for i, m := range it.Methods {
			// A payload has a name, but for a stream, whose name may be left
			// out; no payload has neither.
			named := func(s *Struct, name string, stream bool) bool {
				if s == nil {
					return name == "" && !stream
				}
				return name != "" || stream
			}
			if m.Ordinal != uint32(i+1) || !named(m.Req, m.ReqName, m.ReqStream) || !named(m.Resp, m.RespName, m.RespStream) {
				t.Fatalf("%s.%s: ordinal %d req %v %q resp %v %q", it.Name, m.Name, m.Ordinal, m.Req, m.ReqName, m.Resp, m.RespName)
			}
		}
	}
}

func TestLayout(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"whitespace packed", "struct A\n    X u8\n    Y u32\n    Z u16\n", "A=7 X@0:1 Y@1:4 Z@5:2\n"},
		{"whitespace reset", "struct A\n    X u8\n    Y u32 @8\n    Z u16\n", "A=14 X@0:1 Y@8:4 Z@12:2\n"},
		{"whitespace reset backwards", "struct A\n    X u64 @8\n    Y u32 @0\n    Z u16\n", "A=16 X@8:8 Y@0:4 Z@4:2\n"},
		{"whitespace every width", "struct A\n    B bool\n    T text\n    Y bytes\n    F bytes_fixed[3]\n    L list<u8>\n    S A\n    D f64\n",
			"A=40 B@0:1 T@1:8 Y@9:8 F@17:3 L@20:8 S@28:4 D@32:8\n"},
		{"whitespace blank lines and comments", "struct A\n    X u8\n\n    # note\n    Y u8\nstruct B\n    Z u8\n", "A=2 X@0:1 Y@1:1\nB=1 Z@0:1\n"},
		{"whitespace empty", "struct A\nstruct B\n", "A=0\nB=0\n"},
		{"brace explicit", "struct A {\n    X u32 @4\n    Y u8 @0\n}\n", "A=8 X@4:4 Y@0:1\n"},
		{"brace positional", "struct A {\n    X u32\n    Y u8\n}\n", "A=5 X@0:4 Y@4:1\n"},
		{"brace mixed", "struct A {\n    X u32 @8\n    Y u8\n    Z i16 @0\n}\n", "A=13 X@8:4 Y@12:1 Z@0:2\n"},
		{"brace one line", "struct A { X u8; Y u16 @2 }\n", "A=4 X@0:1 Y@2:2\n"},
		{"brace gap", "struct A {\n    X u8 @0\n    Y u8 @7\n}", "A=8 X@0:1 Y@7:1\n"},
		{"brace empty", "struct A {}\nstruct B {\n}\n", "A=0\nB=0\n"},
		{"brace close after field", "struct A {\n    X u8 }\n", "A=1 X@0:1\n"},
		{"forward reference", "struct A\n    B B\n    C list<B>\nstruct B { X u8 }\n", "A=12 B@0:4 C@4:8\nB=1 X@0:1\n"},
		{"crlf", "struct A\r\n    X u16\r\n    Y u8\r\n", "A=3 X@0:2 Y@2:1\n"},
		{"tab inside a line", "struct A\n    X\tu16\t@2\n", "A=4 X@2:2\n"},
		{"tab indentation", "struct A\n\tX u8\n\tY u16\n", "A=3 X@0:1 Y@1:2\n"},
		{"tab indentation in braces", "struct A {\n\tX u8\n\t  Y u8\n}\n", "A=2 X@0:1 Y@1:1\n"},
		{"every list element", "type q = bytes_fixed[4]\ntype us = list<u16>\nstruct A\n    Q list<q>\n    F list<bytes_fixed[3]>\n    L list<list<u16>>\n    M list<us>\n    N list<list<list<text>>>\n",
			"A=40 Q@0:8 F@8:8 L@16:8 M@24:8 N@32:8\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.zap", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, f)
			if got := layout(f); got != tt.want {
				t.Errorf("got\n%swant\n%s", got, tt.want)
			}
		})
	}
}

func TestTypes(t *testing.T) {
	src := `package p
type a = b
type b = c
type c = bytes_fixed[20]
type s = S
struct S
    A a
    C s
    D list<s>
    E u8
`
	tests := []struct {
		field, want string
		width       int
	}{
		{"A", "bytes_fixed[20](alias a)", 20},
		{"C", "struct S(alias s)", 4},
		{"D", "list<struct S(alias s)>", 8},
		{"E", "u8", 1},
	}
	f, err := Parse("t.zap", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Struct("S")
	for _, tt := range tests {
		fd := s.Field(tt.field)
		if got := typeDump(fd.Type); got != tt.want || fd.Width != tt.width {
			t.Errorf("%s: %s width %d, want %s width %d", tt.field, got, fd.Width, tt.want, tt.width)
		}
	}
	if got := s.Field("D").Type.String(); got != "list<S>" {
		t.Errorf("D.String() = %s, want list<S>", got)
	}
	if got := f.Aliases[0].Type; got.AliasName != "b" || got.N != 20 {
		t.Errorf("alias a resolves to %s (alias %q), want bytes_fixed[20] via b", got, got.AliasName)
	}
}

func TestWhitespaceInterface(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"methods", "struct R {}\ninterface S\n    get(req: R) returns (resp: R)\n\n    # comment\n    ping()\nstruct T {}\n", "1 get(req R) (resp R); 2 ping( -) ( -)"},
		{"tabs", "struct R {}\ninterface S\n\tput(in: R)\n\tping()\n", "1 put(in R) ( -); 2 ping( -) ( -)"},
		{"empty at end of file", "interface S\n", ""},
		{"empty then struct", "interface S\nstruct R {}\n", ""},
		{"empty without newline", "interface S", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.zap", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, f)
			it := f.Interface("S")
			var got []string
			for _, m := range it.Methods {
				got = append(got, fmt.Sprintf("%d %s(%s %s) (%s %s)", m.Ordinal, m.Name, m.ReqName, structName(m.Req), m.RespName, structName(m.Resp)))
			}
			if g := strings.Join(got, "; "); g != tt.want {
				t.Errorf("got %s, want %s", g, tt.want)
			}
		})
	}
}

func TestInterfaceLookups(t *testing.T) {
	f, err := Parse("t.zap", []byte("struct A {}\ninterface S {\n    get(req: A) returns (resp: A)\n    put(req: A)\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Interface("S")
	if m := s.Method("put"); m == nil || m.Ordinal != 2 {
		t.Fatalf("Method(put) = %+v", m)
	}
	if m := s.MethodByOrdinal(1); m == nil || m.Name != "get" {
		t.Fatalf("MethodByOrdinal(1) = %+v", m)
	}
	if s.Method("Get") != nil || s.MethodByOrdinal(3) != nil || s.MethodByOrdinal(0) != nil {
		t.Fatal("a lookup of a missing method found one")
	}
}

// TestErrorsInSourceOrder: a syntax error is reported before a character
// outside the dialect further down the file (the package doc promises
// syntax errors in source order; the character used to win wherever it
// was, as the whole file was split into tokens first). A syntax error the
// parser finds on reaching the character is the character's.
func TestErrorsInSourceOrder(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"struct {\n    a u8\nstruct B\n    x u8 $\n", `f.zap:1:8: expected struct name, got "{"`},
		{"type a = list<u8\nstruct B $\n", `f.zap:1:17: expected ">" after list element type, got end of line`},
		{"struct A {\n    a u8\n    b $\n}\n", "f.zap:3:7: unexpected character '$'"},
		{"struct A $\n", "f.zap:1:10: unexpected character '$'"},
		{"struct A\n    a u8 \xff\n", "f.zap:2:10: invalid UTF-8 byte 0xff"},
		{"$\nstruct {\n", "f.zap:1:1: unexpected character '$'"},
		{"struct A { a list<$ }\n", "f.zap:1:19: unexpected character '$'"},
		{"interface I {\n    m(stream $) \n}\n", "f.zap:2:14: unexpected character '$'"},
	} {
		f, err := Parse("f.zap", []byte(tc.src))
		if f != nil || err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.src, f, err, tc.want)
		}
	}
}

// TestLongTokensInErrors: an error message shows at most 128 bytes of a
// token or a name, with its length: an identifier or a number may be as
// long as the file, and the message quoted all of it (a megabyte-long
// line for a megabyte-long name).
func TestLongTokensInErrors(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	digits := strings.Repeat("9", 1<<20)
	shown := strings.Repeat("x", 128) + "... (1048576 bytes)"
	for _, tc := range []struct{ src, want string }{
		{long + "\n", `f.zap:1:1: unexpected "` + shown[:128] + `"... (1048576 bytes); expected package, type, struct or interface`},
		{"struct " + long + " {}\nstruct " + long + " {}\n", "f.zap:2:8: duplicate struct " + shown + " (first declared at f.zap:1:8)"},
		{"struct A\n    X " + long + "\n", "f.zap:2:7: unknown type " + shown},
		{"struct A\n    X u8 @" + digits + "\n", "f.zap:2:11: offset of field X is too large: " + strings.Repeat("9", 128) + "... (1048576 bytes) (max 16777216)"},
	} {
		_, err := Parse("f.zap", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			got := "<nil>"
			if err != nil {
				got = err.Error()
				got = got[:min(len(got), 400)]
			}
			t.Errorf("got %s (first 400 bytes); want %s", got, tc.want)
		}
	}
}
