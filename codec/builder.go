package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// inlineTails is how many deferred text/bytes values a Builder records
// without allocating. Beyond that the record spills into a slice that the
// Builder keeps across Resets, so a warm Builder still does not allocate.
const inlineTails = 8

// Builder writes one ZAP message into a buffer the caller owns. It appends;
// it never copies a value into side storage: text and bytes values are
// recorded by reference when set and written once, when their object
// finishes, exactly where the canonical runtime puts them (docs/wire.md §3).
//
//	var b codec.Builder
//	b.Reset(buf[:0])
//	o := b.StartObject(24)
//	o.SetUint32(0, 7)
//	o.SetText(8, "zap")
//	b.SetRoot(o.Finish())
//	buf = b.Finish()
//
// Building allocates nothing once the buffer has the capacity. A Builder is
// not safe for concurrent use; the zero value is ready after [Builder.Reset].
// Object and list builders it hands out are small values that refer back to
// it and are valid until the next Reset (or Release): using one after that
// is misuse, which writes nothing.
type Builder struct {
	buf []byte
	// lists counts the StartList and ListBuilder.Finish calls: it is odd
	// while a list is open, and then it is that list's id. Reset makes it
	// even and larger, so that no list from before answers to it. It has
	// 64 bits, as gen has, so that it never wraps round to the id of a
	// list or the gen of an object from before: 32 bits wrapped after 2^31
	// (2^32) Resets, hours of a pooled Builder's work.
	lists uint64
	// gen counts the Resets and Releases; an ObjectBuilder keeps the gen
	// it was started in, so that one from before is refused.
	gen     uint64
	base    int // where the message starts in buf
	version uint16
	flags   uint16
	root    Ref
	ntails  int
	pending uint64 // bit slot/8%64 set: a pending value may target that slot
	tails   [inlineTails]tail
	spill   []tail // tails past inlineTails; reused across Resets
	err     error
	bad     misuse // the first misuse found by a call that records it inline
}

// misuse records the first misuse found by a call small enough to inline,
// which cannot format an error; Err turns it into one.
type misuse struct {
	what misuseKind
	// misField: the field at off+n outside an object of size bytes;
	// misElement: an element of n bytes (0: variable, -1: an empty flat
	// element) in a list of size. size is an int32, as in ObjectBuilder
	// and ListBuilder, so that recording it costs the inliner no
	// conversion.
	off, n int
	size   int32
}

type misuseKind uint8

const (
	misNone      misuseKind = iota
	misField                // a setter outside its object's fixed section
	misElement              // an element that does not suit its list
	misEnd                  // EndElement without BeginElement
	misOpen                 // Finish with an element begun and not ended
	misStartList            // StartList of element size n: n < 0, or a list is open
	misBlob                 // WriteBytes while a list is open
	misStale                // ListBuilder.Finish of a list finished before, or before Reset
)

// tail is a text or bytes value waiting for its object to finish. Its
// positions are counted from the start of the message, not of buf, so
// they fit in 32 bits wherever the message starts (Finish reports a
// message of 2 GiB or more as misuse).
type tail struct {
	owner int32 // position of the owning object in the message
	// slot is the position of the slot in the message, or its complement
	// (^slot, negative) when the slot was set to an empty value after this
	// one: the value is still written, and the slot gets length 0.
	slot int32
	data string
}

// Ref is the position of a finished object in its message, for
// [ObjectBuilder.SetObject] and [Builder.SetRoot]. The zero Ref is null.
type Ref int32

// ListRef is a finished list, for [ObjectBuilder.SetList]. The zero ListRef
// is an empty list.
type ListRef struct {
	pos   int32
	count uint32
}

// Len returns the number of elements in the list.
func (r ListRef) Len() int { return int(r.count) }

var zeroHeader [HeaderSize]byte

// magicWord is [Magic] read as a little-endian uint32.
const magicWord = 'Z' | 'A'<<8 | 'P'<<16

