package compat

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Breaks names the peers a change breaks: a set of [OldReaders] and
// [OldWriters], 0 for a change that breaks no peer.
type Breaks uint8

const (
	// OldReaders: a peer with the old schema misreads, or fails on, what
	// a peer with the new schema writes (a message, or a call).
	OldReaders Breaks = 1 << iota
	// OldWriters: a peer with the new schema misreads, or fails on, what
	// a peer with the old schema writes.
	OldWriters
	// Both is OldReaders | OldWriters: no upgrade order avoids the break.
	Both = OldReaders | OldWriters
)

// String returns "none", "old readers", "old writers" or "old readers
// and old writers".
func (b Breaks) String() string {
	switch b {
	case 0:
		return "none"
	case OldReaders:
		return "old readers"
	case OldWriters:
		return "old writers"
	case Both:
		return "old readers and old writers"
	}
	return fmt.Sprintf("Breaks(%d)", uint8(b))
}

// Kind is what a [Change] changed.
type Kind uint8

// The kinds of change. The Breaks each one has is given after it; "one
// way" is OldReaders or OldWriters as the text says.
const (
	_ Kind = iota
	// PackageRenamed: the package clause changed, which renames every
	// interface's service. Both when the schemas have interfaces, 0
	// otherwise.
	PackageRenamed
	// InterfaceAdded: 0.
	InterfaceAdded
	// InterfaceRemoved: OldWriters (old clients' calls to it fail).
	InterfaceRemoved
	// InterfaceRenamed: Both (its service name, which health checks ask
	// for, changes).
	InterfaceRenamed
	// MethodAppended: a method at an ordinal the old interface did not
	// have. 0 (an old server answers it 404 rpc.NoSuchMethod).
	MethodAppended
	// MethodInserted: a new method at an ordinal an old method had. Both.
	MethodInserted
	// MethodRemoved: OldWriters (old clients' calls to it get 404, or
	// reach the method that now has its ordinal).
	MethodRemoved
	// MethodMoved: a method whose ordinal changed. Both.
	MethodMoved
	// MethodRenamed: a method at the same ordinal under another name. 0,
	// taking it for the same method renamed: the wire cannot tell it
	// from another method put in the old one's place (old clients'
	// calls would run it), which the message says.
	MethodRenamed
	// RequestAdded: a method that took no request takes one. OldWriters.
	RequestAdded
	// RequestRemoved: a method that took a request takes none. OldReaders.
	RequestRemoved
	// ResultAdded: a method that returned nothing returns a result.
	// OldWriters.
	ResultAdded
	// ResultRemoved: a method that returned a result returns none.
	// OldReaders.
	ResultRemoved
	// StreamChanged: the request or result became a stream, or stopped
	// being one. Both.
	StreamChanged
	// StructAdded and StructRemoved: a struct in one schema only, that
	// nothing matched with a struct of the other. 0: the wire has no
	// struct names, and a use of it that changed is reported at the use.
	StructAdded
	StructRemoved
	// StructRenamed: 0.
	StructRenamed
	// FieldAppended: a field past the end of the old fixed section.
	// OldWriters.
	FieldAppended
	// FieldAddedInGap: a field on bytes the old struct has inside its
	// fixed section but no field on, which old writers leave zero. 0.
	FieldAddedInGap
	// FieldInserted: a field on bytes an old field had. Both.
	FieldInserted
	// FieldRemovedAtEnd: a field past the end of the new fixed section.
	// OldReaders.
	FieldRemovedAtEnd
	// FieldRemovedInGap: a field whose bytes the new struct keeps with no
	// field on them, which new writers leave zero. 0.
	FieldRemovedInGap
	// FieldRemoved: a field whose bytes a new field has. Both.
	FieldRemoved
	// FieldMoved: a field (matched by name) at another offset. Both.
	FieldMoved
	// FieldRetyped: a field whose type changed at the same offset. Both.
	FieldRetyped
	// FieldSameBytes: text became bytes or bytes text (in a field, or as
	// list elements). 0: the wire holds the same bytes, which generated
	// code reads as written; codec/dynamic, which refuses text that is
	// not UTF-8, fails on bytes that are not UTF-8 read as text (the
	// message says on which side).
	FieldSameBytes
	// FieldRenamed: a field at the same offset under another name. 0.
	FieldRenamed
	// AliasChanged: an alias stands for another type. 0 itself: each
	// field that uses it is reported.
	AliasChanged
	// Incomplete: the comparison stopped before the end, the struct pairs
	// to compare being too many for the schemas' size (new structs used
	// in place of many different old ones, each compared field by field:
	// see [Compare]). Both, as what was not compared may break peers.
	Incomplete
)

