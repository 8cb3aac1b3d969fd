package codec_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

// hostileInts are offsets, indexes and sizes a caller or a slot could
// give that wrap when added to a position or multiplied in 32 or 64 bits:
// negative values (-1 to -8 wrap to 0 to 7 once converted and added to 8),
// values near MaxInt, and, where an int holds them, values near MaxUint32.
func hostileInts() []int {
	v := []int{-1, -4, -7, -8, -9, math.MinInt, math.MinInt + 1, math.MaxInt, math.MaxInt - 3,
		math.MaxInt - 7, math.MaxInt - 8, math.MaxInt / 2, math.MaxInt/2 + 1, math.MaxInt32, math.MinInt32}
	if u := uint64(math.MaxUint32); u <= math.MaxInt {
		for _, d := range []uint64{0, 1, 3, 4, 7, 8} {
			v = append(v, int(u-d), int(u+d))
		}
	}
	return v
}

// hostileMessage returns a message whose root, at 16, has a 16-byte fixed
// section holding slot (8 bytes, at offset 0) and 8 bytes of 0xAA, followed
// by 32 bytes of 0xAA: every byte a wrapped read could reach is non-zero.
func hostileMessage(slot uint64) []byte {
	msg := make([]byte, 16+16+32)
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], codec.Version1)
	binary.LittleEndian.PutUint32(msg[8:], 16)
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(msg)))
	for i := 24; i < len(msg); i++ {
		msg[i] = 0xAA
	}
	binary.LittleEndian.PutUint64(msg[16:], slot)
	return msg
}