// Reset starts a new message, appended to dst after its existing bytes: all
// offsets and alignment inside the message are measured from len(dst). The
// Builder takes dst over until [Builder.Finish]; pass dst[:0] to reuse a
// buffer. The version is reset to 1 and the flags to 0.
func (b *Builder) Reset(dst []byte) {
	b.base = len(dst)
	if cap(dst)-len(dst) >= HeaderSize {
		b.buf = dst[:len(dst)+HeaderSize] // Finish writes every header byte
	} else {
		b.buf = append(dst, zeroHeader[:]...)
	}
	b.version = Version1
	b.flags = 0
	b.root = 0
	b.ntails = 0
	b.pending = 0
	b.spill = b.spill[:0]
	b.err = nil
	b.bad = misuse{}
	b.lists = b.lists&^1 + 2 // no list open, and none from before answers
	b.gen++
}

// Release drops the Builder's references to its buffer and to the text and
// bytes values it recorded, so that a Builder kept for reuse (in a pool)
// does not keep them alive. It keeps the capacity of its spill record. The
// Builder must be Reset before its next use.
func (b *Builder) Release() {
	b.buf = nil
	b.base = 0
	clear(b.tails[:])
	clear(b.spill[:cap(b.spill)])
	b.spill = b.spill[:0]
	b.ntails = 0
	b.err = nil
	b.lists = b.lists&^1 + 2
	b.gen++
	b.version = 0 // for Finish: not Reset since
}

// SetVersion sets the header version: [Version1] (the default) or
// [Version2]. Any other value is recorded as misuse.
func (b *Builder) SetVersion(v uint16) {
	if v != Version1 && v != Version2 {
		b.fail("version %d", v)
		return
	}
	b.version = v
}

// SetFlags sets the header flags word (flag bits in the low byte, a message
// type in the high byte).
func (b *Builder) SetFlags(f uint16) { b.flags = f }

// SetRoot makes r the root object of the message.
func (b *Builder) SetRoot(r Ref) { b.root = r }

// Len returns the number of message bytes written so far, header included.
func (b *Builder) Len() int { return len(b.buf) - b.base }

// Err returns the first misuse recorded since Reset, wrapping [ErrBuilder],
// or nil. A misused call writes nothing.
func (b *Builder) Err() error {
	if b.err == nil {
		switch m := b.bad; m.what {
		case misField:
			if m.off >= 0 && m.off+m.n <= int(m.size) { // it fits: the object is stale
				b.err = fmt.Errorf("%w: %s", ErrBuilder, staleObject)
				break
			}
			b.err = fmt.Errorf("%w: field at %d+%d outside object of %d bytes", ErrBuilder, m.off, m.n, m.size)
		case misElement:
			if m.n < 0 && m.size == 0 {
				b.err = fmt.Errorf("%w: AddElement of an empty element in a variable-element list", ErrBuilder)
				break
			}
			if m.n == int(m.size) { // the width suits: the list is no longer open
				b.err = fmt.Errorf("%w: element added to a %s", ErrBuilder, staleList)
				break
			}
			b.err = fmt.Errorf("%w: %d-byte element in a list of %d-byte elements", ErrBuilder, max(m.n, 0), m.size)
		case misEnd:
			b.err = fmt.Errorf("%w: EndElement without BeginElement, after the list's Finish or Reset, or after something was written since BeginElement", ErrBuilder)
		case misOpen:
			b.err = fmt.Errorf("%w: list finished between BeginElement and EndElement", ErrBuilder)
		case misStartList:
			if m.n >= 0 && m.n <= math.MaxInt32 {
				b.err = fmt.Errorf("%w: StartList while a list is open (finish the list first)", ErrBuilder)
				break
			}
			b.err = fmt.Errorf("%w: list element size %d", ErrBuilder, m.n)
		case misBlob:
			b.err = fmt.Errorf("%w: WriteBytes while a list is open (finish the list first)", ErrBuilder)
		case misStale:
			b.err = fmt.Errorf("%w: %s", ErrBuilder, staleList)
		}
	}
	return b.err
}

// staleObject describes an ObjectBuilder refused because it was started
// before Reset.
const staleObject = "object builder used after Reset"

// staleList describes a ListBuilder refused because it is not the open list.
const staleList = "list builder used after its Finish or after Reset"

func (b *Builder) fail(format string, args ...any) {
	if b.Err() == nil { // a misuse recorded inline, earlier, comes first
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrBuilder}, args...)...)
	}
}

// grow returns buf extended by n zero bytes.
func grow(buf []byte, n int) []byte {
	l := len(buf)
	if cap(buf)-l < n {
		buf = append(buf[:cap(buf)], make([]byte, l+n-cap(buf))...)
	}
	buf = buf[:l+n]
	clear(buf[l:])
	return buf
}

