package codec_test

import (
	"encoding/binary"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// FuzzRootOf: RootOf, the inlined header check of generated decoders,
// accepts exactly the messages whose header Parse accepts and whose root
// lies inside them (at least HeaderSize, less than the size), and then
// gives the object Parse and Root give (same position; its bytes end at
// the message's size). Seeds: the canonical fixtures, and headers one
// edit away from a good one (version 0..3, flags, root and size at and
// around their limits).
func FuzzRootOf(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b) })
	good := make([]byte, 32)
	copy(good, "ZAP\x00")
	binary.LittleEndian.PutUint16(good[4:], 2)
	binary.LittleEndian.PutUint32(good[8:], 16)
	binary.LittleEndian.PutUint32(good[12:], 32)
	f.Add(good)
	for _, edit := range []struct{ at, v int }{{4, 0}, {4, 1}, {4, 3}, {5, 1}, {6, 0xFF}, {7, 0xC8}, {3, 1}, {8, 15}, {8, 31}, {8, 32}, {8, 0}, {12, 16}, {12, 17}, {12, 33}, {12, 0}, {11, 1}, {15, 1}} {
		b := append([]byte(nil), good...)
		b[edit.at] = byte(edit.v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, ok := codec.RootOf(b)
		m, err := codec.Parse(b)
		var want codec.Object
		inside := false
		if err == nil {
			want = m.Root()
			root := int(binary.LittleEndian.Uint32(b[8:]))
			inside = root >= codec.HeaderSize && root < m.Size()
		}
		if ok != inside {
			t.Fatalf("RootOf ok %v; Parse %v, root inside the message %v", ok, err, inside)
		}
		if !ok {
			if !o.IsNull() {
				t.Fatal("RootOf failed with a usable object")
			}
			return
		}
		if o.IsNull() || want.IsNull() || o.Pos() != want.Pos() {
			t.Fatalf("RootOf %v at %d, Parse+Root %v at %d", !o.IsNull(), o.Pos(), !want.IsNull(), want.Pos())
		}
		// Both see the same message: a read at the last byte agrees, one
		// past it reads nothing.
		if n := m.Size() - o.Pos(); n > 0 && o.Uint8(n-1) != want.Uint8(n-1) {
			t.Fatal("RootOf and Parse+Root read different bytes")
		}
		if n := m.Size() - o.Pos(); o.Uint8(n) != 0 || want.Uint8(n) != 0 {
			t.Fatal("a read past the message's size returned a byte")
		}
	})
}
