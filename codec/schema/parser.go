package schema

import (
	"strconv"
)

// Source is one schema file for [ParseFiles].
type Source struct {
	Name string // used in positions and error messages
	Src  []byte // the file's contents; not retained
}

// Parse parses and resolves one schema file. filename is used only in
// positions and error messages. On failure it returns a nil File and an
// [*Error]. src is not retained.
func Parse(filename string, src []byte) (*File, error) {
	return ParseFiles(Source{filename, src})
}

// ParseFiles parses several schema files as one unit: declarations in any
// file may reference each other, names must be unique across all of them,
// and the files that have a package clause must agree on it. On failure it
// returns a nil File and an [*Error]. No sources give an empty File.
func ParseFiles(srcs ...Source) (*File, error) {
	p := &parser{
		f:       &File{},
		names:   map[string]declared{},
		aliases: map[string]*Alias{},
		structs: map[string]*Struct{},
	}
	for _, s := range srcs {
		p.f.Files = append(p.f.Files, s.Name)
		p.lx, p.ahead, p.docLine, p.sawBad = newLexer(s.Name, s.Src), p.ahead[:0], 0, false
		p.lineDoc, p.lineDocLine = "", 0
		// The tokens before a character the lexer refuses are parsed
		// first: a syntax error among them comes before it in the file.
		// One the parser found on reaching that character is the
		// character's.
		err := p.file()
		if p.sawBad {
			err = p.lx.err
		}
		if err != nil {
			return nil, err
		}
	}
	r := &resolver{aliases: p.aliases, structs: p.structs}
	if err := r.file(p.f); err != nil {
		return nil, err
	}
	return p.f, nil
}

// builtins maps the scalar, text and bytes type names to their kinds;
// bytes_fixed and list are parsed separately.
var builtins = map[string]Kind{
	"bool": KindBool, "u8": KindU8, "u16": KindU16, "u32": KindU32, "u64": KindU64,
	"i8": KindI8, "i16": KindI16, "i32": KindI32, "i64": KindI64,
	"f32": KindF32, "f64": KindF64, "text": KindText, "bytes": KindBytes,
}

// topKeywords start top-level declarations.
var topKeywords = map[string]bool{"package": true, "type": true, "struct": true, "interface": true}

// declared records the first declaration of a top-level name.
type declared struct {
	what string // "alias", "struct", "interface"
	pos  Pos
}

type parser struct {
	lx     *lexer  // of the current file
	ahead  []token // tokens the parser looked at and did not consume
	sawBad bool    // the parser looked at a tokBad
	// lineDoc is the doc of the line of the token consumed last
	// (lineDocLine), from the line's first token.
	lineDoc     string
	lineDocLine int
	docLine     int // the line whose comments went to a declaration last
	f           *File
	names       map[string]declared
	aliases     map[string]*Alias
	structs     map[string]*Struct
}

func (p *parser) peek() token { return p.at(0) }

// at returns the token k places ahead (0: the next one), noting when it
// is a character the lexer refused.
func (p *parser) at(k int) token {
	t := p.look(k)
	if t.kind == tokBad {
		p.sawBad = true
	}
	return t
}

// look returns the token k places ahead, taking tokens from the lexer up
// to it (k is at most 1: the parser holds at most two).
func (p *parser) look(k int) token {
	for len(p.ahead) <= k {
		p.ahead = append(p.ahead, p.lx.next())
	}
	return p.ahead[k]
}

// docs returns the comments of the declaration whose name is name, the
// token consumed last: doc, the comment lines alone on the lines right
// above it (no blank line between), and trailing, the comment at the end
// of its line. A trailing comment, and the doc above a line, go to the
// first declaration of the line (a struct, not its fields, on a one-line
// struct).
func (p *parser) docs(name token) (doc, trailing string) {
	line := name.pos.Line
	if line == p.docLine {
		return "", ""
	}
	p.docLine = line
	if p.lineDocLine == line {
		doc = p.lineDoc
	}
	return doc, p.lx.trailing(name.off)
}