// pad8 appends zero bytes up to the next multiple of 8 from the message start.
func (b *Builder) pad8() {
	if pad := (b.base - len(b.buf)) & (Alignment - 1); pad != 0 {
		b.buf = append(b.buf, zeroHeader[:pad]...)
	}
}

// StartObject pads to 8 and reserves a zero-filled fixed section of size
// bytes. Set its fields through the returned ObjectBuilder, then call
// [ObjectBuilder.Finish]. Other objects and lists may be built while it is
// open; its text and bytes values land after them. StartObject while a list
// is open is misuse (the list's elements must stay together): it returns an
// ObjectBuilder that writes nothing. So is an object that would start 4 GiB
// or more into the buffer given to Reset (its bytes before the message
// included).
func (b *Builder) StartObject(size int) ObjectBuilder {
	n := len(b.buf)
	at := b.base + align8(n-b.base)
	// One test for both limits: size < 2^31 and at < 2^32 (at>>1 < 2^31).
	if uint(size)|uint(at)>>1 > math.MaxInt32 || b.lists&1 != 0 {
		return b.badObject(size, at)
	}
	if end := at + size; end <= cap(b.buf) {
		b.buf = b.buf[:end]
		clear(b.buf[n:end])
	} else {
		b.buf = grow(b.buf, end-n)
	}
	return ObjectBuilder{b: b, at: uint32(at), size: int32(size), gen: b.gen}
}

//go:noinline
func (b *Builder) badObject(size, at int) ObjectBuilder {
	switch {
	case b.lists&1 != 0:
		b.fail("StartObject while a list is open (finish the list first)")
	case uint(size) > math.MaxInt32:
		b.fail("object size %d", size)
	default:
		b.fail("object at byte %d of the buffer (objects must start within its first 4 GiB)", at)
	}
	return ObjectBuilder{}
}

// WriteBytes pads to 8 and appends p as a raw blob that no field points to.
// It returns the blob's position. WriteBytes while a list is open is misuse:
// it writes nothing and returns 0.
func (b *Builder) WriteBytes(p []byte) Ref {
	if b.lists&1 != 0 {
		if b.bad.what == misNone {
			b.bad = misuse{what: misBlob}
		}
		return 0
	}
	b.pad8()
	at := len(b.buf) - b.base
	b.buf = append(b.buf, p...)
	return Ref(at)
}

// Finish writes the header (magic, version, flags, root offset, size) and
// returns the buffer given to Reset with the message appended; the message
// is result[len(dst):]. The result aliases that buffer. Values of objects
// that were not finished are not written, a message of 2 GiB or more (the
// Builder's positions have 31 bits) may be wrong, and a Builder that was
// never Reset (or was Released) returns nil; all three are reported by
// [Builder.Err].
func (b *Builder) Finish() []byte {
	// Reset sets the version, Release clears it: 0 is a Builder that
	// was never Reset, even if objects were started in it since.
	if len(b.buf)-b.base < HeaderSize || b.version == 0 {
		b.fail("Finish without Reset")
		return nil
	}
	size := len(b.buf) - b.base
	if b.ntails > 0 || size > math.MaxInt32 {
		b.finishMisuse(size)
	}
	h := b.buf[b.base : b.base+HeaderSize]
	binary.LittleEndian.PutUint64(h, magicWord|uint64(b.version)<<32|uint64(b.flags)<<48)
	binary.LittleEndian.PutUint64(h[offRoot:], uint64(uint32(b.root))|uint64(size)<<32)
	return b.buf
}

//go:noinline
func (b *Builder) finishMisuse(size int) {
	if b.ntails > 0 {
		b.fail("%d text/bytes values of unfinished objects", b.ntails)
	}
	if size > math.MaxInt32 {
		// The size field has 32 bits, but the Builder's positions (Ref,
		// ListRef, the recorded values) and the signed offsets of
		// object and list slots have 31: beyond 2 GiB the message may
		// already be wrong.
		b.fail("message of %d bytes (the Builder writes at most 2 GiB - 1)", size)
	}
}

// tailAt returns the i-th recorded tail.
func (b *Builder) tailAt(i int) *tail {
	if i < inlineTails {
		return &b.tails[i]
	}
	return &b.spill[i-inlineTails]
}

