package codec

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// GeneratedVersion2 is referenced by every file that `zapcodec gen` writes
// ("const _ = codec.GeneratedVersion2"). It names the version of the API that
// generated records rely on (Parse, Object, List, the variable-element list
// helpers and the functions for generated code in this file); a codec that drops or
// changes that API, or the wire form generated code must write, drops this
// constant too, so a stale pair of generated code and runtime fails to build
// instead of misbehaving.
//
// Version 2: every list<T> is a variable-element list, as the canonical
// schema compiler writes it. Version 1 code wrote lists of scalars flat;
// regenerate it (zapcodec gen) to build against this codec.
const GeneratedVersion2 = 2

// Fixed is for generated code. It returns the first n bytes of o's fixed
// section, or nil when they do not all lie inside the message (o is null,
// or the object runs past the end, or n < 0). A non-nil result has length
// n exactly: generated decoders check the bounds of a record's fixed
// section once this way ("if f := o.Fixed(44); len(f) == 44") and
// then load its fields at constant offsets, which need no check each. The
// result aliases the message.
func (o Object) Fixed(n int) []byte {
	if n < 0 || o.b == nil || uint(o.pos)+uint(n) > uint(len(o.b)) {
		return nil
	}
	return o.b[o.pos : o.pos+n : o.pos+n]
}

// MessageSize is for generated code: the length of the message o lies in,
// header included ([Message.Size]), or 0 for a null Object. A generated
// record's DecodeView bounds what it allocates by it, as DecodeZAP does by
// the length of its input.
func (o Object) MessageSize() int { return len(o.b) }

// BytesIn is for generated code: [Object.Bytes] for the slot at off when
// f is o's fixed section as [Object.Fixed] returned it and the slot lies
// inside it, which spares the slot's own bounds check (the value's bounds
// are still checked). Given any other f it reads the wrong slot, or nil
// when off is negative or off+8 is past len(f), but never panics.
func (o Object) BytesIn(f []byte, off int) []byte {
	// Not uint(off)+8 > len(f): an off of -8 to -1 wraps to 0 to 7.
	if off < 0 || off > len(f)-TextSlotSize {
		return nil
	}
	rel := binary.LittleEndian.Uint32(f[off:])
	start := uint64(o.pos) + uint64(off) + uint64(rel)
	end := start + uint64(binary.LittleEndian.Uint32(f[off+4:]))
	if rel == 0 || start < HeaderSize || end > uint64(len(o.b)) {
		return nil
	}
	return o.b[start:end:end]
}

// The functions below write a message the way [Builder] lays it out, for
// generated records that write it without a Builder: AppendHeader, then
// the root object (AppendObject) with its fields stored in place, its
// nested objects and lists (AppendListStart, the element appenders) in
// field order with their slots pointed at them (PutObjectSlot,
// PutListSlot), its text and bytes values ([AppendTail]); then PutHeader.
// Positions are absolute (indices into dst); base is where the message
// starts.

// AppendHeader is for generated code: it appends the 16 bytes of a message
// header, zeroed, to dst; [PutHeader] fills them in once the message is
// written. The message starts at the len(dst) given.
func AppendHeader(dst []byte) []byte { return append(dst, zeroHeader[:]...) }

// PutHeader is for generated code: it writes the header of the version-1
// message that starts at base and ends at len(dst), whose root object is
// at position root. A message holds at most 4 GiB - 1 bytes: PutHeader
// panics with an error that wraps [ErrBuilder], writing nothing, when it
// is longer.
func PutHeader(dst []byte, base, root int) {
	if uint64(len(dst)-base) > math.MaxUint32 {
		panic(errMessageTooLarge)
	}
	h := dst[base : base+HeaderSize]
	binary.LittleEndian.PutUint64(h, magicWord|uint64(Version1)<<32)
	binary.LittleEndian.PutUint64(h[offRoot:], uint64(uint32(root-base))|uint64(uint32(len(dst)-base))<<32)
}

// AppendObject is for generated code: it pads dst with zeros to a multiple
// of 8 from base, appends a zeroed fixed section of size bytes, and
// returns dst and the section's position ([Builder.StartObject]).
func AppendObject(dst []byte, base, size int) ([]byte, int) {
	n := len(dst)
	at := base + align8(n-base)
	if end := at + size; end <= cap(dst) {
		dst = dst[:end]
		clear(dst[n:end])
	} else {
		dst = grow(dst, end-n)
	}
	return dst, at
}

// AppendListStart is for generated code: it pads dst with zeros to a
// multiple of 8 from base, where a list starts (even an empty one, as the
// canonical writer does), and returns dst and that position.
func AppendListStart(dst []byte, base int) ([]byte, int) {
	n := len(dst) - base
	if pad := align8(n) - n; pad > 0 {
		dst = append(dst, zeroHeader[:pad]...)
	}
	return dst, len(dst)
}

