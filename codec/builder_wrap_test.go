package codec

import (
	"errors"
	"math"
	"testing"
	"unsafe"
)

// These tests set the Builder's counters directly, as if some 2^32 Resets
// had run: a program that keeps a pooled Builder gets there in hours. A
// builder from before those Resets must still be refused.

// TestStaleObjectAfterCounterWrap keeps an ObjectBuilder across what would
// be 2^32 Resets and checks that it writes nothing into the new message.
func TestStaleObjectAfterCounterWrap(t *testing.T) {
	var b Builder
	b.Reset(nil)
	b.gen = math.MaxUint32 - 1 // the next 32-bit values straddle the wrap
	stale := b.StartObject(8)

	b.gen += math.MaxUint32 // 2^32 - 1 Resets later; Reset adds the last one
	b.Reset(make([]byte, 0, 64))
	cur := b.StartObject(8)
	cur.SetUint64(0, 1)
	stale.SetUint64(0, 2) // same position in the new message
	if err := b.Err(); !errors.Is(err, ErrBuilder) {
		t.Fatalf("stale ObjectBuilder set a field: Err = %v, want ErrBuilder", err)
	}
	if r := stale.Finish(); r != 0 {
		t.Errorf("stale ObjectBuilder's Finish = %d, want 0", r)
	}
	b.SetRoot(cur.Finish())
	m, err := Parse(b.Finish())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Root().Uint64(0); got != 1 {
		t.Errorf("field = %d, want 1 (the stale builder overwrote it)", got)
	}
}

// TestStaleListAfterCounterWrap does the same with a ListBuilder left open:
// after the wrap, the list open in the new message must not answer to it.
func TestStaleListAfterCounterWrap(t *testing.T) {
	var b Builder
	b.Reset(nil)
	stale := b.StartList(4) // left open

	b.lists += math.MaxUint32 - 1 // 2^31 - 1 Resets later; Reset adds the last
	b.Reset(make([]byte, 0, 64))
	cur := b.StartList(4)
	cur.AddUint32(1)
	stale.AddUint32(2)
	if err := b.Err(); !errors.Is(err, ErrBuilder) {
		t.Fatalf("stale ListBuilder added an element: Err = %v, want ErrBuilder", err)
	}
	if r := stale.Finish(); r.Len() != 0 {
		t.Errorf("stale ListBuilder's Finish = %d elements, want 0", r.Len())
	}
	if r := cur.Finish(); r.Len() != 1 {
		t.Errorf("list has %d elements, want 1", r.Len())
	}
}

// TestBuilderValueSizes keeps the object and list builders at three and
// five words on 64-bit platforms: they are passed and kept by value.
func TestBuilderValueSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are checked on 64-bit platforms")
	}
	if n := unsafe.Sizeof(ObjectBuilder{}); n != 24 {
		t.Errorf("ObjectBuilder is %d bytes, want 24", n)
	}
	if n := unsafe.Sizeof(ListBuilder{}); n != 40 {
		t.Errorf("ListBuilder is %d bytes, want 40", n)
	}
}