var kindNames = [...]string{"invalid", "package renamed", "interface added", "interface removed",
	"interface renamed", "method appended", "method inserted", "method removed", "method moved",
	"method renamed", "request added", "request removed", "result added", "result removed",
	"stream changed", "struct added", "struct removed", "struct renamed", "field appended",
	"field added in gap", "field inserted", "field removed at end", "field removed in gap",
	"field removed", "field moved", "field retyped", "field same bytes", "field renamed", "alias changed",
	"incomplete"}

// String returns the kind in words: "field appended".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Change is one difference between two schemas.
type Change struct {
	Kind   Kind
	Breaks Breaks // the peers it breaks; 0 for none
	// NoOrder is set on a change that breaks one way only (Breaks is
	// OldReaders or OldWriters) to a struct that clients and servers both
	// write, so that no upgrade order of the two sides avoids it.
	NoOrder bool
	// Old and New are where the change is in each schema: the field, the
	// struct, the method, the interface or the package clause concerned,
	// or, for what one schema lacks, the declaration that would hold it
	// (the struct of a removed field, the interface of a removed method).
	// A Pos is zero where the schema has nothing to point at: New for an
	// interface or struct removed, Old for one added.
	Old, New schema.Pos
	// Msg says what changed and what it does to peers, in one line,
	// without a position.
	Msg string
}

// Pos returns where to report c: New, or Old when New is zero.
func (c Change) Pos() schema.Pos {
	if c.New.Line > 0 {
		return c.New
	}
	return c.Old
}

// Breaking reports whether c breaks peers whatever the upgrade order: it
// breaks both ways, or one way on a struct both sides write (NoOrder).
// With strict, a change that breaks peers one way only (a field added at
// the end of a struct, say, safe when every writer upgrades first) is
// breaking too.
func (c Change) Breaking(strict bool) bool {
	return c.Breaks == Both || c.Breaks != 0 && (strict || c.NoOrder)
}

// Compare returns the changes from old to new, sorted by where they are
// reported ([Change.Pos], in new first, then in old), none when the two
// schemas are the same on the wire and by name. Comments, declaration
// order of structs and aliases, field declaration order at unchanged
// offsets, and whether an offset is written as @N are not changes.
//
// Each pair of an old and a new struct is compared once, at a cost of
// their fields. A schema pair where new structs stand in for many
// different old ones (or the reverse) makes many pairs, and their fields
// many times the schemas' own: past 16 times the fields of both schemas
// (and a floor of 4096), Compare stops comparing and ends the list with
// an [Incomplete] change, breaking, in place of the rest.
func Compare(old, new *schema.File) []Change {
	c := &comparer{
		old: old, new: new,
		oldIx:     newIndex(old),
		newIx:     newIndex(new),
		oldW:      writers(old),
		newW:      writers(new),
		pairs:     map[[2]*schema.Struct]bool{},
		oldPaired: map[*schema.Struct]bool{},
		newPaired: map[*schema.Struct]bool{},
	}
	c.pkg()
	c.aliases()
	// Structs of the same name are paired first, so that the pairs the
	// methods and fields make are compared after them and a rename is told
	// from a struct used in another's place.
	for _, s := range old.Structs {
		if t := c.newIx.structs[s.Name]; t != nil {
			c.pair(s, t)
		}
	}
	c.interfaces()
	budget := 4096
	for _, f := range []*schema.File{old, new} {
		for _, s := range f.Structs {
			budget += 16 * len(s.Fields)
		}
	}
	var stopped []Change
	for n := 0; len(c.queue) > 0; n++ {
		p := c.queue[0]
		if budget -= len(p[0].Fields) + len(p[1].Fields); budget < 0 {
			stopped = append(stopped, Change{Kind: Incomplete, Breaks: Both, Old: p[0].Pos, New: p[1].Pos,
				Msg: fmt.Sprintf("comparison stopped at struct %s (was %s), with %d struct pairs compared and %d left: structs stand in for too many others; what is left may break peers",
					p[1].Name, p[0].Name, n, len(c.queue))})
			break
		}
		c.queue = c.queue[1:]
		c.structs(p[0], p[1])
	}
	if stopped == nil {
		c.leftovers()
	}
	sort.SliceStable(c.changes, func(i, j int) bool {
		a, b := c.changes[i], c.changes[j]
		ka, kb := a.New.Line == 0, b.New.Line == 0
		if ka != kb {
			return !ka
		}
		pa, pb := a.Pos(), b.Pos()
		if pa.Filename != pb.Filename {
			return c.fileIndex(pa.Filename) < c.fileIndex(pb.Filename)
		}
		if pa.Line != pb.Line {
			return pa.Line < pb.Line
		}
		return pa.Col < pb.Col
	})
	return append(c.changes, stopped...)
}

