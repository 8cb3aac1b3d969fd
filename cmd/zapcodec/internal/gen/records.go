package gen

import (
	"fmt"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// scalarInfo describes how a scalar kind is read and written.
type scalarInfo struct {
	goType string
	get    string // codec.Object getter / ObjectBuilder setter suffix
	width  int
}

var scalars = map[schema.Kind]scalarInfo{
	schema.KindBool: {"bool", "Bool", 1},
	schema.KindU8:   {"uint8", "Uint8", 1},
	schema.KindU16:  {"uint16", "Uint16", 2},
	schema.KindU32:  {"uint32", "Uint32", 4},
	schema.KindU64:  {"uint64", "Uint64", 8},
	schema.KindI8:   {"int8", "Int8", 1},
	schema.KindI16:  {"int16", "Int16", 2},
	schema.KindI32:  {"int32", "Int32", 4},
	schema.KindI64:  {"int64", "Int64", 8},
	schema.KindF32:  {"float32", "Float32", 4},
	schema.KindF64:  {"float64", "Float64", 8},
}

// uintOf returns the codec getter/adder suffix for an element width.
func uintOf(width int) string {
	return map[int]string{1: "Uint8", 2: "Uint16", 4: "Uint32", 8: "Uint64"}[width]
}

// goType is the Go type of a struct field.
func goType(t *schema.Type) string {
	switch t.Kind {
	case schema.KindText:
		return "string"
	case schema.KindBytes:
		return "[]byte"
	case schema.KindBytesFixed:
		return fmt.Sprintf("[%d]byte", t.N)
	case schema.KindStruct:
		return "*" + GoName(t.Struct.Name)
	case schema.KindList:
		if t.Elem.Kind == schema.KindStruct {
			return "[]" + GoName(t.Elem.Struct.Name)
		}
		return "[]" + goType(t.Elem)
	}
	return scalars[t.Kind].goType
}

func (g *generator) record(s *schema.Struct) {
	g.use(codecPath)
	t := GoName(s.Name)
	flat := isFlat(s)
	nested, elem := g.nested[s], g.elem[s]

	// The struct.
	g.p("// %s is the record of schema struct %s (%d-byte fixed section).", t, s.Name, s.Size)
	g.p("// The zero value is an empty record; it is not safe for concurrent use.")
	g.schemaDoc(true, s.Doc, s.Comment)
	g.p("type %s struct {", t)
	for _, f := range s.Fields {
		g.schemaDoc(false, f.Doc)
		tail := ""
		if f.Comment != "" {
			tail = "; " + oneLine(f.Comment)
		}
		g.p("%s %s // %s @%d%s", GoName(f.Name), goType(f.Type), f.Type, f.Offset, tail)
	}
	g.p("}\n")
	g.use("encoding")
	g.p("var _ encoding.BinaryAppender = (*%s)(nil)\n", t)

	// AppendZAP and its helpers.
	g.p("// AppendZAP appends m to dst as one whole ZAP message (version 1) and")
	g.p("// returns the extended slice, growing dst at most once. It allocates")
	g.p("// nothing when dst has SizeZAP bytes of spare capacity. m is only read.")
	g.p("// A message past the wire's 32-bit sizes and offsets (4 GiB, or 2 GiB")
	g.p("// between a nested object or list and its slot) panics with an error")
	g.p("// that wraps codec.ErrBuilder.")
	g.p("func (m *%s) AppendZAP(dst []byte) []byte {", t)
	if flat {
		g.flatAppend(s)
		g.p("}\n")
	} else {
		g.use("slices")
		g.p("dst = slices.Grow(dst, m.SizeZAP())")
		g.p("return m.zapAppend(dst)")
		g.p("}\n")
		g.p("// zapAppend appends m as one message without growing dst first.")
		g.p("func (m *%s) zapAppend(dst []byte) []byte {", t)
		g.p("base := len(dst)")
		g.p("dst = codec.AppendHeader(dst)")
		g.p("dst, root := m.zapObject(dst, base)")
		g.p("codec.PutHeader(dst, base, root)")
		g.p("return dst")
		g.p("}\n")
	}
	if !flat || nested {
		g.object(s)
	}

	// SizeZAP.
	g.p("// SizeZAP returns the exact length of the message AppendZAP writes for m.")
	if nested {
		g.p("func (m *%s) SizeZAP() int { return m.zapSize(codec.HeaderSize) }\n", t)
		g.p("// zapSize returns the message length after writing m's object at n.")
		g.p("func (m *%s) zapSize(n int) int {", t)
		g.p("n = (n+codec.Alignment-1)&^(codec.Alignment-1) + %d", s.Size)
	} else {
		g.p("func (m *%s) SizeZAP() int {", t)
		g.p("n := codec.HeaderSize + %d // the root object follows the header, which is 8-aligned", s.Size)
	}
	var tails []string
	for _, f := range s.Fields {
		n := GoName(f.Name)
		switch f.Type.Kind {
		case schema.KindText, schema.KindBytes:
			tails = append(tails, "len(m."+n+")")
		case schema.KindStruct:
			g.p("if m.%s != nil {", n)
			g.p("n = m.%s.zapSize(n)", n)
			g.p("}")
		case schema.KindList:
			g.p("n = (n + codec.Alignment - 1) &^ (codec.Alignment - 1) // a list starts 8-aligned, even an empty one")
			g.sizeList("m."+n, f.Type.Elem, 0)
		}
	}
	for _, sum := range sums(tails) {
		g.p("n += %s", sum)
	}
	g.p("return n")
	g.p("}\n")

	// DecodeZAP.
	g.p("// DecodeZAP fills m from the message at the start of b, reusing m's")
	g.p("// strings, slices and nested records where it can; nothing of b is")
	g.p("// retained. A field outside the message reads as its zero value.")
	if flat {
		g.p("// Errors: a *codec.FieldError with Path %q wrapping", s.Name)
		g.p("// codec.ErrTooSmall, codec.ErrMagic or codec.ErrVersion (errors.Is")
		if sharedTails(s) {
			g.p("// matches them) when b does not start with a message, or")
			g.p("// codec.ErrShared when its text and bytes values would take more than")
			g.p("// %d bytes per byte of the message, and 64 (fields that share a value):", budgetFactor)
			g.p("// m's scalar and bytes_fixed fields are then set, the others unchanged.")
		} else {
			g.p("// matches them) when b does not start with a message.")
		}
	} else {
		g.p("// Errors are a *codec.FieldError whose Path says where the input broke")
		g.p("// (%q, say) and which errors.Is matches with its cause:", examplePath(s))
		g.p("// codec.ErrTooSmall, codec.ErrMagic or codec.ErrVersion for a header,")
		g.p("// codec.ErrOutOfBounds, codec.ErrElementSize or codec.ErrNestedList for")
		g.p("// a list, codec.ErrTooDeep for nesting deeper than 100 levels, or")
		g.p("// codec.ErrShared when the records, lists and values decoding allocates")
		g.p("// would take more than %d bytes per byte of b (objects shared or cyclic,", budgetFactor)
		g.p("// or list elements whose records the message does not hold). On error")
		g.p("// m holds a partial result.")
	}
	g.p("func (m *%s) DecodeZAP(b []byte) error {", t)
	switch {
	case len(s.Fields) == 0:
		g.p("if _, err := codec.Parse(b); err != nil {")
		g.p("return codec.InField(err, %q)", s.Name)
		g.p("}")
	case flat:
		g.decodeFields(s, false, "b")
	default:
		g.p("o, ok := codec.RootOf(b) // inlined: no call for a well-formed header")
		g.p("if !ok {")
		g.p("msg, err := codec.Parse(b)")
		g.p("if err != nil {")
		g.p("return codec.InField(err, %q)", s.Name)
		g.p("}")
		g.p("o = msg.Root()")
		g.p("}")
		g.budgetedDecode(s, "o", "b, and 64; saturated (32-bit)", "len(b) <", "len(b)")
	}
	g.p("return nil")
	g.p("}\n")
	if elem {
		g.p("// zapDecodeMessage fills m from the message b, a list element.")
		g.p("func (m *%s) zapDecodeMessage(b []byte, depth int, budget *int) error {", t)
		g.p("if o, ok := codec.RootOf(b); ok {")
		g.p("return m.zapDecode(o, depth, budget)")
		g.p("}")
		g.p("msg, err := codec.Parse(b)")
		g.p("if err != nil {")
		g.p("return err")
		g.p("}")
		g.p("return m.zapDecode(msg.Root(), depth, budget)")
		g.p("}\n")
	}
	if !flat || nested || elem {
		g.p("// zapDecode fills m from object o, nested depth levels deep. budget is")
		g.p("// charged, in bytes, what decoding allocates (the Go size of each")
		g.p("// nested record and list element, each byte of text or bytes copied)")
		g.p("// and one more per object: a message whose objects are not shared")
		g.p("// costs at most %d times its size, so running out means shared or", budgetFactor)
		g.p("// cyclic objects. Errors carry the path below m (codec.InField).")
		g.p("func (m *%s) zapDecode(o codec.Object, depth int, budget *int) error {", t)
		g.p("if depth > 100 {")
		g.p("return codec.ErrTooDeep")
		g.p("}")
		g.p("if *budget--; *budget < 0 {")
		g.p("return codec.ErrShared")
		g.p("}")
		g.decodeFields(s, true, "")
		g.p("return nil")
		g.p("}\n")
	}

	g.decodeView(s, flat)

	// Binary interfaces.
	g.p("// AppendBinary implements encoding.BinaryAppender: it is AppendZAP.")
	g.p("func (m *%s) AppendBinary(dst []byte) ([]byte, error) { return m.AppendZAP(dst), nil }\n", t)
	g.p("// MarshalBinary returns m as a new ZAP message.")
	g.p("func (m *%s) MarshalBinary() ([]byte, error) { return m.AppendZAP(make([]byte, 0, m.SizeZAP())), nil }\n", t)
	g.p("// UnmarshalBinary is DecodeZAP; b is not retained.")
	g.p("func (m *%s) UnmarshalBinary(b []byte) error { return m.DecodeZAP(b) }\n", t)

	g.view(s)
	if g.results[s] {
		g.promise(s)
	}
}

// decodeView writes DecodeView, which fills a record from its view: what a
// handler calls to keep its request past its return. It decodes the
// view's object as DecodeZAP decodes a message's root (the same code: the
// fields of a flat record read in place, zapDecode otherwise, with the
// budget of the view's whole message), so it copies every text, bytes and
// list value and keeps nothing of the message.
func (g *generator) decodeView(s *schema.Struct, flat bool) {
	t := GoName(s.Name)
	g.p("// DecodeView fills m from the view v, as DecodeZAP fills it from a")
	g.p("// message: a server method that wants its request past its return")
	g.p("// decodes the request view into a record of its own this way. m keeps")
	g.p("// nothing of v's message: every text, bytes and list value is copied")
	g.p("// (into m's own strings and slices where they are the same or have room),")
	g.p("// so the message's buffer may be reused or changed once it returns. It")
	g.p("// allocates only those copies and the nested records m does not hold")
	g.p("// yet. A null v (or a field outside the message) reads as the zero value.")
	switch {
	case flat && sharedTails(s):
		g.p("// Its one error is a *codec.FieldError with Path %q wrapping", s.Name)
		g.p("// codec.ErrShared, as DecodeZAP's, when the text and bytes values would")
		g.p("// take more than %d bytes per byte of the message, and 64 (fields that", budgetFactor)
		g.p("// share a value): m's scalar and bytes_fixed fields are then set, the")
		g.p("// others unchanged.")
	case flat:
		g.p("// A record without nested records or lists always decodes: the error is")
		g.p("// nil.")
	default:
		g.p("// Errors are DecodeZAP's, with the path from v's object (%q, say):", examplePath(s))
		g.p("// a view is read leniently, a decode is checked.")
	}
	g.p("func (m *%s) DecodeView(v %sView) error {", t, t)
	switch {
	case len(s.Fields) == 0:
	case flat:
		g.p("o := v.o")
		g.decodeFields(s, false, "")
	default:
		g.budgetedDecode(s, "v.o", "the message, and 64, as DecodeZAP", "n := v.o.MessageSize(); n <", "n")
	}
	g.p("return nil")
	g.p("}\n")
}

// budgetedDecode writes the decode of record s from object obj under a
// budget of budgetFactor bytes per byte of the message, and 64: cond is
// the test that the product does not overflow, up to its "<", and size
// the message's size in it; per names the message in the comment.
func (g *generator) budgetedDecode(s *schema.Struct, obj, per, cond, size string) {
	g.use("math")
	g.p("budget := math.MaxInt // %d bytes per byte of %s", budgetFactor, per)
	g.p("if %s (math.MaxInt-64)/%d {", cond, budgetFactor)
	g.p("budget = %d*%s + 64", budgetFactor, size)
	g.p("}")
	g.p("if err := m.zapDecode(%s, 0, &budget); err != nil {", obj)
	g.p("return codec.InField(err, %q)", s.Name)
	g.p("}")
}

// promise writes the typed promise of record s, the result of some method
// of an interface of the package: what the client's Send<M> of such a
// method returns and what its <M>On methods take.
func (g *generator) promise(s *schema.Struct) {
	g.use("context")
	g.use(rpcPath)
	t := GoName(s.Name)
	pt := t + "Promise"
	g.p("// %s is the promise of a call whose answer is %s %s, sent", pt, article(t), t)
	g.p("// without waiting for it: what a client's Send<Method> returns for a")
	g.p("// method with that result, and what its <Method>On takes for a method")
	g.p("// with that request (pipelining the call on this one's answer). Take the")
	g.p("// answer with Wait or drop it with Release, one of the two, once; the")
	g.p("// embedded rpc.Promise gives Release, ID and the rest (its untyped Wait")
	g.p("// is p.Promise.Wait).")
	g.p("type %s struct{ rpc.Promise }\n", pt)
	g.p("// Wait waits for the call's answer and decodes it into resp (reusing")
	g.p("// resp's memory), with the errors of the client's plain call: a non-200")
	g.p("// answer is an *rpc.StatusError, one that is not a valid %s is", t)
	g.p("// DecodeZAP's error (a *codec.FieldError; resp may be partly filled).")
	g.p("// When ctx ends first, the call is abandoned and Wait returns ctx's")
	g.p("// error. Either way the promise is spent (rpc.Promise.Wait).")
	g.p("//")
	g.p("// A promise of the client's Send<Method> has its answer read into a")
	g.p("// pooled buffer, which Wait decodes and gives back (rpc.SendPooled).")
	g.p("func (p %s) Wait(ctx context.Context, resp *%s) error {", pt, t)
	g.p("out, bp, err := p.Promise.WaitPooled(ctx)")
	g.p("if err == nil {")
	g.p("err = resp.DecodeZAP(out)")
	g.p("}")
	g.p("if bp != nil {")
	g.p("rpc.PutBuffer(bp, *bp, out)")
	g.p("}")
	g.p("return err")
	g.p("}\n")
}

// budgetFactor is how many bytes a generated DecodeZAP may allocate per
// byte of its message before it fails with codec.ErrShared. A message
// whose objects are not shared costs at most that much: a list element
// takes at least 4 bytes (its size word) and its Go value at most 24 (a
// []byte or a nested list's slice), a record at most 4 times its fixed
// section (8-byte pointers for 4-byte object slots, 24-byte slices for
// 8-byte list slots, padding), and text and bytes cost their length.
const budgetFactor = 6

// maxHeldTails is how many text and bytes fields a record's decode reads
// into a variable each before copying them (see decodeFields).
const maxHeldTails = 64

// examplePath returns a path a DecodeZAP error of s could carry, for its
// doc: "Order.Items[2]" for a list field, "Order.Ship" for a nested record.
func examplePath(s *schema.Struct) string {
	for _, f := range s.Fields {
		switch f.Type.Kind {
		case schema.KindList:
			return s.Name + "." + f.Name + "[2]"
		case schema.KindStruct:
			return s.Name + "." + f.Name
		}
	}
	return s.Name
}

// object writes zapObject, which appends a record's object to a message
// being written, the way codec.Builder lays it out: the fixed section,
// 8-aligned from the message start; then its nested records and lists, in
// field order (each nested record's own values right after it); then its
// text and bytes values, in field order. Fields of the fixed section are
// stored in place; slots are pointed at what they refer to as it is
// written.
func (g *generator) object(s *schema.Struct) {
	g.p("// zapObject appends m's object (and what it nests) to dst, in the message")
	g.p("// that starts at base, and returns dst and the object's position.")
	g.p("func (m *%s) zapObject(dst []byte, base int) ([]byte, int) {", GoName(s.Name))
	if len(s.Fields) == 0 {
		g.p("return codec.AppendObject(dst, base, 0)")
		g.p("}\n")
		return
	}
	g.p("dst, o := codec.AppendObject(dst, base, %d)", s.Size)
	var tails []*schema.Field
	for _, f := range s.Fields {
		n, off := GoName(f.Name), f.Offset
		switch k := f.Type.Kind; k {
		case schema.KindText, schema.KindBytes:
			tails = append(tails, f)
		case schema.KindBytesFixed:
			g.p("copy(dst[o+%d:], m.%s[:])", off, n)
		case schema.KindStruct:
			g.p("if m.%s != nil {", n)
			g.p("var at int")
			g.p("dst, at = m.%s.zapObject(dst, base)", n)
			g.p("codec.PutObjectSlot(dst, o+%d, at)", off)
			g.p("}")
		case schema.KindList:
			g.writeList(off, "m."+n, f.Type.Elem)
		default:
			g.storeScalar(k, fmt.Sprintf("dst[o+%d:]", off), fmt.Sprintf("dst[o+%d]", off), "m."+n)
		}
	}
	for _, f := range tails {
		if f.Type.Kind == schema.KindText {
			g.p("dst = codec.AppendTail(dst, o+%d, m.%s)", f.Offset, GoName(f.Name))
		} else {
			g.p("dst = codec.AppendTailBytes(dst, o+%d, m.%s)", f.Offset, GoName(f.Name))
		}
	}
	g.p("return dst, o")
	g.p("}\n")
}

// storeScalar writes the statement storing scalar x of kind k at the
// slice expression at (one byte: the element expression b).
func (g *generator) storeScalar(k schema.Kind, at, b, x string) {
	switch k {
	case schema.KindBool:
		g.p("if %s {", x)
		g.p("%s = 1", b)
		g.p("}")
	case schema.KindU8:
		g.p("%s = %s", b, x)
	case schema.KindI8:
		g.p("%s = byte(%s)", b, x)
	default:
		w := scalars[k].width * 8
		g.use("encoding/binary")
		g.p("binary.LittleEndian.PutUint%d(%s, %s)", w, at, g.scalarEncode(k, x))
	}
}

// decodeFields writes the statements that fill m's fields from object o.
// The fields in the fixed section (scalars and bytes_fixed) are loaded
// from one bounds-checked view of it when the whole section lies inside
// the message, and one by one (each reading as zero when outside)
// otherwise; text, bytes, nested records and lists are read through their
// slots, each checked on its own. budget says whether the budget and depth
// variables of zapDecode are in scope (nested records and lists need them;
// a root-only flat record does without: its copies are bounded by its text
// fields times len(b)).
//
// msg names the []byte variable holding the message whose root object is
// m's (parsed here), or is "" when m's object is the variable o.
func (g *generator) decodeFields(s *schema.Struct, budget bool, msg string) {
	var inline, tails []*schema.Field
	for _, f := range s.Fields {
		switch k := f.Type.Kind; {
		case k.Scalar() || k == schema.KindBytesFixed:
			inline = append(inline, f)
		case k == schema.KindText || k == schema.KindBytes:
			tails = append(tails, f)
		}
	}
	// held says the text and bytes values are read into a variable each
	// (p0, p1, ...) with the fixed fields, then copied. Beyond maxHeldTails
	// each is read where it is copied (or counted), from o, into one
	// variable p: a variable each, all live at once across a block per
	// field, took the compiler time and memory quadratic in their count
	// (2,000 text fields, 170 s and 6 GB to compile one record), and so did
	// the debug information of a variable declared in each field's block.
	held := len(tails) <= maxHeldTails
	value := func(i int) string { // the i'th value, read
		if held {
			return fmt.Sprintf("p%d", i)
		}
		return fmt.Sprintf("o.Bytes(%d)", tails[i].Offset)
	}
	var ps, names []string
	for i, f := range tails {
		ps = append(ps, value(i))
		names = append(names, GoName(f.Name))
	}
	switch {
	case !held && len(inline) == 0:
		// Nothing to load from the fixed section: only a message whose
		// root is not at hand (DecodeZAP) needs parsing.
		if msg != "" {
			g.p("o, _ := codec.RootOf(%s)", msg)
			g.p("if len(o.Fixed(%d)) != %d { // a malformed header, a null root, or a root that runs past the end of the message", s.Size, s.Size)
			g.p("msg, err := codec.Parse(%s)", msg)
			g.p("if err != nil {")
			g.p("return codec.InField(err, %q)", s.Name)
			g.p("}")
			g.p("o = msg.Root()")
			g.p("}")
		}
	case len(inline)+len(tails) > 0:
		if held && len(tails) > 0 {
			g.p("var %s []byte // %s", strings.Join(ps, ", "), strings.Join(names, ", "))
		}
		g.p("// Once the whole fixed section is known to fit, loads from it at")
		g.p("// constant offsets need no bounds checks.")
		if msg != "" {
			// RootOf inlines: the common case makes no call.
			g.p("o, _ := codec.RootOf(%s)", msg)
		}
		g.p("if f := o.Fixed(%d); len(f) == %d {", s.Size, s.Size)
		for _, f := range inline {
			g.p("m.%s = %s", GoName(f.Name), g.loadFixed(f, "f"))
		}
		for i, f := range tails {
			if held {
				g.p("p%d = o.BytesIn(f, %d)", i, f.Offset)
			}
		}
		if msg != "" {
			g.p("} else { // a malformed header, a null root, or a root that runs past the end of the message")
			g.p("msg, err := codec.Parse(%s)", msg)
			g.p("if err != nil {")
			g.p("return codec.InField(err, %q)", s.Name)
			g.p("}")
			g.p("o = msg.Root()")
		} else {
			g.p("} else { // the object runs past the end of the message")
		}
		for _, f := range inline {
			n, off := GoName(f.Name), f.Offset
			if f.Type.Kind == schema.KindBytesFixed {
				g.p("m.%s = [%d]byte{}", n, f.Type.N)
				g.p("copy(m.%s[:], o.BytesFixed(%d, %d))", n, off, f.Type.N)
			} else {
				g.p("m.%s = o.%s(%d)", n, scalars[f.Type.Kind].get, off)
			}
		}
		for i, f := range tails {
			if held {
				g.p("p%d = o.Bytes(%d)", i, f.Offset)
			}
		}
		g.p("}")
	}
	if !budget && len(tails) > budgetFactor {
		// A budget of budgetFactor bytes per byte of the message bounds
		// the copies, as it does those of a record with nested records
		// or lists (zapDecode): each value lies inside the message, so
		// with budgetFactor tails or fewer they cannot pass it, but more
		// fields may all point at one long value.
		g.use("math")
		g.p("// The values are copied under the budget of a record with nested")
		g.p("// records or lists, %d bytes per byte of the message and 64: more", budgetFactor)
		g.p("// than %d text and bytes fields may all point at one long value.", budgetFactor)
		size := "o.MessageSize()" // DecodeView: its view's whole message
		if msg != "" {
			size = "len(" + msg + ")" // DecodeZAP: b, as a budgeted decode counts it
		}
		g.p("if n := %s; n < (math.MaxInt-64)/%d {", size, budgetFactor)
		g.p("left := %d*n + 64", budgetFactor)
		if held {
			g.p("for _, p := range [...][]byte{%s} {", strings.Join(ps, ", "))
			g.p("if left -= len(p); left < 0 {")
			g.p("return codec.InField(codec.ErrShared, %q)", s.Name)
			g.p("}")
			g.p("}")
		} else {
			// Each value lies inside the message (at most 4 GiB), so the
			// sum of their lengths cannot overflow before the check.
			for _, p := range ps {
				g.p("left -= len(%s)", p)
			}
			g.p("if left < 0 {")
			g.p("return codec.InField(codec.ErrShared, %q)", s.Name)
			g.p("}")
		}
		g.p("}")
	}
	if !held && len(tails) > 0 {
		g.p("var p []byte")
	}
	for i, f := range tails {
		n := GoName(f.Name)
		p := value(i)
		if !held {
			g.p("p = %s", p)
			p = "p"
		}
		if f.Type.Kind == schema.KindText {
			g.p("if !codec.SameText(%s, m.%s) {", p, n)
			g.p("m.%s = string(%s)", n, p)
			if budget {
				g.p("*budget -= len(%s)", p)
			}
			g.p("}")
		} else {
			g.p("m.%s = append(m.%s[:0], %s...)", n, n, p)
			if budget {
				g.p("*budget -= len(%s)", p)
			}
		}
	}
	for _, f := range s.Fields {
		n, off := GoName(f.Name), f.Offset
		switch f.Type.Kind {
		case schema.KindStruct:
			g.p("if c := o.Object(%d); c.IsNull() {", off)
			g.p("m.%s = nil", n)
			g.p("} else {")
			if len(f.Type.Struct.Fields) > 0 { // a record without fields takes no memory
				g.use("unsafe")
				g.p("if *budget -= int(unsafe.Sizeof(%s{})); *budget < 0 {", GoName(f.Type.Struct.Name))
				g.p("return codec.InField(codec.ErrShared, %q)", f.Name)
				g.p("}")
			}
			g.p("if m.%s == nil {", n)
			g.p("m.%s = new(%s)", n, GoName(f.Type.Struct.Name))
			g.p("}")
			g.p("if err := m.%s.zapDecode(c, depth+1, budget); err != nil {", n)
			g.p("return codec.InField(err, %q)", f.Name)
			g.p("}")
			g.p("}")
		case schema.KindList:
			wrap := func(err string) string { return fmt.Sprintf("codec.InField(%s, %q)", err, f.Name) }
			g.p("{")
			g.p("l0 := o.List(%d)", off)
			g.decodeList("m."+n, "l0", f.Type.Elem, 0, wrap)
			g.p("}")
		}
	}
}

// sharedTails reports whether the text and bytes values of s, copied by
// a decode of a record without a budget of its own (a flat one), can
// together pass budgetFactor bytes per byte of the message: whether s has
// more than budgetFactor text and bytes fields, which a hostile message
// may point at one value. Its decodes then check the budget.
func sharedTails(s *schema.Struct) bool {
	n := 0
	for _, f := range s.Fields {
		if k := f.Type.Kind; k == schema.KindText || k == schema.KindBytes {
			n++
		}
	}
	return n > budgetFactor
}

// loadFixed returns the expression reading field f (a scalar or
// bytes_fixed) from base, a pointer to the whole fixed section.
func (g *generator) loadFixed(f *schema.Field, base string) string {
	off := f.Offset
	k := f.Type.Kind
	if k == schema.KindBytesFixed {
		return fmt.Sprintf("[%d]byte(%s[%d:%d])", f.Type.N, base, off, off+f.Type.N)
	}
	w := scalars[k].width
	raw := fmt.Sprintf("%s[%d]", base, off)
	if w > 1 {
		g.use("encoding/binary")
		raw = fmt.Sprintf("binary.LittleEndian.Uint%d(%s[%d:%d])", w*8, base, off, off+w)
	}
	return g.scalarDecode(k, raw)
}

// view writes the view type of s and its accessors. The accessors check
// each field on its own, through codec.Object. Two checked-once designs
// were measured and dropped: a view holding its fixed section as a slice
// (10.04 → 10.55 ns in the compare handler), and one holding a
// *[N]byte of it beside the Object, nil when the section does not fit
// (BenchmarkViewRequest/generated, eth request: 9.1 → 28 ns, CPU time per
// op, 5 interleaved runs at load average 12–15): the five-word view is
// copied through the stack with overlapping 16-byte moves whose loads
// cannot be forwarded from the stores before them, and each accessor
// still needs its nil test, which put Account over the inlining
// budget.
func (g *generator) view(s *schema.Struct) {
	t := GoName(s.Name)
	v := t + "View"
	g.p("// %s is a read-only view of %s %s message.", v, article(t), t)
	g.p("// It is a small value; it and every string, slice and view read from it")
	g.p("// alias the message bytes and are valid only while those bytes are")
	g.p("// unchanged. Every accessor is total: a field outside the message reads")
	g.p("// as its zero value.")
	g.p("//")
	g.p("// (Unlike DecodeZAP, the accessors check each field's bounds on their")
	g.p("// own: views that held their fixed section, checked once, measured no")
	g.p("// faster.)")
	g.p("type %s struct{ o codec.Object }\n", v)
	g.p("// Read%s checks the message header at the start of b and returns a", t)
	g.p("// view of its root %s. It does not copy b and allocates only its error:", t)
	g.p("// a *codec.ParseError matching codec.ErrTooSmall, codec.ErrMagic or")
	g.p("// codec.ErrVersion (errors.Is).")
	g.p("func Read%s(b []byte) (%s, error) {", t, v)
	g.p("if o, ok := codec.RootOf(b); ok {")
	g.p("return %s{o}, nil", v)
	g.p("}")
	g.p("msg, err := codec.Parse(b)")
	g.p("if err != nil {")
	g.p("return %s{}, err", v)
	g.p("}")
	g.p("return %s{msg.Root()}, nil", v)
	g.p("}\n")
	g.p("// IsNull reports whether the viewed object is null (a nil nested record).")
	g.p("func (v %s) IsNull() bool { return v.o.IsNull() }\n", v)
	for _, f := range s.Fields {
		n, off := GoName(f.Name), f.Offset
		a := viewAccessor(n)
		at := fmt.Sprintf("bytes [%d, %d)", off, off+f.Width)
		fdoc := func() { g.schemaDoc(true, f.Doc, f.Comment) }
		switch k := f.Type.Kind; k {
		case schema.KindText:
			g.p("// %s returns field %s (text, slot %s). The result aliases the message:", a, f.Name, at)
			g.p("// it changes when those bytes are reused, so copy it (strings.Clone) to")
			g.p("// keep it longer.")
			fdoc()
			g.p("func (v %s) %s() string { return v.o.Text(%d) }\n", v, a, off)
			g.p("// %sBytes returns field %s as bytes. The result aliases the message.", n, f.Name)
			g.p("// It is nil when the field is null (AppendZAP writes an empty value so)")
			g.p("// or its value does not lie inside the message, and empty but not nil")
			g.p("// for an empty value at an offset (which other writers may leave).")
			g.p("func (v %s) %sBytes() []byte { return v.o.Bytes(%d) }\n", v, n, off)
		case schema.KindBytes:
			g.p("// %s returns field %s (bytes, slot %s). The result aliases the message.", a, f.Name, at)
			g.p("// It is nil when the field is null (AppendZAP writes an empty value so)")
			g.p("// or its value does not lie inside the message, and empty but not nil")
			g.p("// for an empty value at an offset (which other writers may leave).")
			fdoc()
			g.p("func (v %s) %s() []byte { return v.o.Bytes(%d) }\n", v, a, off)
		case schema.KindBytesFixed:
			g.p("// %s returns a copy of field %s (%s, %s).", a, f.Name, f.Type, at)
			fdoc()
			g.p("func (v %s) %s() (a [%d]byte) {", v, a, f.Type.N)
			g.p("copy(a[:], v.o.BytesFixed(%d, %d))", off, f.Type.N)
			g.p("return a")
			g.p("}\n")
			g.p("// %sBytes returns field %s in place, nil when outside the message. The result aliases the message.", n, f.Name)
			g.p("func (v %s) %sBytes() []byte { return v.o.BytesFixed(%d, %d) }\n", v, n, off, f.Type.N)
		case schema.KindStruct:
			g.p("// %s returns a view of nested field %s (slot %s); it is null when the slot is.", a, f.Name, at)
			fdoc()
			u := GoName(f.Type.Struct.Name)
			g.p("func (v %s) %s() %sView { return %sView{v.o.Object(%d)} }\n", v, a, u, u, off)
		case schema.KindList:
			g.fieldListViews(t, s, f)
		default:
			g.p("// %s returns field %s (%s, %s).", a, f.Name, f.Type, at)
			fdoc()
			g.p("func (v %s) %s() %s { return v.o.%s(%d) }\n", v, a, scalars[k].goType, scalars[k].get, off)
		}
	}
}

// schemaDoc writes the schema's comments (doc, then a trailing comment)
// as Go comment lines: after a "//" line when they follow generated text
// (para), else on their own. Nothing when they are all empty.
func (g *generator) schemaDoc(para bool, comments ...string) {
	var lines []string
	for _, c := range comments {
		if c != "" {
			lines = append(lines, strings.Split(goComment(c), "\n")...)
		}
	}
	if len(lines) == 0 {
		return
	}
	if para {
		g.p("//")
	}
	for _, l := range lines {
		if l == "" {
			g.p("//")
		} else {
			g.p("// %s", l)
		}
	}
}

// oneLine joins the lines of a comment with spaces.
func oneLine(c string) string { return strings.ReplaceAll(goComment(c), "\n", " ") }

// goComment replaces what Go source may not hold in a comment (control
// characters but tab and newline, a byte order mark) with U+FFFD.
func goComment(c string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' && r != '\n' || r == 0x7f || r == 0xfeff {
			return '\ufffd'
		}
		return r
	}, c)
}

