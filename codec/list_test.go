package codec_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// TestListSizeOverflow: List.Data and List.VarFits multiply the list's
// count by an element size. Given a hostile count (four elements claimed
// where eight bytes lie) and an element size large enough, the product
// passes 64 bits; it used to wrap to a small size that fits in the
// message (4 × (2⁶² + 1) = 2⁶⁴ + 4 read as 4), so Data gave 4 bytes and
// VarFits said the elements fit. A size that overflows is out of bounds.
// (On a 32-bit platform no int is large enough to overflow: the cases
// there check that nothing fits.)
func TestListSizeOverflow(t *testing.T) {
	t.Parallel()
	l := rootList(t, rawListMessage(make([]byte, 8), 4))
	if l.Len() != 4 {
		t.Fatalf("Len %d, want 4", l.Len())
	}
	for _, size := range []int{math.MaxInt/2 + 2, math.MaxInt/4 + 1, math.MaxInt} {
		if got := l.Data(size); got != nil {
			t.Errorf("Data(%d) of 4 elements in 8 bytes = %d bytes, want nil", size, len(got))
		}
	}
	// With the size word, 4 × (2⁶² − 4 + 4) = 2⁶⁴; MaxInt − 3 + 4 passes
	// MaxInt itself.
	for _, minElem := range []int{math.MaxInt/2 - 3, math.MaxInt - 3, math.MaxInt} {
		if l.VarFits(minElem) {
			t.Errorf("VarFits(%d) true for 4 elements in 8 bytes", minElem)
		}
	}
	if len(l.Data(2)) != 8 || !rootList(t, rawListMessage(make([]byte, 8), 2)).VarFits(0) {
		t.Error("a list whose elements fit reads as if they did not")
	}
}

// TestListIterAfterEnd: once Next has returned false, an iterator has no
// current element. It used to keep the last one, so a caller that read
// after the loop (or called Next again) got the last element's bytes and
// value as if it were still current. Both ends are checked: the end of
// the count, and a walk stopped by an element that does not fit.
func TestListIterAfterEnd(t *testing.T) {
	t.Parallel()
	// Two 4-byte elements, 7 and 9.
	body := []byte{4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0}
	cases := map[string]codec.List{
		"count reached": rootList(t, rawListMessage(body, 2)),
		// A third element is claimed; its size word lies past the end.
		"walk stopped": rootList(t, rawListMessage(body, 3)),
	}
	for name, l := range cases {
		it := l.Iter()
		var got []uint32
		for it.Next() {
			got = append(got, it.Uint32())
		}
		if len(got) != 2 || got[0] != 7 || got[1] != 9 {
			t.Fatalf("%s: elements %v, want [7 9]", name, got)
		}
		for range 2 { // after the end, and after Next is called again
			if it.Bytes() != nil || it.Uint32() != 0 || it.Fixed(4) != nil || !it.Object().IsNull() || it.Index() != -1 {
				t.Errorf("%s: after the end Bytes %v, Uint32 %d, Index %d; want nil, 0, -1",
					name, it.Bytes(), it.Uint32(), it.Index())
			}
			if it.Next() {
				t.Fatalf("%s: Next true after the end", name)
			}
		}
	}
}

// TestListZeroDistanceIsNull pins how a list slot of distance 0 reads: as
// null and empty whatever its count, as the canonical reader reads it
// (docs/wire.md §3). WIRE.md does not say so in words for lists (it does
// for text, bytes and objects), but its empty_list_after_object fixture
// has a slot {0, 0} whose start, the slot itself, lies inside the
// message and which the canonical reader still reads as null, and that
// reader's List returns the null list for a distance of 0 before it looks
// at the count. A slot {0, 2} therefore does not read the slot's own
// bytes as a list (which would give two elements: one of size 0, then one
// of size 2), while a slot of distance 8 and count 0 is an empty list that
// is not null.
func TestListZeroDistanceIsNull(t *testing.T) {
	t.Parallel()
	body := []byte{0xAA, 0xBB, 0, 0, 0, 0, 0, 0}
	msg := rawListMessage(body, 2)
	binary.LittleEndian.PutUint32(msg[16:], 0) // the slot: {0, 2}
	l := rootList(t, msg)
	if !l.IsNull() || l.Len() != 0 {
		t.Fatalf("slot {0, 2}: IsNull %v, Len %d; want null and empty", l.IsNull(), l.Len())
	}
	if l.Uint32(0) != 0 || l.Uint32(1) != 0 || l.BytesAt(1) != nil || l.VarFixed(1, 2) != nil || l.Data(1) != nil {
		t.Fatal("slot {0, 2}: an element reads as if the list started at the slot")
	}
	if it := l.Iter(); it.Next() {
		t.Fatalf("slot {0, 2}: Iter gives element %x", it.Bytes())
	}

	empty := rootList(t, rawListMessage(body, 0)) // {8, 0}
	if empty.IsNull() || empty.Len() != 0 {
		t.Fatalf("slot {8, 0}: IsNull %v, Len %d; want not null, empty", empty.IsNull(), empty.Len())
	}
}
