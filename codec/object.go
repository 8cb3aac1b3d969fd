package codec

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Object is a view of one object's fixed section inside a message. The zero
// Object is null. Every accessor is total: a field that does not fit inside
// the message reads as the zero value (0, false, "", nil, a null Object or
// an empty List); nothing panics on any input.
//
// Offsets are byte offsets from the start of the object's fixed section.
// An Object aliases the message it was read from and is valid only while
// those bytes are unchanged.
type Object struct {
	b   []byte // the whole message
	pos int    // absolute position of the fixed section; 0 for null
}

// IsNull reports whether the object is null: a zero slot, a pointer into the
// header or at or past the end of the message (a root at exactly the end is
// the exception: see [Message.Root]).
func (o Object) IsNull() bool { return o.b == nil }

// Pos returns the position of the object's fixed section from the start
// of its message (the buffer given to [Parse]); 0 for a null Object. With
// it a caller can say where in the message a field it rejects lies.
func (o Object) Pos() int { return o.pos }

// at returns the absolute position of the n bytes at off, or -1 when they do
// not lie inside the message.
func (o Object) at(off, n int) int {
	if uint(off) > uint(len(o.b)) || uint(o.pos)+uint(off)+uint(n) > uint(len(o.b)) {
		return -1
	}
	return o.pos + off
}

// Bool reads the byte at off; any non-zero value is true.
func (o Object) Bool(off int) bool { return o.Uint8(off) != 0 }

// Uint8 reads the byte at off.
func (o Object) Uint8(off int) uint8 {
	p := o.at(off, 1)
	if p < 0 {
		return 0
	}
	return o.b[p]
}

// Uint16 reads the little-endian uint16 at off.
func (o Object) Uint16(off int) uint16 {
	p := o.at(off, 2)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint16(o.b[p:])
}

// Uint32 reads the little-endian uint32 at off.
func (o Object) Uint32(off int) uint32 {
	p := o.at(off, 4)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint32(o.b[p:])
}

// Uint64 reads the little-endian uint64 at off.
func (o Object) Uint64(off int) uint64 {
	p := o.at(off, 8)
	if p < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(o.b[p:])
}

// Int8 reads the byte at off as a two's-complement int8.
func (o Object) Int8(off int) int8 { return int8(o.Uint8(off)) }

// Int16 reads the little-endian int16 at off.
func (o Object) Int16(off int) int16 { return int16(o.Uint16(off)) }

// Int32 reads the little-endian int32 at off.
func (o Object) Int32(off int) int32 { return int32(o.Uint32(off)) }

// Int64 reads the little-endian int64 at off.
func (o Object) Int64(off int) int64 { return int64(o.Uint64(off)) }

// Float32 reads the IEEE-754 float32 at off.
func (o Object) Float32(off int) float32 { return math.Float32frombits(o.Uint32(off)) }

// Float64 reads the IEEE-754 float64 at off.
func (o Object) Float64(off int) float64 { return math.Float64frombits(o.Uint64(off)) }

