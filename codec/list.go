package codec

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// List is a view of a list inside a message. The zero List is empty. A List
// does not know its element type: the caller reads it as a flat list
// ([List.Uint32], [List.Object] with a stride, [List.Data]) or as a
// variable-element list ([List.BytesAt], [List.ObjectAt], [List.Iter]), as
// its schema says. Every read checks its own bounds and returns the zero
// value when the element does not lie inside the message.
//
// A List aliases the message it was read from and is valid only while those
// bytes are unchanged.
type List struct {
	b     []byte // the whole message
	start int    // absolute position of the first element
	n     int    // element count, at most len(b)
}

// Len returns the element count from the list slot. It never exceeds the
// message size, but elements past the end of the message read as zero.
func (l List) Len() int { return l.n }

// IsNull reports whether the slot was null or out of bounds.
func (l List) IsNull() bool { return l.b == nil }

// elem returns the absolute position of element i of width w, or -1. It is
// for the scalar widths (w of 8 or less): i is below n, which is at most
// len(l.b), so i*w is below 8*len(l.b), which no slice's length makes wrap
// (a slice lies in the address space, well below 2⁶¹ bytes). [List.Object]
// takes any stride and checks its product itself.
func (l List) elem(i, w int) int {
	if uint(i) >= uint(l.n) || uint(w) > uint(len(l.b)) {
		return -1
	}
	p := uint64(l.start) + uint64(i)*uint64(w)
	if p+uint64(w) > uint64(len(l.b)) {
		return -1
	}
	return int(p)
}

// Uint8 returns element i of a flat list of u8.
func (l List) Uint8(i int) uint8 {
	p := l.elem(i, 1)
	if p < 0 {
		return 0
	}
	return l.b[p]
}

// Uint16 returns element i of a flat list of u16.
func (l List) Uint16(i int) uint16 {
	p := l.elem(i, 2)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint16(l.b[p:])
}

// Uint32 returns element i of a flat list of u32.
func (l List) Uint32(i int) uint32 {
	p := l.elem(i, 4)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint32(l.b[p:])
}

// Uint64 returns element i of a flat list of u64.
func (l List) Uint64(i int) uint64 {
	p := l.elem(i, 8)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(l.b[p:])
}

// Object returns element i of a flat list of fixed-size objects laid out
// stride bytes apart. Its pointers resolve inside the whole message.
func (l List) Object(i, stride int) Object {
	if stride <= 0 || uint(i) >= uint(l.n) {
		return Object{}
	}
	// i*stride is taken whole: on a view of 8 GiB or more (VarListOf of a
	// large buffer) both can pass 32 bits, and a product that wrapped
	// would name a position inside the view that is not element i.
	hi, off := bits.Mul64(uint64(i), uint64(stride))
	rest := uint64(len(l.b) - l.start) // start is at most len(l.b)
	if hi != 0 || off > rest || uint64(stride) > rest-off {
		return Object{}
	}
	return objectAt(l.b, uint64(l.start)+off)
}

// Data returns the Len()*elemSize bytes of a flat list, or nil when they do
// not all lie inside the message (a product past 64 bits included). For a
// list of u8 it is the list itself. The result aliases the message.
func (l List) Data(elemSize int) []byte {
	if elemSize <= 0 || l.b == nil {
		return nil
	}
	// A hostile count times a large size can pass 64 bits: the product
	// is taken whole, so that it never wraps to a size that fits.
	hi, size := bits.Mul64(uint64(l.n), uint64(elemSize))
	if hi != 0 || size > uint64(len(l.b)-l.start) {
		return nil
	}
	end := l.start + int(size)
	return l.b[l.start:end:end]
}

// BytesAt returns the bytes of element i of a variable-element list
// (elements are [u32 size][size bytes], back to back), or nil when the walk
// leaves the message. Finding element i walks the i sizes before it (the
// wire has no table of element offsets, and a view builds none, so that
// reading allocates nothing): a loop over every i takes time quadratic in
// the list's length. Use [List.Iter] to visit every element in O(n) total
// (BenchmarkTextListAt and BenchmarkTextListIter compare the two). The
// result aliases the message.
func (l List) BytesAt(i int) []byte {
	if uint(i) >= uint(l.n) {
		return nil
	}
	p, end := uint64(l.start), uint64(len(l.b))
	for k := 0; ; k++ {
		if p+ElementHeaderSize > end {
			return nil
		}
		next := p + ElementHeaderSize + uint64(binary.LittleEndian.Uint32(l.b[p:]))
		if next > end {
			return nil // the walk stops at the first element that does not fit
		}
		if k == i {
			return l.b[p+ElementHeaderSize : next : next]
		}
		p = next
	}
}

// ObjectAt returns the root object of element i of a variable-element list
// whose elements are whole messages (what the schema compiler writes for
// list<Struct>). An element that does not parse gives a null Object.
// Finding it walks the i elements before it, as [List.BytesAt] does: use
// [List.Iter] to visit them all.
func (l List) ObjectAt(i int) Object {
	return rootOf(l.BytesAt(i))
}

// Iter returns an iterator over the elements of a variable-element list.
func (l List) Iter() ListIter {
	return ListIter{b: l.b, next: l.start, left: l.n, index: -1}
}

// ListIter walks a variable-element list front to back without allocating:
//
//	it := list.Iter()
//	for it.Next() {
//		item := it.Object()
//		...
//	}
//
// Declare it before the for statement: declared in it, the iterator is
// copied at every step (Go 1.22 makes a new loop variable per iteration).
//
// The walk stops early, with Next returning false, at the first element
// whose size does not fit inside the message. Once Next has returned false
// there is no current element, as before the first Next: Bytes returns
// nil, Object a null Object, the element readers (Uint32, Fixed ...) their
// zero values, and Index -1; later calls to Next return false too.
type ListIter struct {
	b     []byte
	next  int // absolute position of the next element's size word
	left  int // elements not yet visited
	index int
	cur   []byte
}

// Next advances to the next element and reports whether there is one.
func (it *ListIter) Next() bool {
	if it.left <= 0 {
		it.cur, it.index = nil, -1
		return false
	}
	p := uint64(it.next)
	if p+ElementHeaderSize > uint64(len(it.b)) {
		it.left, it.cur, it.index = 0, nil, -1
		return false
	}
	size := uint64(binary.LittleEndian.Uint32(it.b[p:]))
	start := p + ElementHeaderSize
	end := start + size
	if end > uint64(len(it.b)) || end > math.MaxInt {
		it.left, it.cur, it.index = 0, nil, -1
		return false
	}
	it.cur = it.b[start:end:end]
	it.next = int(end)
	it.left--
	it.index++
	return true
}

// Index returns the position of the current element in the list, or -1
// when there is none (before the first Next, and after Next returned false).
func (it *ListIter) Index() int { return it.index }

// Bytes returns the current element's bytes, or nil when there is no
// current element. They alias the message.
func (it *ListIter) Bytes() []byte { return it.cur }

// Object parses the current element as a whole message and returns its root
// object; an element that does not parse gives a null Object.
func (it *ListIter) Object() Object { return rootOf(it.cur) }

func rootOf(b []byte) Object {
	m, err := Parse(b)
	if err != nil {
		return Object{}
	}
	return m.Root()
}