// article returns "an" before a word that starts with a vowel sound and
// "a" otherwise, by its spelling: a vowel starts one, but not "U" before
// a consonant and a vowel ("a User", "a Unit"; "an Update") nor "Eu" ("a
// Europe") nor "One".
func article(word string) string {
	w := strings.ToLower(word)
	vowel := func(i int) bool { return i < len(w) && strings.IndexByte("aeiou", w[i]) >= 0 }
	switch {
	case w == "" || !vowel(0):
		return "a"
	case w[0] == 'u' && len(w) > 2 && !vowel(1) && vowel(2),
		strings.HasPrefix(w, "eu"), strings.HasPrefix(w, "one"):
		return "a"
	}
	return "an"
}

// fieldListViews writes the view accessor of list field f of struct s and
// the view and iterator types of every list level it holds.
func (g *generator) fieldListViews(t string, s *schema.Struct, f *schema.Field) {
	n, off := GoName(f.Name), f.Offset
	a := viewAccessor(n)
	lists, iters := listTypeNames(t, n, f.Type)
	g.p("// %s returns a view of list field %s (%s, slot bytes [%d, %d)).", a, f.Name, f.Type, off, off+f.Width)
	g.schemaDoc(true, f.Doc, f.Comment)
	g.p("func (v %s) %s() %s { return %s{v.o.List(%d)} }\n", t+"View", a, lists[0], lists[0], off)
	what := "list field " + s.Name + "." + f.Name
	e := f.Type.Elem
	for lvl := range lists {
		below := ""
		if lvl+1 < len(lists) {
			below = lists[lvl+1]
		}
		g.listView(lists[lvl], iters[lvl], e, below, what, lvl == 0)
		what = "an element of " + what
		e = e.Elem
	}
}

