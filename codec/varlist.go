package codec

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Variable-element lists of fixed-width values.
//
// The canonical schema compiler writes every list<T> as a variable-element
// list (docs/wire.md §4): each element is [u32 size][size bytes], scalars
// included, so a list<u32> of [7] is 04000000 07000000. The readers below
// find element i of such a list in O(1) when the elements are uniform, as
// every writer of a typed list makes them: element i then starts at
// i*(4+w) from the list start. They check the size word found there and
// fall back to walking the sizes from the front when it is not w; an
// element found by that walk whose size is not w reads as the zero value.
//
// They cannot see, in O(1), whether the elements before i are uniform. On
// a list whose elements are not all w bytes (which no writer makes, and a
// generated DecodeZAP refuses with [ErrElementSize]) a size word of w at
// i*(4+w) is taken for element i even when the walk from the front finds
// element i elsewhere, or finds it is not w bytes: the value read is then
// w bytes of the message that are not element i, where [List.Iter] and
// [List.BytesAt] give the elements as walked. Such a list can also make
// each read walk, so reading every element of it by index takes time
// quadratic in its length; [List.Iter] is linear on any list.

// VarFixed returns the w bytes of element i of a variable-element list whose
// elements are w bytes each, or nil when i is out of range, the element does
// not lie inside the message or its size is not w. It is O(1) when the
// elements before i are all w bytes and walks them when the size word at
// the uniform position is not w; on a list whose elements are not all w
// bytes it may return w bytes that are not element i (see above), never
// bytes outside the message. The result aliases the message.
func (l List) VarFixed(i, w int) []byte {
	p := l.varElem(i, w)
	if p < 0 {
		return nil
	}
	return l.b[p : p+w : p+w]
}

// VarUint8 returns element i of a variable-element list of 1-byte elements
// (list<u8>, list<i8>, list<bool>), or 0 (see [List.VarFixed]).
func (l List) VarUint8(i int) uint8 {
	p := uint64(l.start) + uint64(i)*5
	if uint(i) < uint(l.n) && p+5 <= uint64(len(l.b)) && binary.LittleEndian.Uint32(l.b[p:]) == 1 {
		return l.b[p+4]
	}
	return l.slowUint8(i)
}

// VarUint16 returns element i of a variable-element list of 2-byte
// little-endian elements (list<u16>, list<i16>), or 0.
func (l List) VarUint16(i int) uint16 {
	p := uint64(l.start) + uint64(i)*6
	if uint(i) < uint(l.n) && p+6 <= uint64(len(l.b)) && binary.LittleEndian.Uint32(l.b[p:]) == 2 {
		return binary.LittleEndian.Uint16(l.b[p+4:])
	}
	return l.slowUint16(i)
}

// VarUint32 returns element i of a variable-element list of 4-byte
// little-endian elements (list<u32>, list<i32>, list<f32> as bits), or 0.
func (l List) VarUint32(i int) uint32 {
	p := uint64(l.start) + uint64(i)*8
	if uint(i) < uint(l.n) && p+8 <= uint64(len(l.b)) {
		if w := binary.LittleEndian.Uint64(l.b[p:]); uint32(w) == 4 {
			return uint32(w >> 32)
		}
	}
	return l.slowUint32(i)
}

// VarUint64 returns element i of a variable-element list of 8-byte
// little-endian elements (list<u64>, list<i64>, list<f64> as bits), or 0.
func (l List) VarUint64(i int) uint64 {
	p := uint64(l.start) + uint64(i)*12
	if uint(i) < uint(l.n) && p+12 <= uint64(len(l.b)) && binary.LittleEndian.Uint32(l.b[p:]) == 8 {
		return binary.LittleEndian.Uint64(l.b[p+4:])
	}
	return l.slowUint64(i)
}

// The slow paths of the Var readers: the element at the uniform position
// is not there (out of range, or the elements are not uniform).

//go:noinline
func (l List) slowUint8(i int) uint8 {
	if p := l.walkElem(i, 1); p >= 0 {
		return l.b[p]
	}
	return 0
}

//go:noinline
func (l List) slowUint16(i int) uint16 {
	if p := l.walkElem(i, 2); p >= 0 {
		return binary.LittleEndian.Uint16(l.b[p:])
	}
	return 0
}

