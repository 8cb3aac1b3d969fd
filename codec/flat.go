package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// AppendFlat starts a version-1 message whose only object is its root: a
// fixed section of size bytes right after the header, followed by tails
// bytes of text and bytes values. It appends the header (with its final
// size) and the zeroed fixed section, growing dst once for the whole
// message, and returns the extended buffer and the absolute position of the
// fixed section in it. The caller then stores the fields in place and
// appends the values, in field order, with [AppendTail] and
// [AppendTailBytes]; their lengths must add up to tails.
//
// This is the layout [Builder] writes for a record with no nested objects
// and no lists whose fields are set in offset order, so generated code uses
// it to skip the builder's bookkeeping.
//
// A message holds at most 4 GiB - 1 bytes (its size field has 32 bits).
// AppendFlat has no error to return: given a size and tails that make a
// larger message it panics, before appending anything, with an error
// that wraps [ErrBuilder].
func AppendFlat(dst []byte, size, tails int) ([]byte, int) {
	base := len(dst)
	total := HeaderSize + size + tails
	if int64(total) > math.MaxUint32 {
		panic(errFlatTooLarge)
	}
	if cap(dst)-base < total {
		// Grows to base+total, as append(dst[:cap(dst)], make(...)...)
		// would, without copying the bytes past len(dst).
		dst = append(dst, make([]byte, total)...)
	}
	dst = dst[:base+HeaderSize+size]
	h := dst[base:]
	binary.LittleEndian.PutUint64(h, magicWord|uint64(Version1)<<32)
	binary.LittleEndian.PutUint64(h[offRoot:], HeaderSize|uint64(total)<<32)
	clear(h[HeaderSize:])
	return dst, base + HeaderSize
}

// AppendTail appends s as the value of the text slot at absolute position
// slot of dst and points the slot at it. An empty s appends nothing: set
// once, it leaves the slot {0, 0}.
//
// A slot's offset and length have 32 bits: when s is 4 GiB or more, or
// would start 4 GiB or more past the slot (never so in a message
// [AppendFlat] accepted, with tails that add up), AppendTail panics,
// before appending anything, with an error that wraps [ErrBuilder].
//
// Called again for the same slot, it gives what [ObjectBuilder.SetText]
// gives (docs/wire.md §3): every non-empty value stays in the message, and the
// slot points at the last one appended with the length of the last one
// given, so "abc" then "" reads as an empty, non-null value.
func AppendTail(dst []byte, slot int, s string) []byte {
	if len(s) == 0 {
		binary.LittleEndian.PutUint32(dst[slot+4:], 0)
		return dst
	}
	pos := len(dst)
	if uint64(uint(pos-slot)|uint(len(s))) > math.MaxUint32 {
		panic(errTailTooLarge)
	}
	dst = append(dst, s...)
	binary.LittleEndian.PutUint64(dst[slot:], uint64(uint32(pos-slot))|uint64(uint32(len(s)))<<32)
	return dst
}

// AppendTailBytes is [AppendTail] for a bytes value.
func AppendTailBytes(dst []byte, slot int, p []byte) []byte {
	return AppendTail(dst, slot, unsafe.String(unsafe.SliceData(p), len(p)))
}

// The values AppendFlat and AppendTail panic with. They are variables, not
// errors built with the sizes, so that the two stay small enough to be
// inlined.
var (
	errFlatTooLarge = fmt.Errorf("%w: AppendFlat of a message of 4 GiB or more (its size field has 32 bits)", ErrBuilder)
	errTailTooLarge = fmt.Errorf("%w: AppendTail of a value of 4 GiB or more, or 4 GiB or more past its slot (a slot's offset and length have 32 bits)", ErrBuilder)
	// Those of the other helpers of generated code (generated.go,
	// varlist.go).
	errMessageTooLarge = fmt.Errorf("%w: PutHeader of a message of 4 GiB or more (its size field has 32 bits)", ErrBuilder)
	errSlotTooFar      = fmt.Errorf("%w: an object or list 2 GiB or more from its slot (a slot's offset has 32 bits, signed), or a list of 2^32 elements or more", ErrBuilder)
	errElementTooLarge = fmt.Errorf("%w: a list element of 4 GiB or more (its size word has 32 bits)", ErrBuilder)
)
