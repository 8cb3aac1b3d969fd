package codec

import "encoding/binary"

// GeneratedVersion2 is referenced by every file that `zapcodec gen` writes
// ("const _ = codec.GeneratedVersion2"). It names the version of the API that
// generated records rely on (Builder, ObjectBuilder, ListBuilder, Parse,
// Object, List and the variable-element list helpers); a codec that drops or
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
// n exactly: generated decoders and views check the bounds of a record's
// fixed section once this way ("if f := o.Fixed(44); len(f) == 44") and
// then load its fields at constant offsets, which need no check each. The
// result aliases the message.
func (o Object) Fixed(n int) []byte {
	if n < 0 || o.b == nil || uint(o.pos)+uint(n) > uint(len(o.b)) {
		return nil
	}
	return o.b[o.pos : o.pos+n : o.pos+n]
}

// BytesIn is for generated code: [Object.Bytes] for the slot at off when
// f is o's fixed section as [Object.Fixed] returned it and the slot lies
// inside it, which spares the slot's own bounds check (the value's bounds
// are still checked). Given any other f it reads the wrong slot, or nil
// when off+8 is past len(f), but never panics.
func (o Object) BytesIn(f []byte, off int) []byte {
	if uint(off)+TextSlotSize > uint(len(f)) {
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