func (b *Builder) addTail(t tail) {
	if b.ntails < inlineTails {
		b.tails[b.ntails] = t
	} else {
		b.spill = append(b.spill, t)
	}
	b.ntails++
}

// ObjectBuilder sets the fields of one object of a [Builder]. It is a small
// value that refers back to its Builder; copies refer to the same object.
// Offsets are from the start of the object's fixed section; a field that
// does not fit inside the section is recorded as misuse ([Builder.Err]) and
// not written. An ObjectBuilder started before [Builder.Reset] (or
// Release) writes nothing after it: its setters record misuse, and its
// Finish too, returning 0.
type ObjectBuilder struct {
	b *Builder
	// at is the absolute position of the fixed section in b.buf, and size
	// its length: 32 bits each (StartObject refuses larger ones), so that
	// gen has 64 and the ObjectBuilder stays three words.
	at   uint32
	size int32
	gen  uint64
}

// fits reports whether the n bytes at off lie inside the fixed section of
// an object of the Builder's current generation: such a section lies
// inside b.buf, which grows only until the next Reset. It records misuse
// without a call, so that every setter stays small enough to inline.
func (o ObjectBuilder) fits(off, n int) bool {
	// n >= 1, so a section it fits in is not empty and o.b is set (the
	// zero ObjectBuilder has size 0).
	if uint(off) <= uint(o.size) && uint(off)+uint(n) <= uint(o.size) && o.gen == o.b.gen {
		return true
	}
	if o.b != nil && o.b.bad.what == misNone {
		o.b.bad = misuse{what: misField, off: off, n: n, size: o.size}
	}
	return false
}

// SetBool writes 1 or 0 at off.
func (o ObjectBuilder) SetBool(off int, v bool) {
	// A bool is stored as 0 or 1: its byte is the value to write. This
	// costs the inliner less than an if, which kept SetBool inlined when
	// fits grew the generation check.
	o.SetUint8(off, *(*uint8)(unsafe.Pointer(&v)))
}

// SetUint8 writes v at off.
func (o ObjectBuilder) SetUint8(off int, v uint8) {
	if o.fits(off, 1) {
		o.b.buf[int(o.at)+off] = v
	}
}

// SetUint16 writes v little-endian at off.
func (o ObjectBuilder) SetUint16(off int, v uint16) {
	if o.fits(off, 2) {
		binary.LittleEndian.PutUint16(o.b.buf[int(o.at)+off:], v)
	}
}

// SetUint32 writes v little-endian at off.
func (o ObjectBuilder) SetUint32(off int, v uint32) {
	if o.fits(off, 4) {
		binary.LittleEndian.PutUint32(o.b.buf[int(o.at)+off:], v)
	}
}

// SetUint64 writes v little-endian at off.
func (o ObjectBuilder) SetUint64(off int, v uint64) {
	if o.fits(off, 8) {
		binary.LittleEndian.PutUint64(o.b.buf[int(o.at)+off:], v)
	}
}

// SetInt8 writes v at off.
func (o ObjectBuilder) SetInt8(off int, v int8) { o.SetUint8(off, uint8(v)) }

// SetInt16 writes v little-endian at off.
func (o ObjectBuilder) SetInt16(off int, v int16) { o.SetUint16(off, uint16(v)) }

// SetInt32 writes v little-endian at off.
func (o ObjectBuilder) SetInt32(off int, v int32) { o.SetUint32(off, uint32(v)) }

// SetInt64 writes v little-endian at off.
func (o ObjectBuilder) SetInt64(off int, v int64) { o.SetUint64(off, uint64(v)) }

// SetFloat32 writes the IEEE-754 bits of v at off.
func (o ObjectBuilder) SetFloat32(off int, v float32) { o.SetUint32(off, math.Float32bits(v)) }

// SetFloat64 writes the IEEE-754 bits of v at off.
func (o ObjectBuilder) SetFloat64(off int, v float64) { o.SetUint64(off, math.Float64bits(v)) }

// SetBytesFixed copies p into the fixed section at off (a bytes_fixed[N]
// field with N = len(p)).
func (o ObjectBuilder) SetBytesFixed(off int, p []byte) {
	if len(p) == 0 {
		return
	}
	if o.fits(off, len(p)) {
		copy(o.b.buf[int(o.at)+off:], p)
	}
}

