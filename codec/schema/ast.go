package schema

import "fmt"

// MaxStructSize bounds a struct's fixed section: no field may end beyond it,
// and no bytes_fixed size or explicit offset may exceed it. It keeps every
// offset far below the wire's 31-bit relative offsets.
const MaxStructSize = 1 << 24

// MaxListDepth bounds how deeply lists nest: list<list<u8>> is 2 levels.
const MaxListDepth = 8

// Pos is a position in a schema file. Line and Col count from 1; Col counts
// bytes.
type Pos struct {
	Filename string // as given to Parse or in Source.Name
	Line     int    // from 1
	Col      int    // from 1, in bytes
}

// String returns "file:line:col".
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Col) }

// File is a parsed and resolved schema: one file from [Parse], or several
// sharing a package from [ParseFiles]. Every slice is in declaration order
// (file order, then line order). A File and everything it points to is
// immutable after parsing by convention: consumers must not modify it.
type File struct {
	// Package is the package clause's name, or "" when no file had one.
	Package string
	// PackagePos is where the first package clause names it (zero
	// without one).
	PackagePos Pos
	// Files names the source files, in the order given.
	Files []string
	// Aliases, Structs and Interfaces are the declarations, each in
	// declaration order.
	Aliases    []*Alias
	Structs    []*Struct
	Interfaces []*Interface
}

