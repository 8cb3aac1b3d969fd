package schema

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDeepListNesting: lists nested far beyond MaxListDepth are refused
// with the depth they have, positioned at the outermost list, without a
// recursion per level (a million levels overflowed the stack).
func TestDeepListNesting(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20)) // far below the levels' frames
	const n = 1_000_000
	src := "struct A\n    X " + strings.Repeat("list<", n) + "u8" + strings.Repeat(">", n) + "\n"
	f, err := Parse("f.zap", []byte(src))
	want := "f.zap:2:7: lists nested 1000000 deep; at most 8 levels of list<list<...>> are allowed"
	if f != nil || err == nil || err.Error() != want {
		t.Fatalf("got %v, %v; want %s", f, err, want)
	}
}

// TestLongAliasChain: a chain of 200,000 aliases of aliases resolves
// without a recursion per alias, each to the type at its end, written as
// the alias it names.
func TestLongAliasChain(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20)) // far below the aliases' frames
	const n = 200_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "type a%d = a%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "type a%d = bytes_fixed[3]\nstruct S\n    X a0\n", n)
	f, err := Parse("f.zap", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if x := f.Struct("S").Field("X"); x.Type.Kind != KindBytesFixed || x.Type.N != 3 || x.Type.AliasName != "a0" || x.Width != 3 {
		t.Fatalf("S.X: %+v", x.Type)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		a := f.Aliases[i]
		want := fmt.Sprintf("a%d", i+1)
		if a.Type.Kind != KindBytesFixed || a.Type.AliasName != want || a.Type.Pos.Line != i+1 {
			t.Fatalf("alias %s: %+v", a.Name, a.Type)
		}
	}
	if a := f.Aliases[n]; a.Type.AliasName != "" {
		t.Fatalf("alias %s: %+v", a.Name, a.Type)
	}
}

// TestDeepListsThroughAliases: aliases of lists of aliases of lists (type
// a0 = list<a1>, type a1 = list<a2>, ...) nest lists as deeply as the
// chain is long, which the parser cannot see; resolving them took a
// recursion per level, and 200,000 of them overflowed the stack (a fatal
// error, not a panic). They are refused with the depth they have,
// positioned at the outermost list, the recursion stopping past
// MaxListDepth.
func TestDeepListsThroughAliases(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20)) // far below the levels' frames
	const n = 200_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "type a%d = list<a%d>\n", i, i+1)
	}
	fmt.Fprintf(&b, "type a%d = u8\n", n)
	f, err := Parse("f.zap", []byte(b.String()))
	want := fmt.Sprintf("f.zap:1:11: lists nested %d deep; at most 8 levels of list<list<...>> are allowed", n)
	if f != nil || err == nil || err.Error() != want {
		t.Fatalf("got %v, %v; want %s", f, err, want)
	}
	// Nine levels in two aliases, in either order, report as they did
	// before: 9 deep, at the outermost list of the alias holding it.
	for _, src := range []string{
		"type a = list<list<list<list<list<b>>>>>\ntype b = list<list<list<list<u8>>>>\n",
		"type b = list<list<list<list<u8>>>>\ntype a = list<list<list<list<list<b>>>>>\n",
	} {
		_, err := Parse("f.zap", []byte(src))
		line := 1 + strings.Index(src, "type a")/len("type b = list<list<list<list<u8>>>>\n")
		want := fmt.Sprintf("f.zap:%d:10: lists nested 9 deep; at most 8 levels of list<list<...>> are allowed", line)
		if err == nil || err.Error() != want {
			t.Fatalf("%q: %v; want %s", src, err, want)
		}
	}
}

// TestParseHoldsNoTokens: what a parse allocates follows the declarations
// it reads, not the tokens of the file. The whole file used to be split
// into tokens first, 64 bytes each: ten million "{" after a struct's
// opening held 1.7 GB (2.9 GB allocated) before the first was refused, and
// a million nested lists held their four million tokens while the parser
// counted them for its error.
func TestParseHoldsNoTokens(t *testing.T) {
	const n = 1_000_000
	for _, tc := range []struct{ src, want string }{
		{"struct A {\n" + strings.Repeat("{", 4*n) + "\n}\n", `f.zap:2:1: expected field name in struct A, got "{"`},
		{"struct A\n    X " + strings.Repeat("list<", n) + "u8" + strings.Repeat(">", n) + "\n", "f.zap:2:7: lists nested 1000000 deep; at most 8 levels of list<list<...>> are allowed"},
	} {
		src := []byte(tc.src)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := Parse("f.zap", src)
		runtime.ReadMemStats(&after)
		if f != nil || err == nil || err.Error() != tc.want {
			t.Fatalf("got %v, %v; want %s", f, err, tc.want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(src)/8) {
			t.Errorf("a parse of %d bytes that stops in its first declaration allocated %d bytes", len(src), got)
		}
	}
}

// TestListDepthThroughResolvedAlias: a list type whose elements reach too
// deep through an alias resolved before it is refused at its outermost
// list, with the depth it has as written. Each list was checked, and the
// first too deep from the inside was named: the second list, one level
// short.
func TestListDepthThroughResolvedAlias(t *testing.T) {
	const five = "list<list<list<list<list<u8>>>>>"
	for _, tc := range []struct{ src, want string }{
		{"type a = " + five + "\nstruct S\n    X list<list<list<list<list<a>>>>>\n", "f.zap:3:7: lists nested 10 deep"},
		{"type a = " + five + "\nstruct S\n    X list<list<list<list<list<list<list<a>>>>>>>\n", "f.zap:3:7: lists nested 12 deep"},
		{"type b = list<list<u8>>\ntype a = list<list<list<list<list<list<list<list<b>>>>>>>>\n", "f.zap:2:10: lists nested 10 deep"},
		{"type b = list<list<u8>>\ntype c = b\ntype a = list<list<list<list<list<list<list<list<c>>>>>>>>\n", "f.zap:3:10: lists nested 10 deep"},
		{"type a = " + five + "\ninterface I { m(r: S) }\nstruct S { X u8; Y list<list<list<list<a>>>> }\n", "f.zap:3:20: lists nested 9 deep"},
	} {
		_, err := Parse("f.zap", []byte(tc.src))
		want := tc.want + "; at most 8 levels of list<list<...>> are allowed"
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v; want %s", tc.src, err, want)
		}
	}
}
