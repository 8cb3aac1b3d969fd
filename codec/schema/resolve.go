package schema

import (
	"cmp"
	"slices"
	"strings"
)

// resolver binds names to aliases and structs, lays out structs and checks
// method payloads, in that order.
type resolver struct {
	aliases map[string]*Alias
	structs map[string]*Struct
	stack   []string // aliases being resolved, for cycle messages
	// lists counts the list types being resolved (resolve's recursion
	// through list elements and the aliases they name), outer is the
	// position of the first of them: every one of them nests the type
	// resolved last, so the recursion stops at MaxListDepth of them.
	lists int
	outer Pos
}

func (r *resolver) file(f *File) error {
	for _, a := range f.Aliases {
		if _, err := r.alias(a); err != nil {
			return err
		}
	}
	for _, s := range f.Structs {
		if err := r.layout(s); err != nil {
			return err
		}
	}
	for _, it := range f.Interfaces {
		for _, m := range it.Methods {
			var err error
			if m.Req, err = r.payload(m, m.reqExpr, "request"); err != nil {
				return err
			}
			if m.Resp, err = r.payload(m, m.respExpr, "result"); err != nil {
				return err
			}
		}
	}
	return nil
}

// alias resolves a once; meeting it again while in progress is a cycle.
// A chain of aliases of aliases (type a = b, type b = c, ...) is followed
// in a loop, not a recursion per alias: a schema may chain millions.
func (r *resolver) alias(a *Alias) (*Type, error) {
	var chain []*Alias // a, the alias it names, and so on: each in progress
	for {
		switch a.state {
		case 2:
			return a.Type, nil
		case 1:
			i := slices.Index(r.stack, a.Name)
			path := strings.Join(append(r.stack[i:], a.Name), " -> ")
			return nil, errorf(a.Pos, "alias cycle: %s", path)
		}
		a.state = 1
		r.stack = append(r.stack, a.Name)
		chain = append(chain, a)
		next, ok := r.aliases[a.expr.ref]
		if !ok || next.state == 2 {
			break
		}
		a = next
	}
	t, err := r.resolve(a.expr)
	if err != nil {
		return nil, err
	}
	for i := len(chain) - 1; ; i-- {
		c := chain[i]
		c.Type, c.state = t, 2
		r.stack = r.stack[:len(r.stack)-1]
		if i == 0 {
			return t, nil
		}
		// chain[i-1] names c: its type is c's, written as c's name.
		u := *t
		u.AliasName, u.Pos = c.Name, chain[i-1].expr.Pos
		t = &u
	}
}

// resolve returns t with every name replaced by its alias's type or struct.
// It never modifies t or a resolved alias's type.
func (r *resolver) resolve(t *Type) (*Type, error) {
	switch {
	case t.ref != "":
		if a, ok := r.aliases[t.ref]; ok {
			at, err := r.alias(a)
			if err != nil {
				return nil, err
			}
			c := *at
			c.AliasName, c.Pos = t.ref, t.Pos
			return &c, nil
		}
		if s, ok := r.structs[t.ref]; ok {
			return &Type{Kind: KindStruct, Struct: s, Pos: t.Pos}, nil
		}
		if zap, ok := goTypeNames[t.ref]; ok {
			return nil, errorf(t.Pos, "unknown type %s (the schema spells it %s)", t.ref, zap)
		}
		return nil, errorf(t.Pos, "unknown type %s", t.ref)
	case t.Kind == KindList:
		// Aliases of lists of aliases of lists nest lists without a
		// limit the parser sees (type a0 = list<a1>, type a1 =
		// list<a2>, ...), and each level is a recursion here: millions
		// of them overflowed the stack. The levels on the stack all
		// nest, so the recursion stops past MaxListDepth, and the
		// depth reported is counted ahead without one.
		if r.lists == MaxListDepth {
			return nil, errorf(r.outer, "lists nested %d deep; at most %d levels of list<list<...>> are allowed", MaxListDepth+r.listsAhead(t), MaxListDepth)
		}
		if r.lists == 0 {
			r.outer = t.Pos
		}
		r.lists++
		e, err := r.resolve(t.Elem)
		r.lists--
		if err != nil {
			return nil, err
		}
		c := *t
		c.Elem = e
		// The depth is checked at the outermost list, the type as
		// written there: a list inside it that is too deep through an
		// alias resolved before (whose lists the recursion does not
		// count) makes it deeper still. Checked at each list, the error
		// named the first too deep from the inside, with its depth, not
		// the one written: list<list<list<list<list<a>>>>> of an a of
		// five lists was "9 deep" at the second list, not 10 at the first.
		if d := c.listDepth(); r.lists == 0 && d > MaxListDepth {
			return nil, errorf(t.Pos, "lists nested %d deep; at most %d levels of list<list<...>> are allowed", d, MaxListDepth)
		}
		return &c, nil
	}
	return t, nil
}