// next consumes a token; at the end it keeps returning tokEOF (or tokBad).
func (p *parser) next() token {
	t := p.at(0)
	if t.kind != tokEOF && t.kind != tokBad {
		p.ahead = p.ahead[:copy(p.ahead, p.ahead[1:])]
		if t.first {
			p.lineDoc, p.lineDocLine = t.doc, t.pos.Line
		}
	}
	return t
}

func (t token) is(punct string) bool { return t.kind == tokPunct && t.text == punct }

// expect consumes the punctuation punct or fails with "expected punct what".
func (p *parser) expect(punct, what string) error {
	if t := p.next(); !t.is(punct) {
		return errorf(t.pos, "expected %q %s, got %s", punct, what, t.describe())
	}
	return nil
}

// endLine consumes the end of a line (or accepts the end of the file).
func (p *parser) endLine(after string) error {
	t := p.peek()
	switch t.kind {
	case tokNewline:
		p.next()
		return nil
	case tokEOF:
		return nil
	}
	return errorf(t.pos, "unexpected %s after %s", t.describe(), after)
}

// file parses the top-level declarations of one file.
func (p *parser) file() error {
	pkgDone := false
	for {
		t := p.next()
		var err error
		switch {
		case t.kind == tokEOF:
			return nil
		case t.pos.Col != 1:
			err = errorf(t.pos, "unexpected indentation: top-level declarations start in column 1")
		case t.kind == tokIdent && t.text == "package":
			if pkgDone {
				return errorf(t.pos, "duplicate package clause")
			}
			pkgDone = true
			err = p.pkg()
		case t.kind == tokIdent && t.text == "type":
			err = p.alias()
		case t.kind == tokIdent && t.text == "struct":
			err = p.structDecl()
		case t.kind == tokIdent && t.text == "interface":
			err = p.iface()
		default:
			err = errorf(t.pos, "unexpected %s; expected package, type, struct or interface%s", t.describe(), protoTopHints[t.text])
		}
		if err != nil {
			return err
		}
	}
}

func (p *parser) pkg() error {
	t := p.next()
	if t.kind != tokIdent || topKeywords[t.text] {
		return errorf(t.pos, "expected package name, got %s", t.describe())
	}
	switch {
	case p.f.Package == "":
		p.f.Package, p.f.PackagePos = t.text, t.pos
	case p.f.Package != t.text:
		return errorf(t.pos, "package %s does not match package %s at %s", t.text, p.f.Package, p.f.PackagePos)
	}
	return p.endLine("package clause")
}

// declare checks a new top-level name and records it.
func (p *parser) declare(what string) (token, error) {
	t := p.next()
	if t.kind != tokIdent {
		return t, errorf(t.pos, "expected %s name, got %s", what, t.describe())
	}
	if _, ok := builtins[t.text]; ok || topKeywords[t.text] || t.text == "bytes_fixed" || t.text == "list" || t.text == "returns" {
		return t, errorf(t.pos, "cannot use reserved word %s as %s name", t.text, what)
	}
	if d, ok := p.names[t.text]; ok {
		if d.what == what {
			return t, errorf(t.pos, "duplicate %s %s (first declared at %s)", what, t.text, d.pos)
		}
		return t, errorf(t.pos, "%s %s conflicts with %s %s declared at %s", what, t.text, d.what, t.text, d.pos)
	}
	p.names[t.text] = declared{what, t.pos}
	return t, nil
}

// alias parses "type Name = T" after "type".
func (p *parser) alias() error {
	name, err := p.declare("alias")
	if err != nil {
		return err
	}
	if err := p.expect("=", "after alias name "+name.text); err != nil {
		return err
	}
	t, err := p.typ()
	if err != nil {
		return err
	}
	a := &Alias{Name: name.text, Pos: name.pos, expr: t}
	a.Doc, a.Comment = p.docs(name)
	p.f.Aliases = append(p.f.Aliases, a)
	p.aliases[a.Name] = a
	return p.endLine("alias " + a.Name)
}

