package schema

import "testing"

// TestGoTypeNamesHinted: a Go type name where a schema type belongs (what
// a Go programmer writes by habit: string, int, []byte) is refused with the
// schema's spelling in the message, not only "unknown type string".
func TestGoTypeNamesHinted(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"struct A\n    X string\n", "f.zap:2:7: unknown type string (the schema spells it text)"},
		{"struct A\n    X int\n", "f.zap:2:7: unknown type int (the schema spells it i64)"},
		{"struct A\n    X uint32\n", "f.zap:2:7: unknown type uint32 (the schema spells it u32)"},
		{"struct A\n    X float64\n", "f.zap:2:7: unknown type float64 (the schema spells it f64)"},
		{"struct A\n    X []u32\n", `f.zap:2:7: expected a type, got "[" (a list is list<T>)`},
		{"struct A\n    X Bee\n", "f.zap:2:7: unknown type Bee"},
	} {
		_, err := Parse("f.zap", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}
}

// TestGoTypeNameDeclared: a schema may declare a struct or alias of a Go
// type's name; the hint is only for a name that resolves to nothing.
func TestGoTypeNameDeclared(t *testing.T) {
	if _, err := Parse("f.zap", []byte("struct string\n    X u32\nstruct A\n    S string\ntype int = i32\nstruct B\n    I int\n")); err != nil {
		t.Fatal(err)
	}
}
