package gen

import (
	"fmt"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// ServiceSchema returns the .zap source a server reflects for interface
// it of f (rpc.WithSchema, which generated Register…Server functions
// give): a canonical re-print of the parts of the schema the service
// uses, not its file. It holds the package clause (when f has one), every
// struct the interface's methods take or return and, transitively, every
// struct those nest or list, in declaration order, then the interface.
// Aliases are printed as what they stand for, every field with its
// offset ("@N"), so the text parses alone, whatever other files of the
// package the types came from, and lays every struct out exactly as f
// does; comments, other interfaces and unused declarations are left out
// (they are no part of what the server serves, and may be none of a
// caller's business).
func ServiceSchema(f *schema.File, it *schema.Interface) string {
	used := map[*schema.Struct]bool{}
	var mark func(s *schema.Struct)
	mark = func(s *schema.Struct) {
		if s == nil || used[s] {
			return
		}
		used[s] = true
		for _, fl := range s.Fields {
			t := fl.Type
			for t.Kind == schema.KindList {
				t = t.Elem
			}
			if t.Kind == schema.KindStruct {
				mark(t.Struct)
			}
		}
	}
	for _, m := range it.Methods {
		mark(m.Req)
		mark(m.Resp)
	}
	var b strings.Builder
	if f.Package != "" {
		fmt.Fprintf(&b, "package %s\n", f.Package)
	}
	for _, s := range f.Structs {
		if !used[s] {
			continue
		}
		fmt.Fprintf(&b, "\nstruct %s {\n", s.Name)
		for _, fl := range s.Fields {
			fmt.Fprintf(&b, "    %s %s @%d\n", fl.Name, fl.Type, fl.Offset)
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "\ninterface %s {\n", it.Name)
	for _, m := range it.Methods {
		fmt.Fprintf(&b, "    %s(%s)", m.Name, reprintParam(m.ReqName, m.Req, m.ReqStream))
		if m.Resp != nil {
			fmt.Fprintf(&b, " returns (%s)", reprintParam(m.RespName, m.Resp, m.RespStream))
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// reprintParam is a method's parameter or result as the schema writes it:
// "name: T", "stream T" or "name: stream T"; "" for none.
func reprintParam(name string, s *schema.Struct, stream bool) string {
	if s == nil {
		return ""
	}
	t := s.Name
	if stream {
		t = "stream " + t
	}
	if name == "" {
		if !stream {
			name = "x" // the schema names every parameter but a stream's
		} else {
			return t
		}
	}
	return name + ": " + t
}
