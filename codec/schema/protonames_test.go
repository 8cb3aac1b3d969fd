package schema

import "testing"

// TestProtoNamesHinted: what a schema moved from a .proto file keeps by
// habit (protobuf's scalar names, field labels, map, message, service,
// enum, syntax) is refused with what the schema writes instead.
func TestProtoNamesHinted(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"struct A\n    X double\n", "f.zap:2:7: unknown type double (the schema spells it f64)"},
		{"struct A\n    X float\n", "f.zap:2:7: unknown type float (the schema spells it f32)"},
		{"struct A\n    X sfixed64\n", "f.zap:2:7: unknown type sfixed64 (the schema spells it i64)"},
		{"struct A\n    X fixed32\n", "f.zap:2:7: unknown type fixed32 (the schema spells it u32)"},
		{"struct A\n    X repeated u32\n", `f.zap:2:16: unexpected "u32" after "X repeated" (a list is list<T>)`},
		{"struct A\n    X optional u32\n", `f.zap:2:16: unexpected "u32" after "X optional" (a field of struct type is a pointer, nil when absent; a scalar has no presence)`},
		{"struct A\n    X map<text, u32>\n", `f.zap:2:10: unexpected "<" after "X map" (the schema has no maps: a list<Entry> of a struct Entry with Key and Value)`},
		{"message A {\n    X u32\n}\n", `f.zap:1:1: unexpected "message"; expected package, type, struct or interface (a protobuf message is a struct)`},
		{"service S {\n}\n", `f.zap:1:1: unexpected "service"; expected package, type, struct or interface (a protobuf service is an interface)`},
		{"enum Color { RED = 0 }\n", `f.zap:1:1: unexpected "enum"; expected package, type, struct or interface (the schema has no enums: a u8, u16 or u32 field)`},
		{"syntax = \"proto3\";\n", `f.zap:1:1: unexpected "syntax"; expected package, type, struct or interface (a .zap schema has no syntax line)`},
		{"widget A\n", `f.zap:1:1: unexpected "widget"; expected package, type, struct or interface`},
		{"struct A\n    X repeated\n", "f.zap:2:7: unknown type repeated"},
		{"struct A {\n    X repeated u32\n}\n", `f.zap:2:16: unexpected "u32" after "X repeated" (a list is list<T>)`},
	} {
		_, err := Parse("f.zap", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

// TestProtoNamesDeclared: a struct or alias may take a protobuf name; the
// hints are only for names that resolve to nothing.
func TestProtoNamesDeclared(t *testing.T) {
	src := "type double = f64\nstruct repeated\n    X u32\nstruct A\n    D double\n    R repeated\n"
	if _, err := Parse("f.zap", []byte(src)); err != nil {
		t.Fatal(err)
	}
}