// structDecl parses a struct in either form after "struct".
func (p *parser) structDecl() error {
	name, err := p.declare("struct")
	if err != nil {
		return err
	}
	s := &Struct{Name: name.text, Pos: name.pos}
	s.Doc, s.Comment = p.docs(name)
	p.f.Structs = append(p.f.Structs, s)
	p.structs[s.Name] = s
	seen := map[string]*Field{}
	if t := p.peek(); t.is("{") {
		p.next()
		return p.block("struct "+s.Name, t, func() error { return p.field(s, seen) })
	}
	if err := p.endLine("struct " + s.Name); err != nil {
		return err
	}
	return p.indented("fields of struct "+s.Name, func() (string, error) {
		if err := p.field(s, seen); err != nil {
			return "", err
		}
		return "field " + s.Fields[len(s.Fields)-1].Name, nil
	})
}

// indented reads the whitespace form of a struct or interface body: every
// following line not in column 1 is one member (read by member, which
// returns what the line's end is after), all starting in one column.
func (p *parser) indented(members string, member func() (string, error)) error {
	indent := 0
	for {
		t := p.peek()
		if t.kind == tokEOF || t.pos.Col == 1 {
			return nil
		}
		if indent == 0 {
			indent = t.pos.Col
		} else if t.pos.Col != indent {
			return errorf(t.pos, "inconsistent indentation: %s start in column %d", members, indent)
		}
		after, err := member()
		if err != nil {
			return err
		}
		if err := p.endLine(after); err != nil {
			return err
		}
	}
}

// block parses the items of a brace block whose "{" (open) was consumed,
// up to and including "}" and the end of its line. Items are separated by
// newlines or ";". A top-level keyword in column 1 or the end of the file
// before "}" makes the block unterminated.
func (p *parser) block(what string, open token, item func() error) error {
	for {
		t := p.peek()
		switch {
		case t.kind == tokNewline || t.is(";"):
			p.next()
			continue
		case t.is("}"):
			p.next()
			return p.endLine("}")
		case t.kind == tokEOF || t.pos.Col == 1 && t.kind == tokIdent && topKeywords[t.text]:
			return errorf(open.pos, "unterminated %s: missing \"}\"", what)
		}
		if err := item(); err != nil {
			return err
		}
		if t := p.peek(); t.kind != tokNewline && !t.is(";") && !t.is("}") && t.kind != tokEOF {
			return errorf(t.pos, "unexpected %s in %s; expected end of line, \";\" or \"}\"", t.describe(), what)
		}
	}
}

// field parses "Name Type [@N]".
func (p *parser) field(s *Struct, seen map[string]*Field) error {
	name := p.next()
	if name.kind != tokIdent {
		return errorf(name.pos, "expected field name in struct %s, got %s", s.Name, name.describe())
	}
	if prev, ok := seen[name.text]; ok {
		return errorf(name.pos, "duplicate field %s in struct %s (first declared at %s)", name.text, s.Name, prev.Pos)
	}
	t, err := p.typ()
	if err != nil {
		return err
	}
	if hint, ok := protoFieldHints[t.ref]; ok {
		// "repeated u32", "optional u32", "map<K, V>": a protobuf habit,
		// which would fail below on the token after the name anyway.
		if n := p.peek(); n.kind == tokIdent || n.is("<") {
			return errorf(n.pos, "unexpected %s after \"%s %s\" (%s)", n.describe(), name.text, t.ref, hint)
		}
	}
	f := &Field{Name: name.text, Pos: name.pos, expr: t}
	f.Doc, f.Comment = p.docs(name)
	if p.peek().is("@") {
		p.next()
		n := p.next()
		if n.is("-") {
			if m := p.peek(); m.kind == tokNumber {
				return errorf(n.pos, "negative offset -%s for field %s", m.text, f.Name)
			}
		}
		if f.Offset, err = number(n, "offset of field "+f.Name); err != nil {
			return err
		}
		f.Explicit = true
	}
	seen[f.Name] = f
	s.Fields = append(s.Fields, f)
	return nil
}

