package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

func parse(t testing.TB, name, src string) *schema.File {
	t.Helper()
	f, err := schema.Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, src)
	}
	return f
}

// brief is a change as the table states it: "OLDPOS NEWPOS label: kind
// (breaks)", positions as line:col, "-" for a zero one.
func brief(ch Change) string {
	p := func(pos schema.Pos) string {
		if pos.Line == 0 {
			return "-"
		}
		return fmt.Sprintf("%d:%d", pos.Line, pos.Col)
	}
	label := "note"
	switch {
	case ch.Breaking(false):
		label = "breaking"
	case ch.Breaks != 0:
		label = "warning"
	}
	return fmt.Sprintf("%s %s %s: %s (%s)", p(ch.Old), p(ch.New), label, ch.Kind, ch.Breaks)
}

// Three u32 fields, and a struct Outer that points at S and lists it.
const base = `struct S
    A u32
    B u32
    C u32
`

const iface = `struct Req
    A u32
struct Resp
    B u64
interface Svc {
    get(req: Req) returns (resp: Resp)
    put(req: Req)
    ping()
}
`

var cases = []struct {
	name     string
	old, new string
	want     []string
	msg      string // a part of the first change's Msg, when given
}{
	{name: "same", old: base, new: base},
	{name: "comments and @N spelled out", old: base,
		new: "# doc\nstruct S { # the same offsets\n    A u32 @0\n    B u32 @4\n    C u32 @8\n}\n"},
	{name: "struct order", old: base + iface, new: iface + base},
	{name: "field appended", old: base, new: base + "    D u8\n",
		want: []string{"1:8 5:5 warning: field appended (old writers)"},
		msg:  "struct S: field D u8 added at the end (offset 12; the struct grows from 12 to 13 bytes)"},
	{name: "field inserted", old: base, new: "struct S\n    A u32\n    X u16\n    B u32\n    C u32\n",
		want: []string{
			"1:8 3:5 breaking: field inserted (old readers and old writers)",
			"3:5 4:5 breaking: field moved (old readers and old writers)",
			"4:5 5:5 breaking: field moved (old readers and old writers)",
		},
		msg: "field X u16 added at offset 4, on the bytes of old field B"},
	{name: "field removed from the middle", old: base, new: "struct S\n    A u32\n    C u32\n",
		want: []string{
			"3:5 1:8 breaking: field removed (old readers and old writers)",
			"4:5 3:5 breaking: field moved (old readers and old writers)",
		},
		msg: "its bytes (offset 4) now hold field C"},
	{name: "field removed from the end", old: base, new: "struct S\n    A u32\n    B u32\n",
		want: []string{"4:5 1:8 warning: field removed at end (old readers)"},
		msg:  "the struct shrinks from 12 to 8 bytes"},
	{name: "field removed, offsets kept", old: base, new: "struct S {\n    A u32 @0\n    C u32 @8\n}\n",
		want: []string{"3:5 1:8 note: field removed in gap (none)"},
		msg:  "new writers leave them zero"},
	{name: "field added in a gap", old: "struct S {\n    A u32 @0\n    C u32 @8\n}\n", new: base,
		want: []string{"1:8 3:5 note: field added in gap (none)"}},
	{name: "fields reordered", old: base, new: "struct S\n    B u32\n    A u32\n    C u32\n",
		want: []string{
			"3:5 2:5 breaking: field moved (old readers and old writers)",
			"2:5 3:5 breaking: field moved (old readers and old writers)",
		}},
	{name: "u32 to u64", old: base, new: "struct S\n    A u32\n    B u32\n    C u64\n",
		want: []string{"4:5 4:5 breaking: field retyped (old readers and old writers)"},
		msg:  "field C retyped from u32 to u64 (offset 8)"},
	{name: "i32 to u32", old: "struct S\n    A i32\n", new: "struct S\n    A u32\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "f32 to u32", old: "struct S\n    A f32\n", new: "struct S\n    A u32\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "text to bytes", old: "struct S\n    A text\n", new: "struct S\n    A bytes\n",
		want: []string{"2:5 2:5 note: field same bytes (none)"}},
	{name: "bytes to text in a list", old: "struct S\n    A list<list<bytes>>\n", new: "struct S\n    A list<list<text>>\n",
		want: []string{"2:5 2:5 note: field same bytes (none)"}},
	{name: "bytes_fixed size", old: "struct S\n    H bytes_fixed[4]\n", new: "struct S\n    H bytes_fixed[8]\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "list element width", old: "struct S\n    L list<u32>\n", new: "struct S\n    L list<u64>\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "list depth", old: "struct S\n    L list<u32>\n", new: "struct S\n    L list<list<u32>>\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "list to text", old: "struct S\n    L list<u8>\n", new: "struct S\n    L bytes\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "struct to u32", old: "struct T\n    A u8\nstruct S\n    P T\n", new: "struct T\n    A u8\nstruct S\n    P u32\n",
		want: []string{"4:5 4:5 breaking: field retyped (old readers and old writers)"}},
	{name: "field renamed", old: base, new: "struct S\n    A u32\n    Bee u32\n    C u32\n",
		want: []string{"3:5 3:5 note: field renamed (none)"}},
	{name: "renamed and retyped", old: base, new: "struct S\n    A u32\n    Bee i32\n    C u32\n",
		want: []string{"3:5 3:5 breaking: field retyped (old readers and old writers)"},
		msg:  "field Bee (was B) retyped from u32 to i32"},
	{name: "nested struct grows: its parent's fields stay",
		old:  "struct In\n    A u32\nstruct Out\n    I In\n    X u32\n",
		new:  "struct In\n    A u32\n    B u64\nstruct Out\n    I In\n    X u32\n",
		want: []string{"1:8 3:5 warning: field appended (old writers)"}},
	{name: "list element struct retyped",
		old:  "struct Item\n    A u16\nstruct S\n    L list<Item>\n",
		new:  "struct Item\n    A u32\nstruct S\n    L list<Item>\n",
		want: []string{"2:5 2:5 breaking: field retyped (old readers and old writers)"}},
	{name: "field points at another struct of another shape",
		old:  "struct P\n    A u8\nstruct Q\n    A u16\nstruct S\n    F P\n",
		new:  "struct P\n    A u8\nstruct Q\n    A u16\nstruct S\n    F Q\n",
		want: []string{"2:5 4:5 breaking: field retyped (old readers and old writers)"},
		msg:  "struct Q (was P): field A retyped from u8 to u16"},
	{name: "alias target",
		old: "type h = bytes_fixed[4]\nstruct S\n    H h\n",
		new: "type h = bytes_fixed[8]\nstruct S\n    H h\n",
		want: []string{
			"1:6 1:6 note: alias changed (none)",
			"3:5 3:5 breaking: field retyped (old readers and old writers)",
		}},
	{name: "alias spelled out", old: "type h = bytes_fixed[4]\nstruct S\n    H h\n", new: "struct S\n    H bytes_fixed[4]\n"},
	{name: "recursive struct",
		old:  "struct N\n    L N\n    R N\n    V u8\n",
		new:  "struct N\n    L N\n    R N\n    V u16\n",
		want: []string{"4:5 4:5 breaking: field retyped (old readers and old writers)"}},
	{name: "struct renamed where a method uses it",
		old:  "struct A\n    X u32\ninterface I {\n    m(req: A)\n}\n",
		new:  "struct B\n    X u32\ninterface I {\n    m(req: B)\n}\n",
		want: []string{"1:8 1:8 note: struct renamed (none)"}},
	{name: "unused struct renamed in place", old: base + "struct T\n    Z u8\n", new: base + "struct U\n    Z u8\n",
		want: []string{"5:8 5:8 note: struct renamed (none)"}},
	{name: "unused struct replaced", old: base + "struct T\n    Z u8\n", new: base + "struct U\n    Z u16\n",
		want: []string{"- 5:8 note: struct added (none)", "5:8 - note: struct removed (none)"}},
	{name: "method appended", old: iface, new: strings.Replace(iface, "    ping()\n", "    ping()\n    stop()\n", 1),
		want: []string{"5:11 9:5 note: method appended (none)"}},
	{name: "method inserted", old: iface, new: strings.Replace(iface, "    get(", "    first()\n    get(", 1),
		want: []string{
			"6:5 6:5 breaking: method inserted (old readers and old writers)",
			"6:5 7:5 breaking: method moved (old readers and old writers)",
			"7:5 8:5 breaking: method moved (old readers and old writers)",
			"8:5 9:5 breaking: method moved (old readers and old writers)",
		},
		msg: "method Svc.first inserted at ordinal 1, get's in the old schema"},
	{name: "method removed from the end", old: iface, new: strings.Replace(iface, "    ping()\n", "", 1),
		want: []string{"8:5 5:11 warning: method removed (old writers)"}},
	{name: "method removed from the middle", old: iface, new: strings.Replace(iface, "    put(req: Req)\n", "", 1),
		want: []string{
			"7:5 5:11 warning: method removed (old writers)",
			"8:5 7:5 breaking: method moved (old readers and old writers)",
		}},
	{name: "methods reordered", old: iface,
		new: strings.Replace(iface, "    put(req: Req)\n    ping()\n", "    ping()\n    put(req: Req)\n", 1),
		want: []string{
			"8:5 7:5 breaking: method moved (old readers and old writers)",
			"7:5 8:5 breaking: method moved (old readers and old writers)",
		}},
	{name: "method renamed", old: iface, new: strings.Replace(iface, "put(", "store(", 1),
		want: []string{"7:5 7:5 note: method renamed (none)"}},
	{name: "request added", old: iface, new: strings.Replace(iface, "ping()", "ping(req: Req)", 1),
		want: []string{"8:5 8:5 warning: request added (old writers)"}},
	{name: "request removed", old: iface, new: strings.Replace(iface, "put(req: Req)", "put()", 1),
		want: []string{"7:5 7:5 warning: request removed (old readers)"}},
	{name: "result added", old: iface, new: strings.Replace(iface, "ping()", "ping() returns (r: Resp)", 1),
		want: []string{"8:5 8:5 warning: result added (old writers)"}},
	{name: "result removed", old: iface, new: strings.Replace(iface, " returns (resp: Resp)", "", 1),
		want: []string{"6:5 6:5 warning: result removed (old readers)"}},
	{name: "result becomes a stream", old: iface, new: strings.Replace(iface, "(resp: Resp)", "(stream Resp)", 1),
		want: []string{"6:5 6:5 breaking: stream changed (old readers and old writers)"},
		msg:  "method Svc.get changed from unary to a result stream"},
	{name: "request stream to bidi", old: "struct A\ninterface I {\n    m(stream A)\n}\n", new: "struct A\ninterface I {\n    m(stream A) returns (stream A)\n}\n",
		want: []string{
			"3:5 3:5 breaking: stream changed (old readers and old writers)",
			"3:5 3:5 warning: result added (old writers)",
		}},
	{name: "request type of another shape", old: iface + "struct Big\n    A u64\n", new: strings.Replace(iface, "put(req: Req)", "put(req: Big)", 1) + "struct Big\n    A u64\n",
		want: []string{"2:5 11:5 breaking: field retyped (old readers and old writers)"},
		msg:  "struct Big (was Req): field A retyped from u32 to u64"},
	{name: "request grows: clients first", old: iface, new: strings.Replace(iface, "    A u32\n", "    A u32\n    Z u8\n", 1),
		want: []string{"1:8 3:5 warning: field appended (old writers)"},
		msg:  "Req is written by clients: upgrade clients before servers"},
	{name: "result grows: servers first", old: iface, new: strings.Replace(iface, "    B u64\n", "    B u64\n    Z u8\n", 1),
		want: []string{"3:8 5:5 warning: field appended (old writers)"},
		msg:  "Resp is written by servers: upgrade servers before clients"},
	{name: "result shrinks: clients first", old: strings.Replace(iface, "    B u64\n", "    B u64\n    Z u8\n", 1), new: iface,
		want: []string{"5:5 3:8 warning: field removed at end (old readers)"},
		msg:  "Resp is written by servers: upgrade clients before servers"},
	{name: "written both ways: no order",
		old:  "struct M\n    A u32\ninterface I {\n    echo(m: M) returns (r: M)\n}\n",
		new:  "struct M\n    A u32\n    B u32\ninterface I {\n    echo(m: M) returns (r: M)\n}\n",
		want: []string{"1:8 3:5 breaking: field appended (old writers)"},
		msg:  "M is written by clients and by servers: no upgrade order avoids it"},
	{name: "package renamed with services", old: "package a\n" + iface, new: "package b\n" + iface,
		want: []string{"1:9 1:9 breaking: package renamed (old readers and old writers)"},
		msg:  "package a renamed b: the services' names change (a.Svc is now b.Svc)"},
	{name: "package added without services", old: base, new: "package p\n" + base,
		want: []string{"1:1 1:9 note: package renamed (none)"}},
	{name: "interface renamed", old: iface, new: strings.Replace(iface, "interface Svc", "interface Shop", 1),
		want: []string{"5:11 5:11 breaking: interface renamed (old readers and old writers)"}},
	{name: "interface removed and added", old: iface + "interface Other {\n    x()\n}\n",
		new: iface + "struct Pad\n    P u8\n",
		want: []string{
			"- 10:8 note: struct added (none)",
			"10:11 - warning: interface removed (old writers)",
		}},
	{name: "interface added", old: iface, new: iface + "interface Other {\n    x()\n}\n",
		want: []string{"- 10:11 note: interface added (none)"}},
}

