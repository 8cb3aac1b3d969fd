package schema

import (
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
