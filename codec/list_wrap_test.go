//go:build amd64 || arm64

// The sizes below are int constants past 4 GiB: 64-bit platforms only.

package codec

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

// TestListObjectStrideDoesNotWrap: List.Object multiplied the index by the
// stride in 64 bits, which wraps on a view of 8 GiB or more (VarListOf
// views any buffer, and counts one element per 4 bytes at most): element
// 2³¹ of stride 2³³+1 lies at 2⁶⁴+2³¹ past the start, which wrapped to
// 2³¹, inside the view, so a list with no such element gave an object
// there. The view is mapped address space (internal/bigbuf) that the test
// never touches, and its count is set directly (a walk over 2³¹ elements
// would touch 8 GiB).
func TestListObjectStrideDoesNotWrap(t *testing.T) {
	const n = 1<<31 + 1
	const stride = 1<<33 + 1
	b := bigbuf.New(t, 1<<33+1<<31+32)
	l := List{b: b, start: 16, n: n}
	if o := l.Object(1<<31, stride); !o.IsNull() {
		t.Fatalf("List.Object(2³¹, 2³³+1) of a %d-byte view at %d, want null", len(b), o.Pos())
	}
	// Element 0 lies inside the view; element 1 ends past it.
	if o := l.Object(0, stride); o.Pos() != 16 {
		t.Fatalf("List.Object(0, 2³³+1) at %d (null: %v), want 16", o.Pos(), o.IsNull())
	}
	if o := l.Object(1, stride); !o.IsNull() {
		t.Fatalf("List.Object(1, 2³³+1) past the end at %d, want null", o.Pos())
	}
}
