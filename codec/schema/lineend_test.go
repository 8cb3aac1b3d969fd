package schema

import (
	"testing"
)

// TestLineEndings: lines end in "\n" or "\r\n"; a carriage return alone
// (classic Mac OS) is refused where it stands. It was taken as a space, so
// a file of such lines read as one line ("unexpected "x" after struct A")
// and a first line that was a comment made the whole file a comment: an
// empty schema, without error.
func TestLineEndings(t *testing.T) {
	const msg = `line ending \r not supported: end lines with \n or \r\n`
	errs := []struct{ name, src, want string }{
		{"struct", "struct A\r    x u8\r", "f.zap:1:9: " + msg},
		{"comment first", "# the schema\rstruct A\r    x u8\r", "f.zap:1:13: " + msg},
		{"trailing comment", "struct A { # fields\r    x u8 }\r", "f.zap:1:20: " + msg},
		{"at the end", "struct A {}\r", "f.zap:1:12: " + msg},
		{"after CRLF lines", "struct A {}\r\nstruct B {}\r", "f.zap:2:12: " + msg},
		{"before CRLF", "struct A {}\r\r\n", "f.zap:1:12: " + msg},
		{"inside a line", "struct A\r{}\n", "f.zap:1:9: " + msg},
		{"blank line", "struct A {}\n\r\nstruct B {}\n\r", "f.zap:4:1: " + msg},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("f.zap", []byte(tt.src))
			if f != nil || err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, %v; want %s", f, err, tt.want)
			}
		})
	}
	t.Run("CRLF", func(t *testing.T) {
		f, err := Parse("f.zap", []byte("# doc\r\nstruct A # c\r\n    x u8\r\n    y text\r\n\r\nstruct B { z u32 }\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, f)
		a := f.Struct("A")
		if a == nil || a.Doc != "doc" || a.Comment != "c" || len(a.Fields) != 2 || a.Fields[1].Pos.Line != 4 || f.Struct("B") == nil {
			t.Fatalf("struct A %+v, B %v", a, f.Struct("B"))
		}
	})
}