// TestReadsDoNotWrap: every reader of codec's views given an offset, index
// or size near the ends of int or uint32 (hostileInts), or a slot whose
// offset or length is near them, reads the zero value (0, "", nil, a null
// Object, an empty List) and never a position that wrapped back inside
// the message. The messages are filled with 0xAA so that a wrapped read
// shows.
func TestReadsDoNotWrap(t *testing.T) {
	t.Parallel()
	hostile := hostileInts()

	t.Run("object offsets and sizes", func(t *testing.T) {
		m, err := codec.Parse(hostileMessage(0xAAAA_AAAA_AAAA_AAAA))
		if err != nil {
			t.Fatal(err)
		}
		o := m.Root()
		f := o.Fixed(16)
		for _, x := range hostile {
			if o.Uint8(x) != 0 || o.Uint16(x) != 0 || o.Uint32(x) != 0 || o.Uint64(x) != 0 || o.Bool(x) {
				t.Errorf("a scalar at offset %d reads non-zero", x)
			}
			if o.Text(x) != "" || o.Bytes(x) != nil || o.BytesIn(f, x) != nil {
				t.Errorf("the text or bytes slot at offset %d reads a value", x)
			}
			if b, err := o.CheckedBytes(x); b != nil || err == nil {
				t.Errorf("CheckedBytes(%d) = %d bytes, %v; want nil and an error", x, len(b), err)
			} else if pe := parseErr(t, err); pe.Offset < 0 {
				t.Errorf("CheckedBytes(%d) reports byte %d, before the message", x, pe.Offset)
			}
			if b, ok := m.BytesAt(x); b != nil || ok {
				t.Errorf("Message.BytesAt(%d) = %d bytes, %v; want nil, false", x, len(b), ok)
			}
			if o.BytesFixed(x, 1) != nil || o.BytesFixed(0, x) != nil || o.BytesFixed(x, x) != nil || o.Fixed(x) != nil {
				t.Errorf("BytesFixed or Fixed with offset or size %d reads bytes", x)
			}
			if !o.Object(x).IsNull() || !o.List(x).IsNull() {
				t.Errorf("the object or list slot at offset %d is not null", x)
			}
		}
	})

	// Slots whose offset or length, added to the slot's position or to
	// each other in 32 bits, would land inside the message.
	t.Run("text and bytes slots", func(t *testing.T) {
		for _, s := range [][2]uint32{
			{0xFFFF_FFFF, 1}, {0xFFFF_FFF8, 8}, {0xFFFF_FFF0, 16}, {0x8000_0000, 4},
			{8, 0xFFFF_FFFF}, {8, 0xFFFF_FFF8}, {1, 0xFFFF_FFFF}, {0xFFFF_FFFF, 0xFFFF_FFFF},
		} {
			m, err := codec.Parse(hostileMessage(uint64(s[0]) | uint64(s[1])<<32))
			if err != nil {
				t.Fatal(err)
			}
			o := m.Root()
			if o.Text(0) != "" || o.Bytes(0) != nil || o.BytesIn(o.Fixed(16), 0) != nil {
				t.Errorf("slot {%#x, %#x} reads a value", s[0], s[1])
			}
			if b, err := o.CheckedBytes(0); b != nil || err == nil {
				t.Errorf("slot {%#x, %#x}: CheckedBytes = %d bytes, %v", s[0], s[1], len(b), err)
			}
			if b, ok := m.BytesAt(16); b != nil || ok {
				t.Errorf("slot {%#x, %#x}: BytesAt = %d bytes, %v", s[0], s[1], len(b), ok)
			}
		}
	})
	t.Run("object slots", func(t *testing.T) {
		// Targets: far past the end, before the message, at 0, inside the
		// header, at the end.
		for _, rel := range []int32{math.MaxInt32, math.MinInt32, -16, -1, -8, 64 - 16} {
			m, err := codec.Parse(hostileMessage(uint64(uint32(rel)) | 0xAAAA_AAAA<<32))
			if err != nil {
				t.Fatal(err)
			}
			if c := m.Root().Object(0); !c.IsNull() {
				t.Errorf("object slot %d: an object at %d", rel, c.Pos())
			}
		}
	})
	t.Run("list slots", func(t *testing.T) {
		for _, s := range [][2]uint32{
			{8, 0xFFFF_FFFF}, {8, 0x8000_0000}, {8, 65}, {0x7FFF_FFFF, 1}, {0x8000_0000, 1},
			{0xFFFF_FFF0, 1}, {0xFFFF_FFF8, 1}, {48, 1},
		} {
			m, err := codec.Parse(hostileMessage(uint64(s[0]) | uint64(s[1])<<32))
			if err != nil {
				t.Fatal(err)
			}
			if l := m.Root().List(0); !l.IsNull() || l.Len() != 0 {
				t.Errorf("list slot {%#x, %#x}: a list of %d", s[0], s[1], l.Len())
			}
		}
	})

	// A list of 2 claimed in the 40 bytes from its start: reads with a
	// hostile index, width or stride.
	t.Run("list indexes and sizes", func(t *testing.T) {
		m, err := codec.Parse(hostileMessage(8 | 2<<32))
		if err != nil {
			t.Fatal(err)
		}
		l := m.Root().List(0)
		if l.Len() != 2 || l.Uint8(0) != 0xAA {
			t.Fatalf("the list reads %d elements, first %#x", l.Len(), l.Uint8(0))
		}
		for _, x := range hostile {
			if l.Uint8(x) != 0 || l.Uint16(x) != 0 || l.Uint32(x) != 0 || l.Uint64(x) != 0 {
				t.Errorf("a flat element at index %d reads non-zero", x)
			}
			if l.VarUint8(x) != 0 || l.VarUint16(x) != 0 || l.VarUint32(x) != 0 || l.VarUint64(x) != 0 {
				t.Errorf("a variable element at index %d reads non-zero", x)
			}
			if l.BytesAt(x) != nil || !l.ObjectAt(x).IsNull() || l.VarFixed(x, 1) != nil || l.VarFixed(0, x) != nil {
				t.Errorf("element %d (or of width %d) reads a value", x, x)
			}
			if !l.Object(x, 1).IsNull() || !l.Object(0, x).IsNull() || !l.Object(1, x).IsNull() {
				t.Errorf("an object at index %d or of stride %d is not null", x, x)
			}
			if l.Data(x) != nil || l.VarFits(x) {
				t.Errorf("Data(%d) or VarFits(%d) takes 2 elements of %d bytes for present", x, x, x)
			}
		}
	})

	// Element sizes that wrap once the 4-byte size word is added to them
	// in 32 bits (0xFFFFFFFC + 4 = 0, the walk back at the same element;
	// 0xFFFFFFF8 + 4, 4 bytes before it): the element is not there, and
	// the walk stops at it. (The O(1) readers, VarUint32 and its
	// siblings, read element 1 where it lies when the elements are
	// uniform, without walking: only element 0 is theirs to refuse here.)
	t.Run("element sizes", func(t *testing.T) {
		for _, size := range []uint32{0xFFFF_FFFF, 0xFFFF_FFFC, 0xFFFF_FFF8, 0x8000_0000} {
			msg := hostileMessage(8 | 2<<32)
			binary.LittleEndian.PutUint32(msg[24:], size)
			m, err := codec.Parse(msg)
			if err != nil {
				t.Fatal(err)
			}
			l := m.Root().List(0)
			for i := range 2 {
				if l.BytesAt(i) != nil || !l.ObjectAt(i).IsNull() {
					t.Errorf("size %#x: element %d reads a value", size, i)
				}
			}
			if l.VarFixed(0, 0) != nil || l.VarFixed(0, 4) != nil || l.VarUint8(0) != 0 || l.VarUint32(0) != 0 || l.VarUint64(0) != 0 {
				t.Errorf("size %#x: element 0 reads a value", size)
			}
			it := l.Iter()
			if it.Next() {
				t.Errorf("size %#x: the iterator gives an element of %d bytes", size, len(it.Bytes()))
			}
			if in, ok := codec.VarListOf(msg[24:]); in.Len() != 0 || ok {
				t.Errorf("size %#x: VarListOf counts %d elements (%v)", size, in.Len(), ok)
			}
		}
	})

	// VarListOf views any buffer, so a List's positions, and an Object's
	// read from it, can pass 4 GiB. A List's flat Object read the object
	// at its position's low 32 bits, and an Object's nested object past
	// 4 GiB was null. The buffer is mapped address space (internal/bigbuf):
	// element 0 spans 4 GiB + 3 bytes (never written), then 2¹⁶ empty
	// elements (zero size words); of a flat view with a stride of
	// 2¹⁶ + 1, element 2¹⁶ lies at 4 GiB + 2¹⁶, which wraps to 2¹⁶.
	t.Run("positions past 4 GiB", func(t *testing.T) {
		const k = 1 << 16
		b := bigbuf.New(t, 1<<32+3+4*k)
		binary.LittleEndian.PutUint32(b, math.MaxUint32)
		l, ok := codec.VarListOf(b)
		if !ok || l.Len() != k+1 {
			t.Fatalf("VarListOf: %d elements (%v), want %d", l.Len(), ok, k+1)
		}
		o := l.Object(k, k+1)
		want := uint64(1)<<32 + k
		if uint64(o.Pos()) != want {
			t.Fatalf("List.Object(%d, %d) at %d, want %d", k, k+1, o.Pos(), want)
		}
		// A nested-object slot there, pointing 8 bytes on.
		binary.LittleEndian.PutUint32(b[o.Pos():], 8)
		if c := o.Object(0); uint64(c.Pos()) != want+8 {
			t.Errorf("Object.Object(0) at %d (null: %v), want %d", c.Pos(), c.IsNull(), want+8)
		}
	})
}