// Struct returns the struct named name, or nil.
func (f *File) Struct(name string) *Struct {
	for _, s := range f.Structs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Interface returns the interface named name, or nil.
func (f *File) Interface(name string) *Interface {
	for _, it := range f.Interfaces {
		if it.Name == name {
			return it
		}
	}
	return nil
}

// Alias is "type Name = T". Type is fully resolved (never an alias itself);
// Type.AliasName is set when T was written as another alias's name.
type Alias struct {
	Name string // as declared
	Type *Type  // what it stands for, resolved
	Pos  Pos    // of the name
	// Doc is the comment block right above the declaration (its "#" lines
	// with the "#" and one space removed, joined by newlines), "" without
	// one; Comment is the comment at the end of its line.
	Doc, Comment string

	expr  *Type // as written, unresolved
	state uint8 // resolution: 0 new, 1 in progress, 2 done
}

// Struct is a record with a fixed section of Size bytes.
type Struct struct {
	Name   string   // as declared
	Fields []*Field // declaration order (not necessarily offset order)
	Size   int      // end of the last-ending field; 0 without fields
	Pos    Pos      // of the name
	// Doc is the comment block right above the declaration (its "#" lines
	// with the "#" and one space removed, joined by newlines), "" without
	// one; Comment is the comment at the end of its line.
	Doc, Comment string
}

// Field returns the field named name, or nil.
func (s *Struct) Field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Field is one slot of a struct's fixed section: bytes [Offset, Offset+Width).
type Field struct {
	Name     string // as declared
	Type     *Type  // resolved
	Offset   int    // of the slot in the fixed section, from its start
	Width    int    // slot width, Type.Width()
	Explicit bool   // the offset was written as @N
	Pos      Pos    // of the name
	// Doc is the comment block right above the declaration (its "#" lines
	// with the "#" and one space removed, joined by newlines), "" without
	// one; Comment is the comment at the end of its line.
	Doc, Comment string

	expr *Type // as written, unresolved
}

// Kind is the kind of a [Type].
type Kind uint8

// The kinds, in the order of the schema language's type list.
const (
	KindInvalid    Kind = iota // zero value; never in a resolved File
	KindBool                   // bool
	KindU8                     // u8
	KindU16                    // u16
	KindU32                    // u32
	KindU64                    // u64
	KindI8                     // i8
	KindI16                    // i16
	KindI32                    // i32
	KindI64                    // i64
	KindF32                    // f32
	KindF64                    // f64
	KindText                   // text: UTF-8 string, slot {u32 relOffset, u32 len}
	KindBytes                  // bytes: byte string, slot {u32 relOffset, u32 len}
	KindBytesFixed             // bytes_fixed[N]: N bytes inline
	KindList                   // list<T>: slot {i32 relOffset, u32 count}
	KindStruct                 // nested struct: slot {i32 relOffset}
)

var kindNames = [...]string{"invalid", "bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
	"f32", "f64", "text", "bytes", "bytes_fixed", "list", "struct"}

// kindWidths holds the slot widths of docs/wire.md §2 (bytes_fixed: per type).
var kindWidths = [...]int{0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 8, 0, 8, 4}

// String returns the schema spelling: "u32", "bytes_fixed", "list", "struct".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Width returns the slot width of k in a struct's fixed section (docs/wire.md
// §2): 1 for bool u8 i8, 2 for u16 i16, 4 for u32 i32 f32 and nested
// structs, 8 for u64 i64 f64 text bytes and lists. It is 0 for
// KindBytesFixed (see [Type.Width]) and KindInvalid.
func (k Kind) Width() int {
	if int(k) < len(kindWidths) {
		return kindWidths[k]
	}
	return 0
}

// Scalar reports whether k is bool, an integer or a float.
func (k Kind) Scalar() bool { return k >= KindBool && k <= KindF64 }

// Type is a resolved field, alias, or list element type.
type Type struct {
	Kind Kind
	// Elem is the element type of a list; nil otherwise.
	Elem *Type
	// N is the size of a bytes_fixed; 0 otherwise.
	N int
	// Struct is the referenced struct of KindStruct; nil otherwise.
	Struct *Struct
	// AliasName is the alias the type was written as ("hash"), or "".
	// For an alias of an alias it is the name written at the use site.
	AliasName string
	// Pos is where the type was written (at the use site).
	Pos Pos

	ref string // unresolved name reference; "" once resolved
}

// listDepth counts the lists in t's element chain: 0 for a non-list.
func (t *Type) listDepth() int {
	d := 0
	for ; t != nil && t.Kind == KindList; t = t.Elem {
		d++
	}
	return d
}

// Width returns the slot width of t in a struct's fixed section: N for
// bytes_fixed[N], else t.Kind.Width().
func (t *Type) Width() int {
	if t.Kind == KindBytesFixed {
		return t.N
	}
	return t.Kind.Width()
}

// String returns the resolved type in schema spelling, without aliases:
// "u64", "bytes_fixed[32]", "list<Item>", "Item".
func (t *Type) String() string {
	switch {
	case t.ref != "":
		return t.ref
	case t.Kind == KindBytesFixed:
		return fmt.Sprintf("bytes_fixed[%d]", t.N)
	case t.Kind == KindList && t.Elem != nil:
		return "list<" + t.Elem.String() + ">"
	case t.Kind == KindStruct && t.Struct != nil:
		return t.Struct.Name
	}
	return t.Kind.String()
}

// Interface is an RPC service: its methods in declaration order.
type Interface struct {
	Name    string    // as declared
	Methods []*Method // declaration order
	Pos     Pos       // of the name
	// Doc is the comment block right above the declaration (its "#" lines
	// with the "#" and one space removed, joined by newlines), "" without
	// one; Comment is the comment at the end of its line.
	Doc, Comment string
}

// Method returns the method named name (as written: "getBalance"), or nil.
func (it *Interface) Method(name string) *Method {
	for _, m := range it.Methods {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// MethodByOrdinal returns the method whose ordinal is ord (the method id
// an RPC envelope carries), or nil.
func (it *Interface) MethodByOrdinal(ord uint32) *Method {
	for _, m := range it.Methods {
		if m.Ordinal == ord {
			return m
		}
	}
	return nil
}

// Method is one RPC method of an interface, "name(req: T) returns (resp: U)".
type Method struct {
	Name    string // as written ("getBalance")
	Ordinal uint32 // 1, 2, 3... in declaration order within the interface
	// Req is the request struct, nil without a parameter. ReqName is the
	// parameter's name as written ("req"), "" without one.
	Req     *Struct
	ReqName string
	// Resp is the result struct, nil without a result. RespName is the
	// result's name as written ("resp"), "" without one.
	Resp     *Struct
	RespName string
	Pos      Pos // of the name
	// ReqStream and RespStream mark a stream of Req or Resp messages
	// instead of one: "upload(stream Chunk)", "returns (stream Log)" (a
	// zapcodec extension of the schema language; the canonical compiler
	// has no streams). A stream's element is a struct like any payload;
	// its name may be left out.
	ReqStream, RespStream bool
	// Doc is the comment block right above the declaration (its "#" lines
	// with the "#" and one space removed, joined by newlines), "" without
	// one; Comment is the comment at the end of its line.
	Doc, Comment string

	reqExpr, respExpr *Type // as written, unresolved
}

// Error is a schema error at a position. Its text is "file:line:col: msg".
type Error struct {
	Pos Pos    // where the problem is
	Msg string // what it is, without the position
}

// Error returns "file:line:col: msg".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// errorf makes an Error. A string argument longer than maxQuoted (a name
// as long as the file, say) is cut there, with its length.
func errorf(pos Pos, format string, args ...any) *Error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > maxQuoted {
			args[i] = cut(s)
		}
	}
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