func TestCompare(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changes := Compare(parse(t, "old.zap", c.old), parse(t, "new.zap", c.new))
			var got []string
			for _, ch := range changes {
				got = append(got, brief(ch))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				var full []string
				for _, ch := range changes {
					full = append(full, Format(ch, false))
				}
				t.Fatalf("got\n\t%s\nwant\n\t%s\n(in full:\n\t%s)", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"), strings.Join(full, "\n\t"))
			}
			if c.msg != "" && !strings.Contains(changes[0].Msg, c.msg) {
				t.Errorf("message %q does not say %q", changes[0].Msg, c.msg)
			}
			for _, ch := range changes {
				if ch.Old.Line > 0 && ch.Old.Filename != "old.zap" || ch.New.Line > 0 && ch.New.Filename != "new.zap" {
					t.Errorf("positions in the wrong files: %+v", ch)
				}
			}
		})
	}
}

// TestCompareSelf: every case's schemas compared with themselves, each
// parsed twice, show no change.
func TestCompareSelf(t *testing.T) {
	for _, c := range cases {
		for _, src := range []string{c.old, c.new} {
			if changes := Compare(parse(t, "a.zap", src), parse(t, "a.zap", src)); len(changes) != 0 {
				t.Errorf("%s: %d changes against itself: %s", c.name, len(changes), Format(changes[0], false))
			}
		}
	}
}