// Sides is a set of the peers of a call that write a struct.
type Sides uint8

const (
	clients Sides = 1 << iota // requests and request streams
	servers                   // results and result streams
)

type comparer struct {
	old, new     *schema.File
	oldIx, newIx index
	oldW, newW   map[*schema.Struct]Sides
	// pairs holds the (old, new) struct pairs met, queue those not yet
	// compared; oldPaired and newPaired the structs in some pair.
	pairs                map[[2]*schema.Struct]bool
	queue                [][2]*schema.Struct
	oldPaired, newPaired map[*schema.Struct]bool
	changes              []Change
}

func (c *comparer) add(ch Change) { c.changes = append(c.changes, ch) }

// fileIndex orders positions by file: the new schema's files, then the
// old's, each in the order given.
func (c *comparer) fileIndex(name string) int {
	if i := slices.Index(c.new.Files, name); i >= 0 {
		return i
	}
	if i := slices.Index(c.old.Files, name); i >= 0 {
		return len(c.new.Files) + i
	}
	return len(c.new.Files) + len(c.old.Files)
}

// writers returns the sides that write each struct of f: clients for a
// request (or a request stream's messages), servers for a result, and the
// structs these point at through fields and lists.
func writers(f *schema.File) map[*schema.Struct]Sides {
	w := map[*schema.Struct]Sides{}
	type item struct {
		s    *schema.Struct
		side Sides
	}
	var work []item
	mark := func(s *schema.Struct, side Sides) {
		if s != nil && w[s]&side == 0 {
			w[s] |= side
			work = append(work, item{s, side})
		}
	}
	for _, it := range f.Interfaces {
		for _, m := range it.Methods {
			mark(m.Req, clients)
			mark(m.Resp, servers)
		}
	}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		for _, fl := range x.s.Fields {
			if t := elem(fl.Type); t.Kind == schema.KindStruct {
				mark(t.Struct, x.side)
			}
		}
	}
	return w
}

// elem returns t's innermost list element, or t when it is not a list.
func elem(t *schema.Type) *schema.Type {
	for t.Kind == schema.KindList && t.Elem != nil {
		t = t.Elem
	}
	return t
}

func (c *comparer) pkg() {
	if c.old.Package == c.new.Package {
		return
	}
	ch := Change{Kind: PackageRenamed, Old: c.old.PackagePos, New: c.new.PackagePos}
	if ch.Old.Line == 0 {
		ch.Old = schema.Pos{Filename: first(c.old.Files), Line: 1, Col: 1}
	}
	if ch.New.Line == 0 {
		ch.New = schema.Pos{Filename: first(c.new.Files), Line: 1, Col: 1}
	}
	what := fmt.Sprintf("package %s renamed %s", orNone(c.old.Package), orNone(c.new.Package))
	var names []string
	for _, it := range c.old.Interfaces {
		if c.newIx.ifaces[it.Name] != nil {
			names = append(names, it.Name)
		}
	}
	if len(names) == 0 {
		ch.Msg = what + ": no interface keeps its name, so no service name changes with it (the wire has no package name)"
	} else {
		ch.Breaks = Both
		ch.Msg = fmt.Sprintf("%s: the services' names change (%s is now %s%s): health checks by name ask old servers, or new ones, for a service they do not know",
			what, service(c.old.Package, names[0]), service(c.new.Package, names[0]), more(len(names)-1))
	}
	c.add(ch)
}

func first(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return files[0]
}

func orNone(pkg string) string {
	if pkg == "" {
		return "(none)"
	}
	return pkg
}

func more(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", and one more"
	}
	return fmt.Sprintf(", and %d more", n)
}

// service returns the service name of interface name in package pkg, as
// the generated IServiceName spells it.
func service(pkg, name string) string {
	if pkg == "" {
		return name
	}
	return pkg + "." + name
}

func (c *comparer) aliases() {
	for _, a := range c.old.Aliases {
		b := c.newIx.aliases[a.Name]
		if b == nil {
			continue
		}
		if ta, tb := a.Type.String(), b.Type.String(); ta != tb {
			c.add(Change{Kind: AliasChanged, Old: a.Pos, New: b.Pos,
				Msg: fmt.Sprintf("alias %s changed from %s to %s (each field that uses it is reported on its own)", a.Name, ta, tb)})
		}
	}
}

// index finds a schema's declarations by name (a schema may have very
// many: the File's own lookups, a loop each, would make a comparison
// quadratic).
type index struct {
	structs map[string]*schema.Struct
	ifaces  map[string]*schema.Interface
	aliases map[string]*schema.Alias
}