// SetText sets the text slot at off. s is not copied now: it is written
// when the object finishes. An empty s is not written: set once, it leaves
// the slot {0, 0}.
//
// Setting a slot again follows the canonical builder (docs/wire.md §3): every
// non-empty value set is still written at finish, in set order, and the
// slot ends up pointing at the last one written with the length of the last
// value set. So "abc" then "" reads as an empty (non-null) value, and
// "first" then "second" leaves "first" behind, unreferenced.
func (o ObjectBuilder) SetText(off int, s string) {
	if !o.fits(off, TextSlotSize) {
		return
	}
	slot := int(o.at) + off
	if len(s) == 0 {
		o.b.setEmpty(slot)
		return
	}
	o.b.pending |= pendingBit(slot)
	o.b.addTail(tail{owner: int32(int(o.at) - o.b.base), slot: int32(slot - o.b.base), data: s})
}

// pendingBit is the bit of Builder.pending for the slot at absolute
// position slot.
func pendingBit(slot int) uint64 { return 1 << (uint(slot) / 8 % 64) }

// setEmpty is SetText of an empty value for the slot at absolute position
// slot: it zeroes the slot, and a value set to the slot earlier, still
// pending, will be written with length 0.
func (b *Builder) setEmpty(slot int) {
	binary.LittleEndian.PutUint64(b.buf[slot:], 0)
	if b.pending&pendingBit(slot) != 0 {
		b.markEmpty(int32(slot - b.base))
	}
}

// markEmpty flags the pending values of the slot at position slot of the
// message (docs/wire.md §3).
func (b *Builder) markEmpty(slot int32) {
	for i := range b.ntails {
		if t := b.tailAt(i); t.slot == slot {
			t.slot = ^slot
		}
	}
}

// SetBytes sets the bytes slot at off, as [ObjectBuilder.SetText] does. p
// is not copied now: it is written when the object finishes, so its bytes
// must stay unchanged until then.
func (o ObjectBuilder) SetBytes(off int, p []byte) {
	o.SetText(off, unsafe.String(unsafe.SliceData(p), len(p)))
}

// SetObject points the nested-object slot at off to the finished object r
// (a signed offset: r may lie before or after this object). A zero r
// makes the slot null, also when it was set before.
func (o ObjectBuilder) SetObject(off int, r Ref) {
	if !o.fits(off, ObjectSlotSize) {
		return
	}
	var rel int64 // 0: null
	if r != 0 {
		rel = int64(o.b.base) + int64(r) - int64(int(o.at)+off)
	}
	binary.LittleEndian.PutUint32(o.b.buf[int(o.at)+off:], uint32(int32(rel)))
}

// SetList points the list slot at off to the finished list l. An empty list
// is written as {0, 0}, whatever its position, also over a list set to
// the slot before (as the canonical builder does: empty_list_before_object
// in messages-more.json).
func (o ObjectBuilder) SetList(off int, l ListRef) {
	if !o.fits(off, ListSlotSize) {
		return
	}
	var v uint64 // {0, 0}: empty
	if l.count != 0 {
		rel := int64(o.b.base) + int64(l.pos) - int64(int(o.at)+off)
		v = uint64(uint32(int32(rel))) | uint64(l.count)<<32
	}
	binary.LittleEndian.PutUint64(o.b.buf[int(o.at)+off:], v)
}

// Finish writes the object's text and bytes values, in the order they were
// set, at the end of the buffer, points their slots at them, and returns the
// object's Ref. Call it once per object. Finishing an object that has text
// or bytes values while a list is open is misuse (they would land among the
// list's elements): it writes nothing and returns 0.
func (o ObjectBuilder) Finish() Ref {
	if o.b == nil {
		return 0
	}
	return o.b.finishObject(int(o.at), int(o.size), o.gen)
}