// number converts a decimal integer token in [0, MaxStructSize].
func number(t token, what string) (int, error) {
	ok := t.kind == tokNumber
	for i := 0; ok && i < len(t.text); i++ {
		ok = isDigit(t.text[i])
	}
	if !ok {
		return 0, errorf(t.pos, "%s must be a non-negative decimal integer, got %s", what, t.describe())
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n > MaxStructSize {
		return 0, errorf(t.pos, "%s is too large: %s (max %d)", what, t.text, MaxStructSize)
	}
	return n, nil
}

// typ parses a type expression. Names other than builtins stay unresolved.
func (p *parser) typ() (*Type, error) { return p.typeIn(0, Pos{}) }

// typeIn parses a type expression that is the element of depth nested
// lists, the outermost of which is at outer. Lists nested more than
// MaxListDepth deep are refused here, counted without recursing (a schema
// may nest millions, which would overflow the stack), as well as after
// resolution (aliases of lists nest too).
func (p *parser) typeIn(depth int, outer Pos) (*Type, error) {
	t := p.next()
	if t.kind != tokIdent || topKeywords[t.text] || t.text == "returns" {
		if t.is("[") {
			return nil, errorf(t.pos, "expected a type, got %s (a list is list<T>)", t.describe())
		}
		return nil, errorf(t.pos, "expected a type, got %s", t.describe())
	}
	switch t.text {
	case "bytes_fixed":
		if !p.peek().is("[") {
			return nil, errorf(t.pos, "bytes_fixed needs a size: bytes_fixed[N]")
		}
		p.next()
		n, err := number(p.next(), "bytes_fixed size")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, errorf(t.pos, "bytes_fixed size must be at least 1")
		}
		if err := p.expect("]", "after bytes_fixed size"); err != nil {
			return nil, err
		}
		return &Type{Kind: KindBytesFixed, N: n, Pos: t.pos}, nil
	case "list":
		if !p.peek().is("<") || p.at(1).is(">") {
			return nil, errorf(t.pos, "list needs an element type: list<T>")
		}
		if depth == 0 {
			outer = t.pos
		}
		if depth == MaxListDepth {
			// Counted by consuming the rest (this is the error), without
			// holding tokens; a character the lexer refuses ends the
			// count, not the error, which comes before it.
			d := depth + 1
			p.next() // "<"
			for t := p.look(0); t.kind == tokIdent && t.text == "list" && p.look(1).is("<"); t = p.look(0) {
				p.ahead = p.ahead[:0]
				d++
			}
			return nil, errorf(outer, "lists nested %d deep; at most %d levels of list<list<...>> are allowed", d, MaxListDepth)
		}
		p.next()
		elem, err := p.typeIn(depth+1, outer)
		if err != nil {
			return nil, err
		}
		if err := p.expect(">", "after list element type"); err != nil {
			return nil, err
		}
		return &Type{Kind: KindList, Elem: elem, Pos: t.pos}, nil
	}
	if k, ok := builtins[t.text]; ok {
		return &Type{Kind: k, Pos: t.pos}, nil
	}
	return &Type{ref: t.text, Pos: t.pos}, nil
}