// listsAhead counts the lists t nests, t included, following the aliases
// its elements name in a loop (an alias resolved by its type, any other
// by its expression), each alias at most once: the depth the recursion of
// resolve would have found.
func (r *resolver) listsAhead(t *Type) int {
	seen := map[*Alias]bool{}
	d := 0
	for t != nil {
		if t.Kind == KindList {
			d++
			t = t.Elem
			continue
		}
		a, ok := r.aliases[t.ref]
		if t.ref == "" || !ok || seen[a] {
			break
		}
		seen[a] = true
		if t = a.expr; a.state == 2 {
			t = a.Type
		}
	}
	return d
}

// layout resolves s's field types, assigns offsets and checks overlaps.
func (r *resolver) layout(s *Struct) error {
	cursor := 0
	for _, f := range s.Fields {
		t, err := r.resolve(f.expr)
		if err != nil {
			return err
		}
		f.Type, f.Width = t, t.Width()
		if !f.Explicit {
			f.Offset = cursor
		}
		cursor = f.Offset + f.Width
		if cursor > MaxStructSize {
			return errorf(f.Pos, "field %s ends at byte %d, beyond the maximum struct size %d", f.Name, cursor, MaxStructSize)
		}
		s.Size = max(s.Size, cursor)
	}
	byOffset := slices.Clone(s.Fields)
	slices.SortStableFunc(byOffset, func(a, b *Field) int { return cmp.Compare(a.Offset, b.Offset) })
	var last *Field // the field ending furthest so far
	for _, f := range byOffset {
		if last != nil && f.Offset < last.Offset+last.Width {
			a, b := last, f // report at the one declared later
			if before(b.Pos, a.Pos) {
				a, b = b, a
			}
			return errorf(b.Pos, "field %s (offset %d, width %d) overlaps field %s (offset %d, width %d) in struct %s",
				b.Name, b.Offset, b.Width, a.Name, a.Offset, a.Width, s.Name)
		}
		if last == nil || f.Offset+f.Width > last.Offset+last.Width {
			last = f
		}
	}
	return nil
}

func before(a, b Pos) bool { return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col }

// payload resolves a method's request or result type, which must be a
// struct (possibly through aliases). A nil expr means none.
func (r *resolver) payload(m *Method, expr *Type, what string) (*Struct, error) {
	if expr == nil {
		return nil, nil
	}
	t, err := r.resolve(expr)
	if err != nil {
		return nil, err
	}
	if t.Kind != KindStruct {
		written := t.String()
		if t.AliasName != "" {
			written = t.AliasName + " (" + written + ")"
		}
		return nil, errorf(expr.Pos, "method %s: %s type %s is not a struct", m.Name, what, written)
	}
	return t.Struct, nil
}

// goTypeNames gives the schema's spelling of the Go type names a Go
// programmer writes by habit, and of protobuf's, for the error that
// refuses them.
var goTypeNames = map[string]string{
	"string": "text", "byte": "u8", "rune": "i32",
	"int": "i64", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
	"uint": "u64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
	"float32": "f32", "float64": "f64", "boolean": "bool",
	// protobuf's scalar types, for a schema moved from a .proto file
	"double": "f64", "float": "f32", "sint32": "i32", "sint64": "i64",
	"fixed32": "u32", "fixed64": "u64", "sfixed32": "i32", "sfixed64": "i64",
}

// protoFieldHints says what the schema writes for the protobuf field
// labels and map type, which a field written from habit puts before its
// type ("repeated u32") or in its place ("map<text, u32>").
var protoFieldHints = map[string]string{
	"repeated": "a list is list<T>",
	"optional": "a field of struct type is a pointer, nil when absent; a scalar has no presence",
	"map":      "the schema has no maps: a list<Entry> of a struct Entry with Key and Value",
}

// protoTopHints completes the error for a protobuf declaration where a
// schema's belongs.
var protoTopHints = map[string]string{
	"message": " (a protobuf message is a struct)",
	"service": " (a protobuf service is an interface)",
	"enum":    " (the schema has no enums: a u8, u16 or u32 field)",
	"syntax":  " (a .zap schema has no syntax line)",
}