func TestBreaking(t *testing.T) {
	for _, c := range []struct {
		ch             Change
		normal, strict bool
	}{
		{Change{}, false, false},
		{Change{Breaks: OldWriters}, false, true},
		{Change{Breaks: OldReaders}, false, true},
		{Change{Breaks: OldWriters, NoOrder: true}, true, true},
		{Change{Breaks: Both}, true, true},
	} {
		if got := c.ch.Breaking(false); got != c.normal {
			t.Errorf("%+v: Breaking(false) = %v", c.ch, got)
		}
		if got := c.ch.Breaking(true); got != c.strict {
			t.Errorf("%+v: Breaking(true) = %v", c.ch, got)
		}
	}
}

func TestFormat(t *testing.T) {
	ch := Change{Kind: FieldRemovedAtEnd, Breaks: OldReaders,
		Old: schema.Pos{Filename: "old.zap", Line: 4, Col: 5}, New: schema.Pos{Filename: "new.zap", Line: 1, Col: 8}, Msg: "gone"}
	for _, c := range []struct {
		strict bool
		want   string
	}{
		{false, "new.zap:1:8: warning: gone (old: old.zap:4:5)"},
		{true, "new.zap:1:8: breaking: gone (old: old.zap:4:5)"},
	} {
		if got := Format(ch, c.strict); got != c.want {
			t.Errorf("Format(strict %v) = %q, want %q", c.strict, got, c.want)
		}
	}
	ch = Change{Kind: StructRemoved, Old: schema.Pos{Filename: "old.zap", Line: 2, Col: 8}, Msg: "struct T removed"}
	if got, want := Format(ch, true), "old.zap:2:8: note: struct T removed"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

func TestStrings(t *testing.T) {
	for k := Kind(1); k <= Incomplete; k++ {
		if s := k.String(); s == "" || strings.HasPrefix(s, "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
	if s := Kind(200).String(); s != "Kind(200)" {
		t.Errorf("Kind(200) = %q", s)
	}
	if s := Breaks(8).String(); s != "Breaks(8)" {
		t.Errorf("Breaks(8) = %q", s)
	}
}

// TestCompareBounded: a new struct in place of many different old ones
// is compared with each, field by field; past its budget Compare stops
// with a breaking Incomplete change, and what it returns stays in
// proportion to the schemas.
func TestCompareBounded(t *testing.T) {
	const n = 300
	var old, cur strings.Builder
	old.WriteString("struct A\n")
	cur.WriteString("struct A\n")
	for i := range n {
		fmt.Fprintf(&old, "    F%d S%d\n", i, i)
		fmt.Fprintf(&cur, "    F%d T\n", i)
	}
	cur.WriteString("struct T\n")
	for i := range n {
		fmt.Fprintf(&old, "struct S%d\n    X u8\n", i)
		fmt.Fprintf(&cur, "    X%d u8\n", i)
	}
	changes := Compare(parse(t, "old.zap", old.String()), parse(t, "new.zap", cur.String()))
	last := changes[len(changes)-1]
	if last.Kind != Incomplete || !last.Breaking(false) || last.Old.Line == 0 || last.New.Line == 0 {
		t.Fatalf("last change %s, want incomplete and breaking", Format(last, false))
	}
	// Fields: n+n in the old schema, n+n in the new; a full comparison
	// would report n-1 added fields for each of n pairs.
	if len(changes) > 16*4*n+4096 {
		t.Errorf("%d changes", len(changes))
	}
	// Each schema against itself is within budget.
	for _, src := range []string{old.String(), cur.String()} {
		if ch := Compare(parse(t, "a.zap", src), parse(t, "a.zap", src)); len(ch) != 0 {
			t.Errorf("%d changes against itself", len(ch))
		}
	}
}

// A method at the same ordinal under another name is a note (taken for a
// rename), and its message says what it does when it is another method
// in the old one's place: old clients' calls run it. Here both take the
// same request, so nothing else in the list shows it.
func TestMethodRenamedSaysReplacement(t *testing.T) {
	old := parse(t, "old.zap", "struct Id\n    N u64\ninterface Users {\n    getUser(req: Id)\n}\n")
	cur := parse(t, "new.zap", "struct Id\n    N u64\ninterface Users {\n    deleteUser(req: Id)\n}\n")
	chs := Compare(old, cur)
	if len(chs) != 1 || chs[0].Kind != MethodRenamed || chs[0].Breaks != 0 {
		t.Fatalf("changes %v, want one MethodRenamed breaking nothing", chs)
	}
	if want := "old clients' calls to getUser run deleteUser on new servers"; !strings.Contains(chs[0].Msg, want) {
		t.Errorf("message %q does not say %q", chs[0].Msg, want)
	}
}