func newIndex(f *schema.File) index {
	ix := index{map[string]*schema.Struct{}, map[string]*schema.Interface{}, map[string]*schema.Alias{}}
	for _, s := range f.Structs {
		ix.structs[s.Name] = s
	}
	for _, it := range f.Interfaces {
		ix.ifaces[it.Name] = it
	}
	for _, a := range f.Aliases {
		ix.aliases[a.Name] = a
	}
	return ix
}

// methodNames maps an interface's method names to its methods.
func methodNames(it *schema.Interface) map[string]*schema.Method {
	m := make(map[string]*schema.Method, len(it.Methods))
	for _, x := range it.Methods {
		m[x.Name] = x
	}
	return m
}

// byOrdinal returns the method of it whose ordinal is ord, or nil: at
// index ord-1, the methods being numbered 1..n in order.
func byOrdinal(it *schema.Interface, ord uint32) *schema.Method {
	if ord >= 1 && int64(ord) <= int64(len(it.Methods)) && it.Methods[ord-1].Ordinal == ord {
		return it.Methods[ord-1]
	}
	return it.MethodByOrdinal(ord)
}

// fieldNames maps a struct's field names to its fields.
func fieldNames(s *schema.Struct) map[string]*schema.Field {
	m := make(map[string]*schema.Field, len(s.Fields))
	for _, f := range s.Fields {
		m[f.Name] = f
	}
	return m
}

func (c *comparer) interfaces() {
	var oldLeft, newLeft []*schema.Interface
	for _, it := range c.old.Interfaces {
		if n := c.newIx.ifaces[it.Name]; n != nil {
			c.methods(it, n)
		} else {
			oldLeft = append(oldLeft, it)
		}
	}
	for _, it := range c.new.Interfaces {
		if c.oldIx.ifaces[it.Name] == nil {
			newLeft = append(newLeft, it)
		}
	}
	// Those without a match pair in declaration order: an interface
	// renamed where it was.
	for len(oldLeft) > 0 && len(newLeft) > 0 {
		o, n := oldLeft[0], newLeft[0]
		oldLeft, newLeft = oldLeft[1:], newLeft[1:]
		c.add(Change{Kind: InterfaceRenamed, Breaks: Both, Old: o.Pos, New: n.Pos,
			Msg: fmt.Sprintf("interface %s renamed %s: its service name changes from %s to %s, so health checks by name ask old servers, or new ones, for a service they do not know (calls go by ordinal, unaffected)",
				o.Name, n.Name, service(c.old.Package, o.Name), service(c.new.Package, n.Name))})
		c.methods(o, n)
	}
	for _, o := range oldLeft {
		c.add(Change{Kind: InterfaceRemoved, Breaks: OldWriters, Old: o.Pos,
			Msg: fmt.Sprintf("interface %s removed: old clients' calls to service %s fail once its servers have the new schema; upgrade clients before servers", o.Name, service(c.old.Package, o.Name))})
	}
	for _, n := range newLeft {
		c.add(Change{Kind: InterfaceAdded, New: n.Pos,
			Msg: fmt.Sprintf("interface %s added", n.Name)})
	}
}