// isFlat reports whether s has no nested objects and no lists: its message
// is the header, its fixed section and its text and bytes values in field
// order, which codec.AppendFlat writes without a Builder.
func isFlat(s *schema.Struct) bool {
	for _, f := range s.Fields {
		if k := f.Type.Kind; k == schema.KindStruct || k == schema.KindList {
			return false
		}
	}
	return true
}

// flatAppend writes the body of AppendZAP for a flat record: one grow, the
// fields stored in place, then the text and bytes values in field order
// (the order the Builder would write them in).
func (g *generator) flatAppend(s *schema.Struct) {
	g.flatBody(s, false)
	g.p("return dst")
}

// flatBody writes the statements that append a flat record m to dst as a
// whole message. nested says they go in a block of their own inside other
// statements (a list element: the message is written in place there, with
// no call), where o is declared rather than defined along with dst.
func (g *generator) flatBody(s *schema.Struct, nested bool) {
	var tails []string
	for _, f := range s.Fields {
		if k := f.Type.Kind; k == schema.KindText || k == schema.KindBytes {
			tails = append(tails, "len(m."+GoName(f.Name)+")")
		}
	}
	switch sums := sums(tails); {
	case len(sums) == 0:
		tails = []string{"0"}
	case len(sums) > 1:
		g.p("tails := %s", sums[0])
		for _, sum := range sums[1:] {
			g.p("tails += %s", sum)
		}
		tails = []string{"tails"}
	}
	o := "o :"
	switch {
	case len(s.Fields) == 0:
		o = "_"
	case nested:
		g.p("var o int")
		o = "o "
	}
	g.p("dst, %s= codec.AppendFlat(dst, %d, %s)", o, s.Size, strings.Join(tails, " + "))
	for _, f := range s.Fields {
		n, off := GoName(f.Name), f.Offset
		at := fmt.Sprintf("dst[o+%d:]", off)
		switch k := f.Type.Kind; k {
		case schema.KindText:
			g.p("dst = codec.AppendTail(dst, o+%d, m.%s)", off, n)
		case schema.KindBytes:
			g.p("dst = codec.AppendTailBytes(dst, o+%d, m.%s)", off, n)
		case schema.KindBytesFixed:
			g.p("copy(%s, m.%s[:])", at, n)
		default:
			g.storeScalar(k, at, fmt.Sprintf("dst[o+%d]", off), "m."+n)
		}
	}
}

// maxSumTerms bounds the terms of one sum the generator writes (the
// lengths of a record's text and bytes fields): a longer sum is split into
// statements of at most maxSumTerms terms each. One sum of a term per field
// is a binary expression as deep as the record has fields, which gofmt
// (go/printer walks the whole left operand at each level) took quadratic
// time to print: a record of 32,000 text fields spent most of its 19 s of
// generation there, and 50,000 fields took over ten minutes.
const maxSumTerms = 8

// sums returns terms joined by " + " in groups of at most maxSumTerms,
// one for each statement of a split sum; none for no terms.
func sums(terms []string) []string {
	var out []string
	for len(terms) > 0 {
		k := min(len(terms), maxSumTerms)
		out = append(out, strings.Join(terms[:k], " + "))
		terms = terms[k:]
	}
	return out
}