// iface parses an interface in either form after "interface": "interface
// Name { methods }", or "interface Name" followed by its methods indented
// one per line, no braces (docs/wire.md §10).
func (p *parser) iface() error {
	name, err := p.declare("interface")
	if err != nil {
		return err
	}
	it := &Interface{Name: name.text, Pos: name.pos}
	it.Doc, it.Comment = p.docs(name)
	p.f.Interfaces = append(p.f.Interfaces, it)
	seen := map[string]*Method{}
	if open := p.peek(); open.is("{") {
		p.next()
		return p.block("interface "+it.Name, open, func() error { return p.method(it, seen) })
	}
	if t := p.peek(); t.kind != tokNewline && t.kind != tokEOF {
		return errorf(t.pos, "expected \"{\" or end of line after interface %s, got %s", it.Name, t.describe())
	}
	if p.peek().kind == tokNewline {
		p.next()
	}
	return p.indented("methods of interface "+it.Name, func() (string, error) {
		if err := p.method(it, seen); err != nil {
			return "", err
		}
		return "method " + it.Methods[len(it.Methods)-1].Name, nil
	})
}

// method parses "name(req: T) [returns (resp: U)]"; either list may be empty.
func (p *parser) method(it *Interface, seen map[string]*Method) error {
	name := p.next()
	if name.kind != tokIdent {
		return errorf(name.pos, "expected method name in interface %s, got %s", it.Name, name.describe())
	}
	if prev, ok := seen[name.text]; ok {
		return errorf(name.pos, "duplicate method %s in interface %s (first declared at %s)", name.text, it.Name, prev.Pos)
	}
	m := &Method{Name: name.text, Pos: name.pos, Ordinal: uint32(len(it.Methods) + 1)}
	m.Doc, m.Comment = p.docs(name)
	var err error
	if err = p.expect("(", "after method name "+m.Name); err != nil {
		return err
	}
	if m.ReqName, m.reqExpr, m.ReqStream, err = p.param(m.Name, "parameter"); err != nil {
		return err
	}
	if t := p.peek(); t.kind == tokIdent && t.text == "returns" {
		p.next()
		if err = p.expect("(", "after returns"); err != nil {
			return err
		}
		if m.RespName, m.respExpr, m.RespStream, err = p.param(m.Name, "result"); err != nil {
			return err
		}
	}
	seen[m.Name] = m
	it.Methods = append(it.Methods, m)
	return nil
}

// param parses "[name: T] )" after "(", or the stream forms "stream T )"
// and "name: stream T )" (zapcodec extension: a stream of T).
func (p *parser) param(method, what string) (string, *Type, bool, error) {
	if p.peek().is(")") {
		p.next()
		return "", nil, false, nil
	}
	name := ""
	if !p.streamAhead() {
		n := p.next()
		if n.kind != tokIdent {
			return "", nil, false, errorf(n.pos, "expected %s name in method %s, got %s", what, method, n.describe())
		}
		if c := p.next(); !c.is(":") {
			return "", nil, false, errorf(c.pos, "expected \":\" after %s name %s, got %s (write name: Type)", what, n.text, c.describe())
		}
		name = n.text
	}
	stream := p.streamAhead()
	if stream {
		p.next()
	}
	t, err := p.typ()
	if err != nil {
		return "", nil, false, err
	}
	if c := p.peek(); c.is(",") {
		return "", nil, false, errorf(c.pos, "method %s takes at most one %s", method, what)
	}
	if c := p.peek(); stream && name == "" && c.is(":") {
		// "stream req: T": the name came after the word stream.
		return "", nil, false, errorf(c.pos, "a stream %s is written \"stream T\" or \"name: stream T\", not \"stream %s: T\"", what, t)
	}
	after := what
	if name != "" {
		after += " " + name
	}
	if err := p.expect(")", "after "+after); err != nil {
		return "", nil, false, err
	}
	return name, t, stream, nil
}

// streamAhead reports whether the next tokens are "stream T": the word
// stream followed by a type name (not ":" or ")", which make stream a
// parameter name or a type).
func (p *parser) streamAhead() bool {
	t := p.peek()
	if t.kind != tokIdent || t.text != "stream" {
		return false
	}
	return p.at(1).kind == tokIdent
}