// methods compares the methods of an interface pair: by name, then by
// ordinal.
func (c *comparer) methods(oi, ni *schema.Interface) {
	match := map[*schema.Method]*schema.Method{} // old -> new
	taken := map[*schema.Method]bool{}           // new methods matched
	oldNames, newNames := methodNames(oi), methodNames(ni)
	for _, m := range oi.Methods {
		if n := newNames[m.Name]; n != nil {
			match[m], taken[n] = n, true
		}
	}
	for _, m := range oi.Methods {
		if match[m] != nil {
			continue
		}
		if n := byOrdinal(ni, m.Ordinal); n != nil && !taken[n] && oldNames[n.Name] == nil {
			match[m], taken[n] = n, true
		}
	}
	for _, m := range oi.Methods {
		n := match[m]
		if n == nil {
			ch := Change{Kind: MethodRemoved, Breaks: OldWriters, Old: m.Pos, New: ni.Pos}
			if now := byOrdinal(ni, m.Ordinal); now != nil {
				ch.Msg = fmt.Sprintf("method %s.%s (ordinal %d) removed: old clients' calls to it reach %s, which now has its ordinal, on new servers",
					oi.Name, m.Name, m.Ordinal, now.Name)
			} else {
				ch.Msg = fmt.Sprintf("method %s.%s (ordinal %d) removed from the end: new servers answer old clients' calls to it 404 rpc.NoSuchMethod; upgrade clients before servers",
					oi.Name, m.Name, m.Ordinal)
			}
			c.add(ch)
			continue
		}
		if m.Ordinal != n.Ordinal {
			c.add(Change{Kind: MethodMoved, Breaks: Both, Old: m.Pos, New: n.Pos,
				Msg: fmt.Sprintf("method %s.%s moved from ordinal %d to %d: calls between old and new peers reach the wrong method",
					ni.Name, n.Name, m.Ordinal, n.Ordinal)})
		} else if m.Name != n.Name {
			c.add(Change{Kind: MethodRenamed, Old: m.Pos, New: n.Pos,
				Msg: fmt.Sprintf("method %s.%s renamed %s (ordinal %d): not on the wire; its name in logs, metrics and rpc.MethodFrom changes. If %s is another method put in %s's place, not %s renamed, old clients' calls to %s run %s on new servers, and new clients' calls to %s run %s on old ones: breaking both ways, which the wire cannot show",
					ni.Name, m.Name, n.Name, n.Ordinal, n.Name, m.Name, m.Name, m.Name, n.Name, n.Name, m.Name)})
		}
		c.payloads(ni, m, n)
	}
	for _, n := range ni.Methods {
		if taken[n] {
			continue
		}
		if was := byOrdinal(oi, n.Ordinal); was != nil {
			c.add(Change{Kind: MethodInserted, Breaks: Both, Old: was.Pos, New: n.Pos,
				Msg: fmt.Sprintf("method %s.%s inserted at ordinal %d, %s's in the old schema: old servers take calls to it for %s",
					ni.Name, n.Name, n.Ordinal, was.Name, was.Name)})
		} else {
			c.add(Change{Kind: MethodAppended, Old: oi.Pos, New: n.Pos,
				Msg: fmt.Sprintf("method %s.%s added at the end (ordinal %d): old servers answer it 404 rpc.NoSuchMethod (rpc.IsNoSuchMethod)",
					ni.Name, n.Name, n.Ordinal)})
		}
	}
}

// payloads compares the requests and results of a method pair.
func (c *comparer) payloads(ni *schema.Interface, m, n *schema.Method) {
	name := ni.Name + "." + n.Name
	if m.ReqStream != n.ReqStream || m.RespStream != n.RespStream {
		c.add(Change{Kind: StreamChanged, Breaks: Both, Old: m.Pos, New: n.Pos,
			Msg: fmt.Sprintf("method %s changed from %s to %s: old and new peers call it differently (a unary call or a stream), and refuse each other's calls or misread how many messages it carries",
				name, shape(m), shape(n))})
	}
	switch {
	case m.Req == nil && n.Req != nil:
		c.add(Change{Kind: RequestAdded, Breaks: OldWriters, Old: m.Pos, New: n.Pos,
			Msg: fmt.Sprintf("method %s takes a request (%s) it did not: new servers refuse old clients' calls, which carry none; upgrade clients before servers", name, n.Req.Name)})
	case m.Req != nil && n.Req == nil:
		c.add(Change{Kind: RequestRemoved, Breaks: OldReaders, Old: m.Pos, New: n.Pos,
			Msg: fmt.Sprintf("method %s no longer takes a request (%s): old servers refuse new clients' calls, which carry none; upgrade servers before clients", name, m.Req.Name)})
	case m.Req != nil:
		c.pair(m.Req, n.Req)
	}
	switch {
	case m.Resp == nil && n.Resp != nil:
		c.add(Change{Kind: ResultAdded, Breaks: OldWriters, Old: m.Pos, New: n.Pos,
			Msg: fmt.Sprintf("method %s returns a result (%s) it did not: new clients fail on old servers' answers, which carry none; upgrade servers before clients", name, n.Resp.Name)})
	case m.Resp != nil && n.Resp == nil:
		c.add(Change{Kind: ResultRemoved, Breaks: OldReaders, Old: m.Pos, New: n.Pos,
			Msg: fmt.Sprintf("method %s no longer returns a result (%s): old clients fail on new servers' answers, which carry none; upgrade clients before servers", name, m.Resp.Name)})
	case m.Resp != nil:
		c.pair(m.Resp, n.Resp)
	}
}

// shape spells a method's call shape: "unary", "a request stream"...
func shape(m *schema.Method) string {
	switch {
	case m.ReqStream && m.RespStream:
		return "streams both ways"
	case m.ReqStream:
		return "a request stream"
	case m.RespStream:
		return "a result stream"
	}
	return "unary"
}

// pair queues the struct pair (s, t) for comparison, once.
func (c *comparer) pair(s, t *schema.Struct) {
	k := [2]*schema.Struct{s, t}
	if c.pairs[k] {
		return
	}
	c.pairs[k] = true
	c.oldPaired[s], c.newPaired[t] = true, true
	c.queue = append(c.queue, k)
}

