package gen

import (
	"fmt"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Every list<T> is written as the canonical schema compiler writes it
// (docs/wire.md §4): a variable-element list, 8-aligned, each element
// [u32 size][element bytes], for every T:
//
//	bool, integers, floats  1, 2, 4 or 8 bytes, little-endian (floats as bits)
//	text, bytes             the bytes
//	bytes_fixed[N]          the N bytes
//	struct                  a whole message (header included)
//	list<U>                 the elements of the inner list, back to back
//	                        ([u32 size][bytes] each, no slot, no count)
//
// An empty list still starts a list (the buffer is padded to 8) and leaves
// the slot {0, 0}.

// fixedWidth returns the element width of a list element type whose
// elements all have one size (scalars and bytes_fixed[N]), or 0.
func fixedWidth(e *schema.Type) int {
	if e.Kind.Scalar() {
		return scalars[e.Kind].width
	}
	if e.Kind == schema.KindBytesFixed {
		return e.N
	}
	return 0
}

// scalarEncode returns the unsigned value of width w that scalar x of kind
// k (not bool: see boolAdd) is written as.
func (g *generator) scalarEncode(k schema.Kind, x string) string {
	si := scalars[k]
	switch k {
	case schema.KindF32:
		g.use("math")
		return "math.Float32bits(" + x + ")"
	case schema.KindF64:
		g.use("math")
		return "math.Float64bits(" + x + ")"
	case schema.KindI8, schema.KindI16, schema.KindI32, schema.KindI64:
		return fmt.Sprintf("uint%d(%s)", si.width*8, x)
	}
	return x
}

// scalarDecode converts raw, an unsigned value of the scalar's width, to
// the Go type of kind k.
func (g *generator) scalarDecode(k schema.Kind, raw string) string {
	si := scalars[k]
	switch k {
	case schema.KindBool:
		return raw + " != 0"
	case schema.KindF32:
		g.use("math")
		return "math.Float32frombits(" + raw + ")"
	case schema.KindF64:
		g.use("math")
		return "math.Float64frombits(" + raw + ")"
	case schema.KindI8, schema.KindI16, schema.KindI32, schema.KindI64:
		return si.goType + "(" + raw + ")"
	}
	return raw
}

// writeList writes the statements of zapObject that append list field xs
// (a Go expression of the list's slice) and point slot off at it.
func (g *generator) writeList(off int, xs string, e *schema.Type) {
	g.p("{")
	g.p("var start int")
	g.p("dst, start = codec.AppendListStart(dst, base) // pads to 8 even when empty, as the canonical writer does")
	g.appendElems("dst", xs, e, 0)
	g.p("codec.PutListSlot(dst, o+%d, start, len(%s))", off, xs)
	g.p("}")
}

// appendFn names the method that appends a record of struct s as a whole
// message without growing the buffer first: AppendZAP for a flat record,
// whose AppendZAP grows nothing more than it writes, zapAppend otherwise.
func appendFn(s *schema.Struct) string {
	if isFlat(s) {
		return "AppendZAP"
	}
	return "zapAppend"
}

// appendElems writes statements appending the elements of list xs (element
// type e) to the []byte variable buf, as the body of an enclosing element.
func (g *generator) appendElems(buf, xs string, e *schema.Type, depth int) {
	i := fmt.Sprintf("i%d", depth)
	x := fmt.Sprintf("%s[%s]", xs, i)
	g.p("for %s := range %s {", i, xs)
	switch e.Kind {
	case schema.KindStruct:
		at := fmt.Sprintf("at%d", depth)
		g.p("var %s int", at)
		g.p("%s, %s = codec.StartElement(%s)", buf, at, buf)
		if isFlat(e.Struct) && len(e.Struct.Fields) > 0 && buf == "dst" {
			// The element's AppendZAP written out in place: no call per
			// element.
			g.p("{")
			g.p("m := &%s", x)
			g.flatBody(e.Struct, true)
			g.p("}")
		} else {
			g.p("%s = %s.%s(%s)", buf, x, appendFn(e.Struct), buf)
		}
		g.p("codec.FinishElement(%s, %s)", buf, at)
	case schema.KindText:
		g.p("%s = codec.AppendTextElement(%s, %s)", buf, buf, x)
	case schema.KindBytes:
		g.p("%s = codec.AppendBytesElement(%s, %s)", buf, buf, x)
	case schema.KindBytesFixed:
		g.p("%s = codec.AppendBytesElement(%s, %s[:])", buf, buf, x)
	case schema.KindList:
		at := fmt.Sprintf("at%d", depth)
		g.p("var %s int", at)
		g.p("%s, %s = codec.StartElement(%s)", buf, at, buf)
		g.appendElems(buf, x, e.Elem, depth+1)
		g.p("codec.FinishElement(%s, %s)", buf, at)
	case schema.KindBool:
		g.p("if %s {", x)
		g.p("%s = codec.AppendUint8Element(%s, 1)", buf, buf)
		g.p("} else {")
		g.p("%s = codec.AppendUint8Element(%s, 0)", buf, buf)
		g.p("}")
	default:
		g.p("%s = codec.Append%sElement(%s, %s)", buf, uintOf(scalars[e.Kind].width), buf, g.scalarEncode(e.Kind, x))
	}
	g.p("}")
}

// sizeList writes statements adding to n the bytes of the elements of list
// xs (element type e): each element's size word and its bytes.
func (g *generator) sizeList(xs string, e *schema.Type, depth int) {
	if w := fixedWidth(e); w > 0 {
		g.p("n += %d * len(%s)", 4+w, xs)
		return
	}
	i := fmt.Sprintf("i%d", depth)
	x := fmt.Sprintf("%s[%s]", xs, i)
	g.p("for %s := range %s {", i, xs)
	switch e.Kind {
	case schema.KindStruct:
		g.p("n += codec.ElementHeaderSize + %s.SizeZAP()", x)
	case schema.KindText, schema.KindBytes:
		g.p("n += codec.ElementHeaderSize + len(%s)", x)
	case schema.KindList:
		g.p("n += codec.ElementHeaderSize")
		g.sizeList(x, e.Elem, depth+1)
	}
	g.p("}")
}

// decodeList writes statements filling target (an assignable Go expression
// of the list's slice type) from the codec.List variable l, whose elements
// have type e. wrap turns an error expression into one that carries the
// path of the list (codec.InField, codec.InElement).
//
// Before it takes an element it checks that the list's bytes could hold
// them all (List.VarFits: a count they cannot back fails at once) and
// charges the budget with the Go size of them all, then allocates them in
// one piece: what a list takes is charged before it is allocated, never
// more (the elements' own text, bytes, records and lists are charged as
// they are decoded).
func (g *generator) decodeList(target, l string, e *schema.Type, depth int, wrap func(string) string) {
	xs := fmt.Sprintf("xs%d", depth)
	it := fmt.Sprintf("it%d", depth)
	k := fmt.Sprintf("k%d", depth)
	at := func(err string) string { return wrap(fmt.Sprintf("codec.InElement(%s, %s)", err, k)) }
	if w := fixedWidth(e); w > 0 {
		goT := goType(e)
		g.p("if !%s.VarFits(%d) {", l, w)
		g.p("return %s", wrap("codec.ErrOutOfBounds"))
		g.p("}")
		g.p("if *budget -= %d * %s.Len(); *budget < 0 { // the elements' Go size", w, l)
		g.p("return %s", wrap("codec.ErrShared"))
		g.p("}")
		g.p("%s := %s[:0]", xs, target)
		g.p("if cap(%s) < %s.Len() {", xs, l)
		g.p("%s = make([]%s, 0, %s.Len())", xs, goT, l)
		g.p("}")
		g.p("%s := %s.Iter() // outside the for statement: no copy per step", it, l)
		g.p("for %s.Next() {", it)
		g.p("p := %s.Bytes()", it)
		g.p("if len(p) != %d {", w)
		g.p("%s = %s", target, xs)
		g.p("%s := len(%s)", k, xs)
		g.p("return %s", at("codec.ErrElementSize"))
		g.p("}")
		if e.Kind == schema.KindBytesFixed {
			g.p("%s = append(%s, %s(p))", xs, xs, goT)
		} else {
			raw := "p[0]"
			if w > 1 {
				g.use("encoding/binary")
				raw = fmt.Sprintf("binary.LittleEndian.Uint%d(p)", w*8)
			}
			g.p("%s = append(%s, %s)", xs, xs, g.scalarDecode(e.Kind, raw))
		}
		g.p("}")
		g.p("%s = %s", target, xs)
		g.p("if len(%s) != %s.Len() {", xs, l)
		g.p("return %s", wrap("codec.ErrOutOfBounds"))
		g.p("}")
		return
	}
	n := fmt.Sprintf("n%d", depth)
	g.p("if !%s.VarFits(0) {", l)
	g.p("return %s", wrap("codec.ErrOutOfBounds"))
	g.p("}")
	g.p("%s := %s[:0]", xs, target)
	g.p("%s := %s.Len()", n, l)
	if e.Kind != schema.KindStruct || len(e.Struct.Fields) > 0 { // a record without fields takes no memory
		g.use("unsafe")
		size := fmt.Sprintf("int(unsafe.Sizeof(%s[0]))", xs)
		g.p("if %s > *budget/%s {", n, size)
		g.p("return %s", wrap("codec.ErrShared"))
		g.p("}")
		g.p("*budget -= %s * %s", n, size)
	}
	elemT := goType(e)
	if e.Kind == schema.KindStruct {
		elemT = GoName(e.Struct.Name)
	}
	g.p("if cap(%s) < %s { // one allocation; the old elements' memory is kept for reuse", xs, n)
	g.p("%s = append(make([]%s, 0, %s), %s[:cap(%s)]...)[:0]", xs, elemT, n, xs, xs)
	g.p("}")
	g.p("%s := %s.Iter()", it, l)
	g.p("for %s.Next() {", it)
	g.p("%s := len(%s)", k, xs)
	g.p("%s = %s[:%s+1] // %s < %s: Next stops after %s elements", xs, xs, k, k, n, n)
	x := fmt.Sprintf("%s[%s]", xs, k)
	switch e.Kind {
	case schema.KindStruct:
		g.p("if err := %s.zapDecodeMessage(%s.Bytes(), depth+1, budget); err != nil {", x, it)
		g.p("%s = %s", target, xs)
		g.p("return %s", at("err"))
		g.p("}")
	case schema.KindText:
		g.p("if p := %s.Bytes(); string(p) != %s {", it, x)
		g.p("%s = string(p)", x)
		g.p("*budget -= len(p)")
		g.p("}")
	case schema.KindBytes:
		g.p("%s = append(%s[:0], %s.Bytes()...)", x, x, it)
		g.p("*budget -= len(%s)", x)
	case schema.KindList:
		inner := fmt.Sprintf("l%d", depth+1)
		g.p("%s, ok := codec.VarListOf(%s.Bytes())", inner, it)
		g.p("if !ok {")
		g.p("%s = %s", target, xs)
		g.p("return %s", at("codec.ErrNestedList"))
		g.p("}")
		g.decodeList(x, inner, e.Elem, depth+1, func(err string) string { return at(err) })
	}
	g.p("}")
	g.p("%s = %s", target, xs)
	g.p("if len(%s) != %s.Len() {", xs, l)
	g.p("return %s", wrap("codec.ErrOutOfBounds"))
	g.p("}")
}

// listTypeNames returns the view and iterator type names of a list field
// of struct t named n and of each nested list level below it: TNList and
// TNIter, then TNElemList and TNElemIter, and so on.
func listTypeNames(t, n string, typ *schema.Type) (lists, iters []string) {
	name := t + n
	for ; typ != nil && typ.Kind == schema.KindList; typ = typ.Elem {
		lists = append(lists, name+"List")
		iters = append(iters, name+"Iter")
		name += "Elem"
	}
	return lists, iters
}

// listView writes the view and iterator types of one list level: lt and it
// name them; e is the element type; below names the next level's view
// type when e is a list. what is "list field S.F" or "an element of ...";
// top tells the field's own list (read from a slot) from a nested one (an
// element's bytes).
func (g *generator) listView(lt, it string, e *schema.Type, below, what string, top bool) {
	g.p("// %s is a view of %s (a list of %s). It aliases the message and is", lt, what, e)
	g.p("// valid only while its bytes are unchanged; the zero value is empty.")
	g.p("type %s struct{ l codec.List }\n", lt)
	g.p("// Len returns the element count the list's slot declares. It is at most")
	g.p("// the message's size, but a hostile message may declare more elements")
	g.p("// than it holds: At reads those as zero values and Iter stops at the")
	g.p("// first that does not fit. Size a slice from Len only for a message you")
	g.p("// trust (DecodeZAP allocates only for elements the bytes can hold).")
	g.p("func (l %s) Len() int { return l.l.Len() }\n", lt)
	if top {
		g.p("// IsNull reports whether the list is null: its slot is null, as writers")
		g.p("// write an empty list, or it does not lie inside the message. (An empty")
		g.p("// list whose slot points inside the message is not null.)")
	} else {
		g.p("// IsNull reports whether the list is null: its element holds no bytes,")
		g.p("// as writers write an empty list, or is outside the message.")
	}
	g.p("func (l %s) IsNull() bool { return l.l.IsNull() }\n", lt)
	g.p("// Iter returns an iterator over the elements, front to back.")
	g.p("func (l %s) Iter() %s { return %s{l.l.Iter()} }\n", lt, it, it)
	g.p("// %s walks %s front to back without allocating:", it, what)
	g.p("//")
	g.p("//	it := l.Iter()")
	g.p("//	for it.Next() {")
	g.p("//		use(it.Value())")
	g.p("//	}")
	g.p("//")
	g.p("// (Declared in the for statement instead, the iterator is copied at every")
	g.p("// step, since Go 1.22 makes a new loop variable per iteration.) It stops at")
	g.p("// the first element that does not fit in the message.")
	g.p("type %s struct{ it codec.ListIter }\n", it)
	g.p("// Next advances to the next element and reports whether there is one.")
	g.p("func (it *%s) Next() bool { return it.it.Next() }\n", it)
	g.p("// Index returns the position of the current element.")
	g.p("func (it *%s) Index() int { return it.it.Index() }\n", it)
	switch e.Kind {
	case schema.KindStruct:
		u := GoName(e.Struct.Name) + "View"
		g.p("// At returns element i (a null view when out of range). Finding it walks")
		g.p("// the i elements before it: use Iter to visit them all.")
		g.p("func (l %s) At(i int) %s { return %s }\n", lt, u, u+"{l.l.ObjectAt(i)}")
		g.p("// Value returns the current element.")
		g.p("func (it *%s) Value() %s { return %s }\n", it, u, u+"{it.it.Object()}")
	case schema.KindText:
		g.use("unsafe")
		g.p("// At returns element i (\"\" when out of range); it aliases the message")
		g.p("// (copy it, strings.Clone, to keep it past the message's reuse). Finding")
		g.p("// it walks the i elements before it: use Iter to visit them all.")
		g.p("func (l %s) At(i int) string {", lt)
		g.p("p := l.l.BytesAt(i)")
		g.p("if len(p) == 0 {")
		g.p("return \"\"")
		g.p("}")
		g.p("return unsafe.String(&p[0], len(p))")
		g.p("}\n")
		g.p("// Value returns the current element; it aliases the message (copy it,")
		g.p("// strings.Clone, to keep it past the message's reuse).")
		g.p("func (it *%s) Value() string {", it)
		g.p("p := it.it.Bytes()")
		g.p("if len(p) == 0 {")
		g.p("return \"\"")
		g.p("}")
		g.p("return unsafe.String(&p[0], len(p))")
		g.p("}\n")
		g.p("// Bytes returns the current element as bytes; it aliases the message.")
		g.p("func (it *%s) Bytes() []byte { return it.it.Bytes() }\n", it)
	case schema.KindBytes:
		g.p("// At returns element i (nil when out of range); it aliases the message.")
		g.p("// Finding it walks the i elements before it: use Iter to visit them all.")
		g.p("func (l %s) At(i int) []byte { return l.l.BytesAt(i) }\n", lt)
		g.p("// Value returns the current element; it aliases the message.")
		g.p("func (it *%s) Value() []byte { return it.it.Bytes() }\n", it)
	case schema.KindBytesFixed:
		g.p("// At returns a copy of element i (zero when out of range or not %d bytes).", e.N)
		g.p("// It is O(1) when the elements are all %d bytes, as writers make them. On", e.N)
		g.p("// a list whose elements are not (DecodeZAP refuses one) it may walk the")
		g.p("// elements before i, or read %d bytes that are not element i", e.N)
		g.p("// (codec.List.VarFixed says when); Iter reads any list as written.")
		g.p("func (l %s) At(i int) (a [%d]byte) {", lt, e.N)
		g.p("copy(a[:], l.l.VarFixed(i, %d))", e.N)
		g.p("return a")
		g.p("}\n")
		g.p("// AtBytes returns element i in place (nil when out of range or not %d", e.N)
		g.p("// bytes; as At, on a list whose elements are not all %d bytes it may give", e.N)
		g.p("// %d bytes that are not element i); it aliases the message.", e.N)
		g.p("func (l %s) AtBytes(i int) []byte { return l.l.VarFixed(i, %d) }\n", lt, e.N)
		g.p("// Value returns a copy of the current element (zero when not %d bytes).", e.N)
		g.p("func (it *%s) Value() (a [%d]byte) {", it, e.N)
		g.p("copy(a[:], it.it.Fixed(%d))", e.N)
		g.p("return a")
		g.p("}\n")
	case schema.KindList:
		g.p("// At returns a view of element i, itself a list (empty when out of range).")
		g.p("// Finding it walks the i elements before it: use Iter to visit them all.")
		g.p("func (l %s) At(i int) %s {", lt, below)
		g.p("in, _ := codec.VarListOf(l.l.BytesAt(i))")
		g.p("return %s{in}", below)
		g.p("}\n")
		g.p("// Value returns a view of the current element, itself a list.")
		g.p("func (it *%s) Value() %s {", it, below)
		g.p("in, _ := codec.VarListOf(it.it.Bytes())")
		g.p("return %s{in}", below)
		g.p("}\n")
	default:
		w := scalars[e.Kind].width
		et := scalars[e.Kind].goType
		g.p("// At returns element i (0 when out of range or not %d bytes). It is O(1)", w)
		g.p("// when the elements are all %d bytes, as writers make them. On a list", w)
		g.p("// whose elements are not (DecodeZAP refuses one) it may walk the elements")
		g.p("// before i, or read %d bytes that are not element i (codec.List.VarFixed", w)
		g.p("// says when); Iter reads any list as written, in linear time.")
		g.p("func (l %s) At(i int) %s { return %s }\n", lt, et, g.scalarDecode(e.Kind, fmt.Sprintf("l.l.Var%s(i)", uintOf(w))))
		g.p("// Value returns the current element (0 when it is not %d bytes).", w)
		g.p("func (it *%s) Value() %s { return %s }\n", it, et, g.scalarDecode(e.Kind, fmt.Sprintf("it.it.%s()", uintOf(w))))
	}
}