// Text reads the text slot at off (8 bytes: forward relative offset,
// length). A null slot, or one whose value does not lie inside the message,
// reads as "". The result aliases the message without a copy: it is valid
// only while the message bytes are unchanged; copy it (strings.Clone) to
// keep it beyond that.
func (o Object) Text(off int) string {
	b := o.Bytes(off)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Bytes reads the bytes slot at off (8 bytes: forward relative offset,
// length). A null slot (offset 0, which is how an empty value is normally
// written), or one whose value does not lie inside the message, reads as
// nil. A non-null slot of length 0 (a value set, then set again to empty:
// docs/wire.md §3) reads as an empty, non-nil slice, as the canonical reader
// returns it. The result aliases the message and is valid only while the
// message bytes are unchanged; copy it to keep it.
func (o Object) Bytes(off int) []byte {
	p := o.at(off, TextSlotSize)
	if p < 0 {
		return nil
	}
	rel := binary.LittleEndian.Uint32(o.b[p:])
	n := binary.LittleEndian.Uint32(o.b[p+4:])
	if rel == 0 {
		return nil
	}
	start := uint64(p) + uint64(rel)
	end := start + uint64(n)
	if start < HeaderSize || end > uint64(len(o.b)) {
		return nil
	}
	return o.b[start:end:end]
}

// CheckedBytes reads the bytes slot at off as [Object.Bytes] does, but
// reports what Bytes reads as nil because it is malformed: a slot that
// does not lie inside the message, or a value that starts inside the
// header or ends past the message, is a *[ParseError] with [ErrOutOfBounds]
// and the slot's position (from the start of the message, o.Pos()+off)
// as its Offset, held to 0..MaxInt: a slot before the start of the
// message (a negative off larger than o.Pos()) is reported at 0, one past
// MaxInt at MaxInt.
// A null slot (offset 0) gives nil and no error, as does a null Object; a
// non-null slot of length 0 gives an empty, non-nil slice. The result
// aliases the message like Bytes's. It allocates only when it fails.
func (o Object) CheckedBytes(off int) ([]byte, error) {
	p := o.at(off, BytesSlotSize)
	if p < 0 {
		if o.b == nil {
			return nil, nil
		}
		// The slot's position, o.pos+off, saturates at 0 and MaxInt:
		// an off near MaxInt wrapped it to a negative offset, and a
		// negative off puts it before the message.
		at := math.MaxInt
		switch {
		case off < -o.pos:
			at = 0
		case off <= math.MaxInt-o.pos:
			at = o.pos + off
		}
		return nil, parseError(ErrOutOfBounds, at)
	}
	rel := binary.LittleEndian.Uint32(o.b[p:])
	if rel == 0 {
		return nil, nil
	}
	start := uint64(p) + uint64(rel)
	end := start + uint64(binary.LittleEndian.Uint32(o.b[p+4:]))
	if start < HeaderSize || end > uint64(len(o.b)) {
		return nil, parseError(ErrOutOfBounds, p)
	}
	return o.b[start:end:end], nil
}

// BytesFixed returns the n bytes stored inline at off (a bytes_fixed[n]
// field), or nil when they do not lie inside the message. The result aliases
// the message and is valid only while the message bytes are unchanged.
func (o Object) BytesFixed(off, n int) []byte {
	if n < 0 {
		return nil
	}
	p := o.at(off, n)
	if p < 0 {
		return nil
	}
	return o.b[p : p+n : p+n]
}

// Object reads the nested-object slot at off (4 bytes: signed relative
// offset). A zero slot, or a target inside the header or past the end of the
// message, gives a null Object.
func (o Object) Object(off int) Object {
	p := o.at(off, ObjectSlotSize)
	if p < 0 {
		return Object{}
	}
	rel := int32(binary.LittleEndian.Uint32(o.b[p:]))
	if rel == 0 {
		return Object{}
	}
	// A target before the start of the message converts to a position
	// past its end.
	return objectAt(o.b, uint64(int64(p)+int64(rel)))
}

// List reads the list slot at off (8 bytes: signed relative offset, element
// count). A slot of offset 0 (whatever its count, as the canonical reader
// reads it: docs/wire.md §3), a count larger than the message, or a start
// inside the header or past the end gives a null, empty List. Element reads check their own
// bounds, so a count that overstates the elements present is harmless.
func (o Object) List(off int) List {
	p := o.at(off, ListSlotSize)
	if p < 0 {
		return List{}
	}
	rel := int32(binary.LittleEndian.Uint32(o.b[p:]))
	n := binary.LittleEndian.Uint32(o.b[p+4:])
	if rel == 0 || uint64(n) > uint64(len(o.b)) {
		return List{}
	}
	start := int64(p) + int64(rel)
	if start < HeaderSize || start >= int64(len(o.b)) {
		return List{}
	}
	return List{b: o.b, start: int(start), n: int(n)}
}