// verdict is what a type change does to the bytes.
type verdict uint8

const (
	same      verdict = iota // the same bytes, read alike (structs compared as a pair)
	sameBytes                // the same bytes, text read as bytes or the reverse
	differ                   // other bytes, or the same bytes read otherwise
)

// types compares a field's (or a list element's) old and new types,
// queueing the struct pair they point at.
func (c *comparer) types(a, b *schema.Type) verdict {
	for {
		switch {
		case a.Kind == schema.KindList && b.Kind == schema.KindList:
			a, b = a.Elem, b.Elem
			continue
		case a.Kind == schema.KindStruct && b.Kind == schema.KindStruct:
			c.pair(a.Struct, b.Struct)
			return same
		case a.Kind == b.Kind:
			if a.Kind == schema.KindBytesFixed && a.N != b.N {
				return differ
			}
			return same
		case textual(a.Kind) && textual(b.Kind):
			return sameBytes
		}
		return differ
	}
}

func textual(k schema.Kind) bool { return k == schema.KindText || k == schema.KindBytes }

// typeText spells a field's type, with the alias it was written as.
func typeText(t *schema.Type) string {
	if t.AliasName != "" {
		return t.AliasName + " (" + t.String() + ")"
	}
	return t.String()
}

// span is a field's bytes in its fixed section.
type span struct{ off, end int }

func fieldSpan(f *schema.Field) span { return span{f.Offset, f.Offset + f.Width} }

// overlapping returns a field of fs (sorted by offset, not overlapping)
// that shares a byte with sp, or nil. A field of width 0 shares none.
func overlapping(fs []*schema.Field, sp span) *schema.Field {
	if sp.end <= sp.off {
		return nil
	}
	i := sort.Search(len(fs), func(i int) bool { return fs[i].Offset+fs[i].Width > sp.off })
	for ; i < len(fs) && fs[i].Offset < sp.end; i++ {
		if fs[i].Width > 0 {
			return fs[i]
		}
	}
	return nil
}

func byOffset(s *schema.Struct) []*schema.Field {
	fs := slices.Clone(s.Fields)
	slices.SortStableFunc(fs, func(a, b *schema.Field) int { return a.Offset - b.Offset })
	return fs
}

// structs compares the old struct s with the new struct t.
func (c *comparer) structs(s, t *schema.Struct) {
	name := "struct " + t.Name
	if s.Name != t.Name {
		if c.newIx.structs[s.Name] == nil && c.oldIx.structs[t.Name] == nil {
			c.add(Change{Kind: StructRenamed, Old: s.Pos, New: t.Pos,
				Msg: fmt.Sprintf("struct %s renamed %s: not on the wire", s.Name, t.Name)})
		}
		name += " (was " + s.Name + ")"
	}
	match := map[*schema.Field]*schema.Field{} // old -> new
	taken := map[*schema.Field]bool{}          // new fields matched
	newNames := fieldNames(t)
	for _, f := range s.Fields {
		if g := newNames[f.Name]; g != nil {
			match[f], taken[g] = g, true
		}
	}
	// A field without a match by name, at the offset of a new one without
	// a match either, is that field renamed.
	free := map[int]*schema.Field{}
	for _, g := range t.Fields {
		if !taken[g] && free[g.Offset] == nil {
			free[g.Offset] = g
		}
	}
	for _, f := range s.Fields {
		if match[f] == nil {
			if g := free[f.Offset]; g != nil && !taken[g] {
				match[f], taken[g] = g, true
			}
		}
	}
	oldSorted, newSorted := byOffset(s), byOffset(t)
	for _, f := range s.Fields {
		g := match[f]
		if g == nil {
			c.removed(name, s, t, f, newSorted)
			continue
		}
		c.field(name, s, t, f, g)
	}
	for _, g := range t.Fields {
		if !taken[g] {
			c.added(name, s, t, g, oldSorted)
		}
	}
}