// finishObject writes the pending values of the object of size bytes at
// absolute position at, started in generation gen, in set order, keeps the
// others (objects still open) in order, and returns the object's Ref.
func (b *Builder) finishObject(at, size int, gen uint64) Ref {
	if gen != b.gen {
		b.fail(staleObject)
		return 0
	}
	owner := int32(at - b.base)
	switch {
	case b.ntails == 0:
	case size == 0:
		// It has no slot, so no values: those recorded for its position
		// are of an object started there after it (a zero-size object
		// takes no bytes), and wait for that object's Finish.
	case b.lists&1 != 0 && b.owns(owner):
		b.fail("object with text or bytes values finished while a list is open (finish the list first)")
		return 0
	case b.ntails <= inlineTails:
		// Objects finish innermost first, so the values kept (of objects
		// still open) usually come first and stay where they are.
		buf := b.buf
		kept := 0
		for i := range b.ntails {
			t := &b.tails[i]
			if t.owner != owner {
				if kept != i {
					b.tails[kept] = *t
				}
				kept++
				continue
			}
			buf = appendTailValue(buf, b.base, t)
		}
		b.buf = buf
		b.ntails = kept
	default:
		b.finishSpilled(owner)
	}
	if b.ntails == 0 {
		b.pending = 0
	}
	return Ref(at - b.base)
}

// owns reports whether a pending value belongs to the object at position
// owner of the message.
func (b *Builder) owns(owner int32) bool {
	for i := range b.ntails {
		if b.tailAt(i).owner == owner {
			return true
		}
	}
	return false
}

// finishSpilled is finishObject for a record that spilled past inlineTails.
func (b *Builder) finishSpilled(owner int32) {
	kept := 0
	for i := range b.ntails {
		t := *b.tailAt(i)
		if t.owner != owner {
			*b.tailAt(kept) = t
			kept++
			continue
		}
		b.writeTail(t)
	}
	b.spill = b.spill[:max(kept-inlineTails, 0)]
	b.ntails = kept
}

// writeTail appends one pending value and patches its slot: offset and
// length, or offset only (length 0) when the slot was set to an empty value
// after this one (docs/wire.md §3).
func (b *Builder) writeTail(t tail) { b.buf = appendTailValue(b.buf, b.base, &t) }

// appendTailValue is writeTail on buf, for the message starting at base.
func appendTailValue(buf []byte, base int, t *tail) []byte {
	pos := len(buf)
	buf = append(buf, t.data...)
	slot, n := int(t.slot), uint64(len(t.data))
	if slot < 0 {
		slot, n = ^slot, 0
	}
	slot += base
	binary.LittleEndian.PutUint64(buf[slot:slot+TextSlotSize], uint64(uint32(pos-slot))|n<<32)
	return buf
}

// ListBuilder appends the elements of one list of a [Builder]. Use it
// through a variable (its methods have pointer receivers) and call
// [ListBuilder.Finish] before starting another object or list, writing a
// raw blob or finishing an object that has text or bytes values: one list
// is open at a time, and those calls, while it is, are misuse and write
// nothing. A ListBuilder used after its Finish or after [Builder.Reset] is
// misuse too, and writes nothing.
type ListBuilder struct {
	b        *Builder
	at       int   // absolute position of the first element
	elemSize int32 // 0 for a variable-element list; StartList refuses larger
	count    uint32
	id       uint64 // Builder.lists while this list is the open one
	elemAt   int    // BeginElement: absolute position of the element body
}

// StartList pads to 8 and starts a list. elemSize is the width of a flat
// list's elements (1, 2, 4, 8 or a struct stride), or 0 for a
// variable-element list whose elements are [u32 size][bytes]. An elemSize
// below 0 or of 2 GiB or more is misuse.
func (b *Builder) StartList(elemSize int) ListBuilder {
	// Small enough to inline, so that the caller's ListBuilder is written
	// in place: returned from a call, its five words were copied through
	// the stack, which cost more than the rest of StartList.
	if uint(elemSize) > math.MaxInt32 || b.lists&1 != 0 {
		if b.bad.what == misNone {
			b.bad = misuse{what: misStartList, n: elemSize}
		}
		return ListBuilder{}
	}
	b.pad8()
	b.lists++
	return ListBuilder{b: b, at: len(b.buf), elemSize: int32(elemSize), id: b.lists}
}

// check reports whether an element of size bytes may be added (0: an
// element of a variable-element list). It records misuse without a call,
// so that the adders stay small enough to inline.
func (l *ListBuilder) check(size int) bool {
	if l.b != nil && int(l.elemSize) == size && l.id == l.b.lists {
		return true
	}
	if l.b != nil && l.b.bad.what == misNone {
		l.b.bad = misuse{what: misElement, n: size, size: l.elemSize}
	}
	return false
}

// AddUint8 appends one u8 element.
func (l *ListBuilder) AddUint8(v uint8) {
	if l.check(1) {
		l.b.buf = append(l.b.buf, v)
		l.count++
	}
}