//go:noinline
func (l List) slowUint32(i int) uint32 {
	if p := l.walkElem(i, 4); p >= 0 {
		return binary.LittleEndian.Uint32(l.b[p:])
	}
	return 0
}

//go:noinline
func (l List) slowUint64(i int) uint64 {
	if p := l.walkElem(i, 8); p >= 0 {
		return binary.LittleEndian.Uint64(l.b[p:])
	}
	return 0
}

// varElem returns the absolute position of the body of element i of a
// variable-element list of w-byte elements, or -1. The fast path assumes
// uniform elements and checks the size word where element i would be.
func (l List) varElem(i, w int) int {
	if uint(i) >= uint(l.n) || uint(w) > uint(len(l.b)) {
		return -1
	}
	stride := uint64(ElementHeaderSize + w)
	p := uint64(l.start) + uint64(i)*stride
	if p+stride <= uint64(len(l.b)) && binary.LittleEndian.Uint32(l.b[p:]) == uint32(w) {
		return int(p) + ElementHeaderSize
	}
	return l.walkElem(i, w)
}

// walkElem is varElem for lists whose elements are not uniform: it walks the
// sizes of the i elements before element i. It returns -1 when i is out of
// range.
//
//go:noinline
func (l List) walkElem(i, w int) int {
	if uint(i) >= uint(l.n) || l.b == nil {
		return -1
	}
	p := uint64(l.start)
	end := uint64(len(l.b))
	for k := 0; ; k++ {
		if p+ElementHeaderSize > end {
			return -1
		}
		size := uint64(binary.LittleEndian.Uint32(l.b[p:]))
		body := p + ElementHeaderSize
		if body+size > end {
			return -1
		}
		if k == i {
			if size != uint64(w) {
				return -1
			}
			return int(body)
		}
		p = body + size
	}
}

// VarFits reports whether the list's bytes could hold Len() elements of at
// least minElem bytes each after their size words: a cheap upper bound for
// sizing a decode before walking the list. It is false for a count that
// the bytes present cannot back, so a caller that preallocates Len()
// elements only after VarFits allocates in proportion to bytes received.
func (l List) VarFits(minElem int) bool {
	if l.b == nil || minElem < 0 {
		return l.n == 0
	}
	// Taken whole, in 64 bits, the product cannot wrap to a size that
	// fits (a hostile count times a large minElem passes 64 bits).
	hi, need := bits.Mul64(uint64(l.n), uint64(minElem)+ElementHeaderSize)
	return hi == 0 && need <= uint64(len(l.b)-l.start)
}

// VarListOf returns a view of b as the body of a variable-element list
// ([u32 size][size bytes] elements back to back, no slot): how the element
// bytes of a nested list (list<list<T>>) are laid out. Len is the number of
// whole elements b holds, counted by walking them; ok is false when bytes
// are left over after the last whole element. An empty b gives the zero
// (null, empty) List. The List aliases b.
func VarListOf(b []byte) (l List, ok bool) {
	if len(b) == 0 {
		return List{}, true
	}
	n := 0
	p := uint64(0)
	end := uint64(len(b))
	for p+ElementHeaderSize <= end {
		next := p + ElementHeaderSize + uint64(binary.LittleEndian.Uint32(b[p:]))
		if next > end {
			break
		}
		p = next
		n++
	}
	return List{b: b, start: 0, n: n}, p == end
}

// Uint8 returns the current element as a 1-byte value, or 0 when it is not
// 1 byte long.
func (it *ListIter) Uint8() uint8 {
	if len(it.cur) != 1 {
		return 0
	}
	return it.cur[0]
}

// Uint16 returns the current element as a 2-byte little-endian value, or 0
// when it is not 2 bytes long.
func (it *ListIter) Uint16() uint16 {
	if len(it.cur) != 2 {
		return 0
	}
	return binary.LittleEndian.Uint16(it.cur)
}

// Uint32 returns the current element as a 4-byte little-endian value, or 0
// when it is not 4 bytes long.
func (it *ListIter) Uint32() uint32 {
	if len(it.cur) != 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(it.cur)
}

// Uint64 returns the current element as an 8-byte little-endian value, or 0
// when it is not 8 bytes long.
func (it *ListIter) Uint64() uint64 {
	if len(it.cur) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(it.cur)
}