// field compares an old field with the new field it matched.
func (c *comparer) field(name string, s, t *schema.Struct, f, g *schema.Field) {
	label := "field " + g.Name
	if f.Name != g.Name {
		label += " (was " + f.Name + ")"
	}
	v := c.types(f.Type, g.Type)
	ft, gt := typeText(f.Type), typeText(g.Type)
	if f.Offset != g.Offset {
		retyped := ""
		if v != same || ft != gt {
			retyped = fmt.Sprintf(", and from %s to %s", ft, gt)
		}
		c.add(Change{Kind: FieldMoved, Breaks: Both, Old: f.Pos, New: g.Pos,
			Msg: fmt.Sprintf("%s: %s moved from offset %d to %d%s: old and new peers read each other's %s from other bytes",
				name, label, f.Offset, g.Offset, retyped, g.Name)})
		return
	}
	switch v {
	case differ:
		c.add(Change{Kind: FieldRetyped, Breaks: Both, Old: f.Pos, New: g.Pos,
			Msg: fmt.Sprintf("%s: %s retyped from %s to %s (offset %d): old and new peers read its bytes as different types",
				name, label, ft, gt, g.Offset)})
		return
	case sameBytes:
		// Generated code and codec read text as written, UTF-8 or not;
		// codec/dynamic does not: bytes that are not UTF-8, written
		// by the side that has bytes, fail there on the side that has
		// text.
		who := "old writers' bytes that are not UTF-8 fail there in new readers"
		if elem(g.Type).Kind == schema.KindBytes {
			who = "new writers' bytes that are not UTF-8 fail there in old readers"
		}
		c.add(Change{Kind: FieldSameBytes, Old: f.Pos, New: g.Pos,
			Msg: fmt.Sprintf("%s: %s retyped from %s to %s (offset %d): the same bytes on the wire, which generated code and package codec read as written, UTF-8 or not; codec/dynamic (zapcodec call and dump, JSON) refuses text that is not UTF-8: %s",
				name, label, ft, gt, g.Offset, who)})
		return
	}
	if f.Name != g.Name {
		c.add(Change{Kind: FieldRenamed, Old: f.Pos, New: g.Pos,
			Msg: fmt.Sprintf("%s: field %s renamed %s (offset %d): not on the wire; JSON (codec/dynamic, zapcodec call and dump) shows the new name",
				name, f.Name, g.Name, g.Offset)})
	}
}

// removed reports an old field that matched none of the new struct.
func (c *comparer) removed(name string, s, t *schema.Struct, f *schema.Field, newSorted []*schema.Field) {
	sp := fieldSpan(f)
	ch := Change{Old: f.Pos, New: t.Pos}
	what := fmt.Sprintf("%s: field %s %s removed", name, f.Name, typeText(f.Type))
	switch g := overlapping(newSorted, sp); {
	case g != nil:
		ch.Kind, ch.Breaks = FieldRemoved, Both
		ch.Msg = fmt.Sprintf("%s, its bytes (offset %d) now hold field %s: old readers read %s's bytes as %s, new readers read old writers' %s as %s",
			what, f.Offset, g.Name, g.Name, f.Name, f.Name, g.Name)
	case sp.end <= t.Size || f.Width == 0:
		ch.Kind = FieldRemovedInGap
		ch.Msg = fmt.Sprintf("%s; its bytes (offset %d) stay inside the struct and new writers leave them zero, which old readers read as its value",
			what, f.Offset)
	default:
		ch.Kind, ch.Breaks = FieldRemovedAtEnd, OldReaders
		ch.Msg = fmt.Sprintf("%s from the end (offset %d; the struct shrinks from %d to %d bytes): old readers read it, in new writers' messages, from the bytes that follow the struct; %s",
			what, f.Offset, s.Size, t.Size, c.order(s, t, &ch))
	}
	c.add(ch)
}

// added reports a new field that matched none of the old struct.
func (c *comparer) added(name string, s, t *schema.Struct, g *schema.Field, oldSorted []*schema.Field) {
	sp := fieldSpan(g)
	ch := Change{Old: s.Pos, New: g.Pos}
	what := fmt.Sprintf("%s: field %s %s added", name, g.Name, typeText(g.Type))
	switch f := overlapping(oldSorted, sp); {
	case f != nil:
		ch.Kind, ch.Breaks = FieldInserted, Both
		ch.Msg = fmt.Sprintf("%s at offset %d, on the bytes of old field %s: new readers read old writers' %s as %s, old readers read %s's bytes as %s",
			what, g.Offset, f.Name, f.Name, g.Name, g.Name, f.Name)
	case sp.end <= s.Size || g.Width == 0:
		ch.Kind = FieldAddedInGap
		ch.Msg = fmt.Sprintf("%s at offset %d, on bytes inside the old struct that old writers leave zero: new readers read zero from them",
			what, g.Offset)
	default:
		ch.Kind, ch.Breaks = FieldAppended, OldWriters
		ch.Msg = fmt.Sprintf("%s at the end (offset %d; the struct grows from %d to %d bytes): new readers read it, in old writers' messages, from the bytes that follow the old struct; %s",
			what, g.Offset, s.Size, t.Size, c.order(s, t, &ch))
	}
	c.add(ch)
}