// PutObjectSlot is for generated code: it points the nested-object slot at
// position slot to the object at position at. The slot holds a signed
// 32-bit offset: PutObjectSlot panics with an error that wraps
// [ErrBuilder], writing nothing, when at is 2 GiB or more away (a message
// of 2 GiB or more, which [Builder] refuses too).
func PutObjectSlot(dst []byte, slot, at int) {
	if rel := at - slot; int64(rel) != int64(int32(rel)) {
		panic(errSlotTooFar)
	}
	binary.LittleEndian.PutUint32(dst[slot:], uint32(int32(at-slot)))
}

// PutListSlot is for generated code: it points the list slot at position
// slot to the count elements starting at position at. An empty list leaves
// the slot {0, 0}, as [ObjectBuilder.SetList] does. The slot holds a
// signed 32-bit offset and a 32-bit count: PutListSlot panics with an
// error that wraps [ErrBuilder], writing nothing, when at is 2 GiB or more
// away or count does not fit.
func PutListSlot(dst []byte, slot, at, count int) {
	if count == 0 {
		return
	}
	if rel := at - slot; int64(rel) != int64(int32(rel)) || uint64(count) > math.MaxUint32 {
		panic(errSlotTooFar)
	}
	binary.LittleEndian.PutUint64(dst[slot:], uint64(uint32(int32(at-slot)))|uint64(uint32(count))<<32)
}

// SameText is for generated code: it reports whether p holds the bytes of
// s, as string(p) == s does, comparing a value of up to 16 bytes as two
// machine words, inline, instead of calling the runtime. Generated
// decoders use it to keep a record's string when the message holds the
// same text.
func SameText(p []byte, s string) bool {
	n := len(p)
	if n != len(s) {
		return false
	}
	if n < 8 || n > 16 {
		return string(p) == s
	}
	q := unsafe.Slice(unsafe.StringData(s), n)
	return binary.LittleEndian.Uint64(p) == binary.LittleEndian.Uint64(q) &&
		binary.LittleEndian.Uint64(p[n-8:]) == binary.LittleEndian.Uint64(q[n-8:])
}

// RootOf is for generated code: [Parse] of b and then [Message.Root], for
// the common case only, small enough to be inlined so that a decoder's or
// a view's fast path makes no call. When b starts with a well-formed
// message header and the root offset lies inside the message (at least
// [HeaderSize] and less than the size field), it returns the root object
// (which aliases b) and true. Otherwise it returns the null object and
// false, and the caller calls Parse, which says what is wrong or gives the
// root of a message whose root is null or of zero size.
func RootOf(b []byte) (Object, bool) {
	if len(b) >= HeaderSize {
		// Magic and version as one word (the flags, bytes 6 and 7, are
		// masked off): it is magicWord plus 1<<32 for version 1 and plus
		// 2<<32 for version 2, so subtracting the first leaves 0 or 1<<32.
		h := binary.LittleEndian.Uint64(b) &^ (0xFFFF << 48)
		rs := binary.LittleEndian.Uint64(b[offRoot:])
		root, size := uint64(uint32(rs)), rs>>32
		if (h-(magicWord|uint64(Version1)<<32))&^(1<<32) == 0 &&
			root >= HeaderSize && root < size && size <= uint64(len(b)) {
			return Object{b: b[:size], pos: int(root)}, true
		}
	}
	return Object{}, false
}

// RootOf's test of the version assumes the two versions are consecutive.
var _ = [1]struct{}{}[Version2-Version1-1]

// ParseFixed is for generated code (the code generated before [RootOf]
// took its place): [Parse] of b, then the root object
// and, when its first n bytes (n > 0) lie inside the message, those bytes
// as [Object.Fixed] would give them (else nil), in one call that checks
// the header and the root's bounds together. A malformed header gives the
// error Parse gives.
func ParseFixed(b []byte, n int) (Object, []byte, error) {
	if len(b) >= HeaderSize {
		h := binary.LittleEndian.Uint64(b) // magic, version, flags
		rs := binary.LittleEndian.Uint64(b[offRoot:])
		root, size := uint64(uint32(rs)), rs>>32
		if uint32(h) == magic32 && uint16(h>>32)-Version1 <= Version2-Version1 &&
			size >= HeaderSize && size <= uint64(len(b)) {
			if end := root + uint64(n); n > 0 && root >= HeaderSize && end <= size {
				return Object{b: b[:size], pos: int(root)}, b[root:end:end], nil
			}
			return Message{b: b[:size]}.Root(), nil, nil
		}
	}
	_, err := Parse(b)
	return Object{}, nil, err
}
