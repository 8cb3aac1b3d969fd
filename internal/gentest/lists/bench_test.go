package lists

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// The list views beside the floor: the same bytes read by hand with
// encoding/binary, keeping only the checks that keep a read inside the
// message (the slot, each size word, each element's bounds).

var benchSink uint64

// benchLists has 100 elements in U32s and in Texts.
func benchLists() []byte {
	var m Lists
	for i := range 100 {
		m.U32s = append(m.U32s, uint32(i*7919))
		m.Texts = append(m.Texts, "element-"+strconv.Itoa(i))
	}
	return m.AppendZAP(nil)
}

// floorList returns the start and count of the list in slot off of the
// root, checked as a view would: count <= size, start inside the message.
func floorList(msg []byte, off int) (start, n int) {
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	slot := root + off
	if slot+8 > len(msg) {
		return 0, 0
	}
	rel := int(int32(binary.LittleEndian.Uint32(msg[slot:])))
	n = int(binary.LittleEndian.Uint32(msg[slot+4:]))
	start = slot + rel
	if rel == 0 || n > len(msg) || start < 16 || start >= len(msg) {
		return 0, 0
	}
	return start, n
}

func BenchmarkU32At(b *testing.B) {
	msg := benchLists()
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := ReadLists(msg)
			l := v.U32s()
			var sum uint64
			for i := range l.Len() {
				sum += uint64(l.At(i))
			}
			benchSink = sum
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			start, n := floorList(msg, 28)
			var sum uint64
			for i := range n {
				p := start + i*8 // uniform: [04000000][4 bytes]
				if p+8 <= len(msg) && binary.LittleEndian.Uint32(msg[p:]) == 4 {
					sum += uint64(binary.LittleEndian.Uint32(msg[p+4:]))
				}
			}
			benchSink = sum
		}
	})
}

func BenchmarkU32Iter(b *testing.B) {
	msg := benchLists()
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := ReadLists(msg)
			var sum uint64
			it := v.U32s().Iter()
			for it.Next() {
				sum += uint64(it.Value())
			}
			benchSink = sum
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, n := floorList(msg, 28)
			var sum uint64
			for range n {
				if p+4 > len(msg) {
					break
				}
				size := int(binary.LittleEndian.Uint32(msg[p:]))
				if p+4+size > len(msg) {
					break
				}
				if size == 4 {
					sum += uint64(binary.LittleEndian.Uint32(msg[p+4:]))
				}
				p += 4 + size
			}
			benchSink = sum
		}
	})
}

func BenchmarkTextIter(b *testing.B) {
	msg := benchLists()
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := ReadLists(msg)
			var sum uint64
			it := v.Texts().Iter()
			for it.Next() {
				s := it.Value()
				sum += uint64(len(s))
			}
			benchSink = sum
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, n := floorList(msg, 92)
			var sum uint64
			for range n {
				if p+4 > len(msg) {
					break
				}
				size := int(binary.LittleEndian.Uint32(msg[p:]))
				if p+4+size > len(msg) {
					break
				}
				sum += uint64(len(msg[p+4 : p+4+size]))
				p += 4 + size
			}
			benchSink = sum
		}
	})
}

// BenchmarkTextAt reads every element by index: At walks the sizes before
// element i (text elements have no fixed width), so this is quadratic in
// both arms.
func BenchmarkTextAt(b *testing.B) {
	msg := benchLists()
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := ReadLists(msg)
			l := v.Texts()
			var sum uint64
			for i := range l.Len() {
				sum += uint64(len(l.At(i)))
			}
			benchSink = sum
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			start, n := floorList(msg, 92)
			var sum uint64
			for i := range n {
				p := start
				for k := 0; ; k++ {
					if p+4 > len(msg) {
						break
					}
					size := int(binary.LittleEndian.Uint32(msg[p:]))
					if p+4+size > len(msg) {
						break
					}
					if k == i {
						sum += uint64(len(msg[p+4 : p+4+size]))
						break
					}
					p += 4 + size
				}
			}
			benchSink = sum
		}
	})
}

// TestBenchFloors checks that the floors read what the views read.
func TestBenchFloors(t *testing.T) {
	msg := benchLists()
	v, err := ReadLists(msg)
	if err != nil {
		t.Fatal(err)
	}
	var want, got uint64
	for i := range v.U32s().Len() {
		want += uint64(v.U32s().At(i))
	}
	start, n := floorList(msg, 28)
	for i := range n {
		got += uint64(binary.LittleEndian.Uint32(msg[start+i*8+4:]))
	}
	if n != 100 || got != want || want == 0 {
		t.Fatalf("u32 floor: %d elements, sum %d, view sum %d", n, got, want)
	}
}

// BenchmarkAppendU32s writes a Lists with 100 u32s (every other list empty)
// beside the same message written by hand with a codec.Builder.
func BenchmarkAppendU32s(b *testing.B) {
	var m Lists
	for i := range 100 {
		m.U32s = append(m.U32s, uint32(i*7919))
	}
	buf := make([]byte, 0, 2048)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = m.AppendZAP(buf[:0])
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		var bl codec.Builder
		for b.Loop() {
			buf = handU32s(&bl, buf[:0], m.U32s)
		}
	})
}

// handU32s writes what Lists.AppendZAP writes for a record whose only
// non-empty field is U32s: 14 lists started in field order, then the root.
func handU32s(bl *codec.Builder, dst []byte, xs []uint32) []byte {
	bl.Reset(dst)
	o := bl.StartObject(124)
	for off := 12; off <= 116; off += 8 {
		l := bl.StartList(0)
		if off == 28 {
			for _, x := range xs {
				l.AddUint32Element(x)
			}
		}
		o.SetList(off, l.Finish())
	}
	bl.SetRoot(o.Finish())
	return bl.Finish()
}

// BenchmarkDecodeU32s decodes the same message into a warm record beside a
// hand-written decode: Count and Name, the 13 empty lists, and a []uint32
// filled from the list's iterator.
func BenchmarkDecodeU32s(b *testing.B) {
	var m Lists
	for i := range 100 {
		m.U32s = append(m.U32s, uint32(i*7919))
	}
	msg := m.AppendZAP(nil)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		var d Lists
		for b.Loop() {
			if err := d.DecodeZAP(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		xs := make([]uint32, 0, 100)
		for b.Loop() {
			mm, err := codec.Parse(msg)
			if err != nil {
				b.Fatal(err)
			}
			o := mm.Root()
			benchSink += uint64(o.Uint32(0)) + uint64(len(o.Bytes(4)))
			for off := 12; off <= 116; off += 8 { // the other 13 lists: empty
				if off != 28 && o.List(off).Len() != 0 {
					b.Fatal("list not empty")
				}
			}
			xs = xs[:0]
			it := o.List(28).Iter()
			for it.Next() {
				xs = append(xs, it.Uint32())
			}
			benchSink += uint64(len(xs))
		}
	})
}

func TestHandU32sMatches(t *testing.T) {
	m := Lists{U32s: []uint32{1, 2, 3}}
	var bl codec.Builder
	if got, want := handU32s(&bl, nil, m.U32s), m.AppendZAP(nil); string(got) != string(want) {
		t.Fatalf("floor writes\n%x\ngenerated\n%x", got, want)
	}
}