// order says which side must upgrade first for ch, a one-way break of
// the struct pair (s, t), and sets ch.NoOrder when none can.
func (c *comparer) order(s, t *schema.Struct, ch *Change) string {
	w := c.newW[t] | c.oldW[s]
	writersFirst := ch.Breaks == OldWriters
	switch w {
	case clients, servers:
		first, then := "clients", "servers"
		if (w == servers) == writersFirst {
			first, then = then, first
		}
		side := "clients"
		if w == servers {
			side = "servers"
		}
		return fmt.Sprintf("%s is written by %s: upgrade %s before %s", t.Name, side, first, then)
	case clients | servers:
		ch.NoOrder = true
		return fmt.Sprintf("%s is written by clients and by servers: no upgrade order avoids it", t.Name)
	}
	if writersFirst {
		return fmt.Sprintf("upgrade every writer of %s before any reader", t.Name)
	}
	return fmt.Sprintf("upgrade every reader of %s before any writer", t.Name)
}

// leftovers reports the structs no pair holds: renamed in place when the
// shapes agree, else removed and added.
func (c *comparer) leftovers() {
	var oldLeft, newLeft []*schema.Struct
	for _, s := range c.old.Structs {
		if !c.oldPaired[s] {
			oldLeft = append(oldLeft, s)
		}
	}
	for _, t := range c.new.Structs {
		if !c.newPaired[t] {
			newLeft = append(newLeft, t)
		}
	}
	oldIndex := map[*schema.Struct]int{}
	for i, s := range c.old.Structs {
		oldIndex[s] = i
	}
	newIndex := map[*schema.Struct]int{}
	for i, t := range c.new.Structs {
		newIndex[t] = i
	}
	renamed := map[*schema.Struct]bool{}
	j := 0
	for _, s := range oldLeft {
		for j < len(newLeft) && newIndex[newLeft[j]] < oldIndex[s] {
			j++
		}
		if j < len(newLeft) && newIndex[newLeft[j]] == oldIndex[s] && sameShape(s, newLeft[j]) {
			t := newLeft[j]
			renamed[s], renamed[t] = true, true
			c.add(Change{Kind: StructRenamed, Old: s.Pos, New: t.Pos,
				Msg: fmt.Sprintf("struct %s renamed %s: not on the wire", s.Name, t.Name)})
		}
	}
	for _, s := range oldLeft {
		if !renamed[s] {
			c.add(Change{Kind: StructRemoved, Old: s.Pos,
				Msg: fmt.Sprintf("struct %s removed (no method or field of the new schema uses a struct in its place)", s.Name)})
		}
	}
	for _, t := range newLeft {
		if !renamed[t] {
			c.add(Change{Kind: StructAdded, New: t.Pos,
				Msg: fmt.Sprintf("struct %s added", t.Name)})
		}
	}
}

// sameShape reports whether s and t have fields of the same names at the
// same offsets, of types the wire reads alike, through the structs they
// point at.
func sameShape(s, t *schema.Struct) bool {
	seen := map[[2]*schema.Struct]bool{}
	work := [][2]*schema.Struct{{s, t}}
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		a, b := p[0], p[1]
		if len(a.Fields) != len(b.Fields) || a.Size != b.Size {
			return false
		}
		for i, f := range a.Fields {
			g := b.Fields[i]
			if f.Name != g.Name || f.Offset != g.Offset {
				return false
			}
			x, y := f.Type, g.Type
			for x.Kind == schema.KindList && y.Kind == schema.KindList {
				x, y = x.Elem, y.Elem
			}
			if x.Kind != y.Kind || x.N != y.N {
				return false
			}
			if x.Kind == schema.KindStruct {
				work = append(work, [2]*schema.Struct{x.Struct, y.Struct})
			}
		}
	}
	return true
}

// Format returns ch as one line, "file:line:col: LABEL: message", LABEL
// being "breaking" (ch.Breaking(strict)), "warning" (it breaks one way
// only: safe in the upgrade order it gives) or "note" (it breaks nothing).
// A field or method removed is reported in its new struct or interface,
// and the line ends with where the old schema declared it: " (old:
// file:line:col)".
func Format(ch Change, strict bool) string {
	label := "note"
	switch {
	case ch.Breaking(strict):
		label = "breaking"
	case ch.Breaks != 0:
		label = "warning"
	}
	var b strings.Builder
	b.WriteString(ch.Pos().String())
	b.WriteString(": ")
	b.WriteString(label)
	b.WriteString(": ")
	b.WriteString(ch.Msg)
	switch ch.Kind {
	case FieldRemoved, FieldRemovedAtEnd, FieldRemovedInGap, MethodRemoved:
		if ch.New.Line > 0 && ch.Old.Line > 0 {
			b.WriteString(" (old: ")
			b.WriteString(ch.Old.String())
			b.WriteString(")")
		}
	}
	return b.String()
}
