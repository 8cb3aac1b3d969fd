package schema

import (
	"strings"
	"testing"
)

func TestParseFiles(t *testing.T) {
	a := Source{"a.zap", []byte("package p\nstruct A\n    B B\n    H hash\n")}
	b := Source{"b.zap", []byte("package p\ntype hash = bytes_fixed[8]\nstruct B { X u8 }\ninterface S { get(req: A) returns (resp: B) }\n")}
	f, err := ParseFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, f)
	if got, want := layout(f), "A=12 B@0:4 H@4:8\nB=1 X@0:1\n"; got != want {
		t.Errorf("layout:\n%swant\n%s", got, want)
	}
	if f.Package != "p" || len(f.Files) != 2 || f.Struct("B").Pos.Filename != "b.zap" {
		t.Errorf("file: %+v", f)
	}

	noPkg := Source{"c.zap", []byte("struct C\n    X u8\n")}
	if f, err := ParseFiles(noPkg, a, b); err != nil {
		t.Errorf("a file without package clause: %v", err)
	} else if want := (Pos{"a.zap", 1, 9}); f.PackagePos != want {
		t.Errorf("PackagePos = %v, want %v (the first clause's name)", f.PackagePos, want)
	}
	if f, err := ParseFiles(noPkg); err != nil || f.PackagePos != (Pos{}) {
		t.Errorf("no package clause: PackagePos %v, %v", f.PackagePos, err)
	}
	if f, err := ParseFiles(); err != nil || len(f.Structs) != 0 {
		t.Errorf("no files: %v %v", f, err)
	}

	errs := []struct {
		srcs []Source
		want string
	}{
		{[]Source{a, {"q.zap", []byte("package q\n")}}, "q.zap:1:9: package q does not match package p at a.zap:1:9"},
		{[]Source{a, b, {"d.zap", []byte("struct A {}\n")}}, "d.zap:1:8: duplicate struct A (first declared at a.zap:2:8)"},
		{[]Source{a}, "a.zap:3:7: unknown type B"},
	}
	for _, tt := range errs {
		_, err := ParseFiles(tt.srcs...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("got %v, want %s", err, tt.want)
		}
	}
}

func TestKind(t *testing.T) {
	for k := KindInvalid; k <= KindStruct; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("%d has no name", k)
		}
		if want := k >= KindBool && k <= KindF64; k.Scalar() != want {
			t.Errorf("%s.Scalar() = %v", k, !want)
		}
	}
	if got := Kind(200).String(); got != "Kind(200)" {
		t.Errorf("Kind(200).String() = %q", got)
	}
	if Kind(200).Width() != 0 || KindBytesFixed.Width() != 0 {
		t.Error("widths of invalid kinds")
	}
}