// AddUint16 appends one u16 element.
func (l *ListBuilder) AddUint16(v uint16) {
	if l.check(2) {
		l.b.buf = binary.LittleEndian.AppendUint16(l.b.buf, v)
		l.count++
	}
}

// AddUint32 appends one u32 element.
func (l *ListBuilder) AddUint32(v uint32) {
	if l.check(4) {
		l.b.buf = binary.LittleEndian.AppendUint32(l.b.buf, v)
		l.count++
	}
}

// AddUint64 appends one u64 element.
func (l *ListBuilder) AddUint64(v uint64) {
	if l.check(8) {
		l.b.buf = binary.LittleEndian.AppendUint64(l.b.buf, v)
		l.count++
	}
}

// AddBytes appends p to a list of u8: each byte is one element. p is copied.
func (l *ListBuilder) AddBytes(p []byte) {
	if l.check(1) {
		l.b.buf = append(l.b.buf, p...)
		l.count += uint32(len(p))
	}
}

// AddElement appends one element of a flat list of fixed-size structs; len(p)
// must equal the list's element size, which is never 0: on a
// variable-element list (StartList(0)) AddElement is misuse, even with an
// empty p, since it writes no size word. p is copied.
func (l *ListBuilder) AddElement(p []byte) {
	n := len(p)
	if n == 0 {
		n = -1 // no flat element is empty: a 0 would pass as a variable element
	}
	if l.check(n) {
		l.b.buf = append(l.b.buf, p...)
		l.count++
	}
}

// AddMessage appends one element to a variable-element list: a u32 size,
// then p (for a list of structs, p is a whole message). p is copied.
func (l *ListBuilder) AddMessage(p []byte) {
	if l.check(0) {
		l.b.buf = binary.LittleEndian.AppendUint32(l.b.buf, uint32(len(p)))
		l.b.buf = append(l.b.buf, p...)
		l.count++
	}
}

// BeginElement starts one element of a variable-element list and returns
// the buffer to append its bytes to, typically a whole message:
//
//	buf := l.BeginElement()
//	buf = item.AppendZAP(buf)
//	l.EndElement(buf)
//
// Until EndElement, nothing else may use the Builder: EndElement after
// something was written (an element added to this list, an object
// finished) is misuse, and refuses the element, though the buffer it was
// appended to may have overwritten what was written. BeginElement again
// before EndElement abandons the element begun: nothing of it is written.
func (l *ListBuilder) BeginElement() []byte {
	if !l.check(0) {
		return nil
	}
	// The Builder's buffer takes the element (size word included) only at
	// EndElement, so an element begun again starts at the same place.
	buf := append(l.b.buf, 0, 0, 0, 0)
	l.elemAt = len(buf)
	return buf
}

// EndElement takes back the buffer returned by BeginElement, with the
// element appended, and writes the element's size.
func (l *ListBuilder) EndElement(buf []byte) {
	at := l.elemAt // not 0 only after BeginElement, so l.b is set
	if at < ElementHeaderSize || len(buf) < at || l.id != l.b.lists || len(l.b.buf)+ElementHeaderSize != at {
		// The last: something was added (to this list, say) since
		// BeginElement, where the element was to go.
		if l.b != nil && l.b.bad.what == misNone {
			l.b.bad = misuse{what: misEnd}
		}
		return
	}
	l.b.buf = buf
	binary.LittleEndian.PutUint32(buf[at-ElementHeaderSize:], uint32(len(buf)-at))
	l.elemAt = 0
	l.count++
}

// Finish ends the list and returns it for [ObjectBuilder.SetList]. An
// element begun and not ended is misuse; it is not part of the list. Finish
// of a list finished before, or started before [Builder.Reset], is misuse
// and returns the empty ListRef.
func (l *ListBuilder) Finish() ListRef {
	if l.b == nil {
		return ListRef{}
	}
	if l.id != l.b.lists {
		if l.b.bad.what == misNone {
			l.b.bad = misuse{what: misStale}
		}
		return ListRef{}
	}
	l.b.lists++
	if l.elemAt != 0 && l.b.bad.what == misNone {
		l.b.bad = misuse{what: misOpen}
	}
	return ListRef{pos: int32(l.at - l.b.base), count: l.count}
}
