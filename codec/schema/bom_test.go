package schema

import (
	"strings"
	"testing"
)

// TestByteOrderMark checks that a UTF-8 byte order mark at the start of a
// file, which editors on Windows write, is skipped, that columns on the
// first line count from after it, and that one anywhere else is refused.
func TestByteOrderMark(t *testing.T) {
	const bom = "\uFEFF"
	t.Run("start", func(t *testing.T) {
		f, err := Parse("t.zap", []byte(bom+"package p\nstruct A\n    x u8\n"))
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, f)
		if f.Package != "p" || f.Struct("A") == nil {
			t.Fatalf("package %q, struct A %v", f.Package, f.Struct("A"))
		}
	})
	t.Run("start, whitespace form on the first line", func(t *testing.T) {
		f, err := Parse("t.zap", []byte(bom+"struct A\n    x u8\n    y u32\n"))
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, f)
		if s := f.Struct("A"); s == nil || s.Size != 5 {
			t.Fatalf("struct A %+v, want size 5", s)
		}
	})
	errs := []struct {
		name, src, want string
	}{
		// Columns of the first line count from after the mark.
		{"error on the first line", bom + "struct A $\n", "t.zap:1:10: unexpected character '$'"},
		{"indented first line", bom + "  struct A {}\n", "t.zap:1:3: unexpected indentation"},
		{"error on a later line", bom + "struct A {}\nstruct B $\n", "t.zap:2:10: unexpected character '$'"},
		{"two marks", bom + bom + "struct A {}\n", "t.zap:1:1: unexpected character '\\ufeff'"},
		{"after a blank line", "\n" + bom + "struct A {}\n", "t.zap:2:1: unexpected character '\\ufeff'"},
		{"inside a line", "struct A " + bom + "{}\n", "t.zap:1:10: unexpected character '\\ufeff'"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.zap", []byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
	t.Run("ParseFiles, second file", func(t *testing.T) {
		f, err := ParseFiles(Source{"a.zap", []byte("struct A {}\n")}, Source{"b.zap", []byte(bom + "struct B {}\n")})
		if err != nil {
			t.Fatal(err)
		}
		if f.Struct("B") == nil {
			t.Fatal("no struct B")
		}
	})
}