// Fixed returns the current element when it is exactly w bytes long, else
// nil. The result aliases the message.
func (it *ListIter) Fixed(w int) []byte {
	if len(it.cur) != w {
		return nil
	}
	return it.cur
}

// AppendUint8Element appends one element of a variable-element list holding
// v: 01000000 then v.
func AppendUint8Element(dst []byte, v uint8) []byte {
	return append(dst, 1, 0, 0, 0, v)
}

// AppendUint16Element appends one element holding v little-endian: size
// 2, then 2 bytes.
func AppendUint16Element(dst []byte, v uint16) []byte {
	return binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint32(dst, 2), v)
}

// AppendUint32Element appends one element holding v little-endian: size
// 4, then 4 bytes.
func AppendUint32Element(dst []byte, v uint32) []byte {
	return binary.LittleEndian.AppendUint64(dst, 4|uint64(v)<<32)
}

// AppendUint64Element appends one element holding v little-endian: size
// 8, then 8 bytes.
func AppendUint64Element(dst []byte, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(dst, 8), v)
}

// AppendBytesElement appends one element holding p: its size, then p. The
// size word has 32 bits: it panics with an error that wraps [ErrBuilder],
// appending nothing, when p is 4 GiB or more.
func AppendBytesElement(dst []byte, p []byte) []byte {
	if uint64(len(p)) > math.MaxUint32 {
		panic(errElementTooLarge)
	}
	return append(binary.LittleEndian.AppendUint32(dst, uint32(len(p))), p...)
}

// AppendTextElement appends one element holding s: its size, then s. As
// [AppendBytesElement], it panics when s is 4 GiB or more.
func AppendTextElement(dst []byte, s string) []byte {
	if uint64(len(s)) > math.MaxUint32 {
		panic(errElementTooLarge)
	}
	return append(binary.LittleEndian.AppendUint32(dst, uint32(len(s))), s...)
}

// StartElement appends the size word of an element whose bytes the caller
// appends next, and returns dst and the position of the element's first
// byte, for [FinishElement]. Nested lists use it: the element of a
// list<list<T>> is itself a run of elements.
//
//	dst, at := codec.StartElement(dst)
//	for _, v := range inner {
//		dst = codec.AppendUint16Element(dst, v)
//	}
//	codec.FinishElement(dst, at)
func StartElement(dst []byte) ([]byte, int) {
	dst = append(dst, 0, 0, 0, 0)
	return dst, len(dst)
}

// FinishElement writes the size of the element started at at (len(dst) -
// at) into its size word. dst must be the slice StartElement returned,
// appended to. The size word has 32 bits: it panics with an error that
// wraps [ErrBuilder] when the element is 4 GiB or more.
func FinishElement(dst []byte, at int) {
	if at < ElementHeaderSize || at > len(dst) {
		return
	}
	if uint64(len(dst)-at) > math.MaxUint32 {
		panic(errElementTooLarge)
	}
	binary.LittleEndian.PutUint32(dst[at-ElementHeaderSize:], uint32(len(dst)-at))
}

// AddUint8Element appends one element holding v to a variable-element list
// (StartList(0)): what the schema compiler writes for list<u8>, list<i8>
// and list<bool>.
func (l *ListBuilder) AddUint8Element(v uint8) {
	if l.check(0) {
		l.b.buf = AppendUint8Element(l.b.buf, v)
		l.count++
	}
}

// AddUint16Element appends one 2-byte element to a variable-element list.
func (l *ListBuilder) AddUint16Element(v uint16) {
	if l.check(0) {
		l.b.buf = AppendUint16Element(l.b.buf, v)
		l.count++
	}
}

// AddUint32Element appends one 4-byte element to a variable-element list.
func (l *ListBuilder) AddUint32Element(v uint32) {
	if l.check(0) {
		l.b.buf = AppendUint32Element(l.b.buf, v)
		l.count++
	}
}

// AddUint64Element appends one 8-byte element to a variable-element list.
func (l *ListBuilder) AddUint64Element(v uint64) {
	if l.check(0) {
		l.b.buf = AppendUint64Element(l.b.buf, v)
		l.count++
	}
}

// AddTextElement appends one element holding s to a variable-element list.
// s is copied.
func (l *ListBuilder) AddTextElement(s string) {
	if l.check(0) {
		l.b.buf = AppendTextElement(l.b.buf, s)
		l.count++
	}
}
