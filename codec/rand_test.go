package codec_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// A random object tree: what to build, and what a reader must then see.
type rObject struct {
	size   int
	fields []rField
}

type rKind int

const (
	kU8 rKind = iota
	kU16
	kU32
	kU64
	kText
	kBytes
	kFixed
	kChild   // nested object, built before the parent or while it is open
	kFlat    // flat list of u8, u32 or u64
	kVarList // variable-element list of whole messages
	numKinds
)

type rField struct {
	kind     rKind
	off      int
	u        uint64
	data     []byte   // text, bytes, fixed
	prior    [][]byte // text, bytes: values set earlier to the same slot
	child    *rObject
	before   bool // child built before its parent starts
	width    int  // flat list element width
	flat     []uint64
	elements []*rObject
}

func slotWidth(f *rField) int {
	switch f.kind {
	case kU8:
		return 1
	case kU16:
		return 2
	case kU32:
		return 4
	case kU64:
		return 8
	case kText, kBytes, kFlat, kVarList:
		return 8
	case kFixed:
		return len(f.data)
	case kChild:
		return 4
	}
	panic("BUG: kind")
}

func randBytes(r *rand.Rand, max int) []byte {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func randObject(r *rand.Rand, depth int) *rObject {
	o := &rObject{}
	off := r.IntN(3)
	for range r.IntN(8) {
		f := rField{kind: rKind(r.IntN(int(numKinds)))}
		if depth <= 0 && (f.kind == kChild || f.kind == kVarList) {
			f.kind = kU64
		}
		switch f.kind {
		case kU8, kU16, kU32, kU64:
			f.u = r.Uint64()
		case kText, kBytes:
			f.data = randBytes(r, 40)
			if r.IntN(4) == 0 {
				// Set twice (docs/wire.md §3): earlier values, often empty, set
				// before every other field of the object.
				for range 1 + r.IntN(2) {
					f.prior = append(f.prior, randBytes(r, 3*r.IntN(2)))
				}
				if r.IntN(2) == 0 {
					f.data = nil
				}
			}
		case kFixed:
			f.data = randBytes(r, 33)
		case kChild:
			f.child, f.before = randObject(r, depth-1), r.IntN(2) == 0
		case kFlat:
			f.width = []int{1, 4, 8}[r.IntN(3)]
			f.flat = make([]uint64, r.IntN(12))
			for i := range f.flat {
				f.flat[i] = r.Uint64() & (1<<(8*f.width) - 1 | -(uint64(f.width) >> 3))
			}
		case kVarList:
			for range r.IntN(5) {
				f.elements = append(f.elements, randObject(r, depth-1))
			}
		}
		f.off = off
		off += slotWidth(&f) + r.IntN(3)
		o.fields = append(o.fields, f)
	}
	o.size = max(off, 1) // an empty object at the very end of a message reads as null (docs/wire.md §5)
	return o
}

// build writes o with b and returns its Ref. scratch builds list elements.
func build(b *codec.Builder, o *rObject) codec.Ref {
	before := map[int]codec.Ref{}
	for i, f := range o.fields {
		if f.kind == kChild && f.before {
			before[i] = build(b, f.child)
		}
	}
	ob := b.StartObject(o.size)
	for _, f := range o.fields {
		for _, p := range f.prior {
			if f.kind == kText {
				ob.SetText(f.off, string(p))
			} else {
				ob.SetBytes(f.off, p)
			}
		}
	}
	for i, f := range o.fields {
		switch f.kind {
		case kU8:
			ob.SetUint8(f.off, uint8(f.u))
		case kU16:
			ob.SetUint16(f.off, uint16(f.u))
		case kU32:
			ob.SetUint32(f.off, uint32(f.u))
		case kU64:
			ob.SetUint64(f.off, f.u)
		case kText:
			ob.SetText(f.off, string(f.data))
		case kBytes:
			ob.SetBytes(f.off, f.data)
		case kFixed:
			ob.SetBytesFixed(f.off, f.data)
		case kChild:
			ref, ok := before[i]
			if !ok {
				ref = build(b, f.child)
			}
			ob.SetObject(f.off, ref)
		case kFlat:
			l := b.StartList(f.width)
			for _, v := range f.flat {
				switch f.width {
				case 1:
					l.AddUint8(uint8(v))
				case 4:
					l.AddUint32(uint32(v))
				default:
					l.AddUint64(v)
				}
			}
			ob.SetList(f.off, l.Finish())
		case kVarList:
			l := b.StartList(0)
			for _, e := range f.elements {
				var eb codec.Builder
				eb.Reset(l.BeginElement())
				eb.SetRoot(build(&eb, e))
				l.EndElement(eb.Finish())
			}
			ob.SetList(f.off, l.Finish())
		}
	}
	return ob.Finish()
}

func verify(t *testing.T, path string, o codec.Object, want *rObject) {
	t.Helper()
	if o.IsNull() {
		t.Fatalf("%s: object is null", path)
	}
	for _, f := range want.fields {
		switch f.kind {
		case kU8:
			check(t, path, f.off, uint64(o.Uint8(f.off)), uint64(uint8(f.u)))
		case kU16:
			check(t, path, f.off, uint64(o.Uint16(f.off)), uint64(uint16(f.u)))
		case kU32:
			check(t, path, f.off, uint64(o.Uint32(f.off)), uint64(uint32(f.u)))
		case kU64:
			check(t, path, f.off, o.Uint64(f.off), f.u)
		case kText:
			if got := o.Text(f.off); got != string(f.data) {
				t.Fatalf("%s text @%d = %q, want %q", path, f.off, got, f.data)
			}
		case kBytes:
			if got := o.Bytes(f.off); !bytes.Equal(got, f.data) || (got == nil) != (len(f.data) == 0 && !anyValue(f.prior)) {
				t.Fatalf("%s bytes @%d = %x (nil %v), want %x after %x", path, f.off, got, got == nil, f.data, f.prior)
			}
		case kFixed:
			if got := o.BytesFixed(f.off, len(f.data)); !bytes.Equal(got, f.data) {
				t.Fatalf("%s fixed @%d = %x, want %x", path, f.off, got, f.data)
			}
		case kChild:
			verify(t, path+".child", o.Object(f.off), f.child)
		case kFlat:
			l := o.List(f.off)
			check(t, path+" list len", f.off, uint64(l.Len()), uint64(len(f.flat)))
			if l.IsNull() != (len(f.flat) == 0) {
				t.Fatalf("%s list @%d: null %v with %d elements", path, f.off, l.IsNull(), len(f.flat))
			}
			for i, v := range f.flat {
				var got uint64
				switch f.width {
				case 1:
					got = uint64(l.Uint8(i))
				case 4:
					got = uint64(l.Uint32(i))
				default:
					got = l.Uint64(i)
				}
				check(t, path+" list elem", i, got, v)
			}
		case kVarList:
			l := o.List(f.off)
			check(t, path+" var list len", f.off, uint64(l.Len()), uint64(len(f.elements)))
			if l.IsNull() != (len(f.elements) == 0) {
				t.Fatalf("%s var list @%d: null %v with %d elements", path, f.off, l.IsNull(), len(f.elements))
			}
			n := 0
			for it := l.Iter(); it.Next(); n++ {
				verify(t, path+".elem", it.Object(), f.elements[it.Index()])
				verify(t, path+".elemAt", l.ObjectAt(it.Index()), f.elements[it.Index()])
			}
			check(t, path+" var list walked", f.off, uint64(n), uint64(len(f.elements)))
		}
	}
}

// anyValue reports whether one of vs is non-empty: a slot set to it is not
// null, whatever was set after.
func anyValue(vs [][]byte) bool {
	for _, v := range vs {
		if len(v) > 0 {
			return true
		}
	}
	return false
}

func check(t *testing.T, path string, off int, got, want uint64) {
	t.Helper()
	if got != want {
		t.Fatalf("%s @%d = %d, want %d", path, off, got, want)
	}
}

func TestRandomRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var b codec.Builder
	var buf []byte
	for i := range 5000 {
		want := randObject(r, 3)
		if len(want.fields) == 0 && r.IntN(2) == 0 {
			want.size = 0 // a zero-size root at the end of the message is not null
		}
		prefix := randBytes(r, 9)
		b.Reset(append(buf[:0], prefix...))
		b.SetVersion(uint16(1 + r.IntN(2)))
		b.SetRoot(build(&b, want))
		buf = b.Finish()
		if err := b.Err(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		m, err := codec.Parse(buf[len(prefix):])
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		verify(t, "root", m.Root(), want)
	}
}
