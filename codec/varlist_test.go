package codec_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// varListMessage builds a message whose root (8 bytes) holds one list slot
// pointing at the elements add writes into a variable-element list.
func varListMessage(add func(l *codec.ListBuilder)) []byte {
	var b codec.Builder
	b.Reset(nil)
	l := b.StartList(0)
	add(&l)
	lr := l.Finish()
	o := b.StartObject(8)
	o.SetList(0, lr)
	b.SetRoot(o.Finish())
	return b.Finish()
}

// rawListMessage is a message with root {list slot} -> body (count n).
func rawListMessage(body []byte, n uint32) []byte {
	msg := make([]byte, 24, 24+len(body))
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], codec.Version1)
	binary.LittleEndian.PutUint32(msg[8:], 16)
	binary.LittleEndian.PutUint32(msg[16:], 8) // list at 24: rel 8 from the slot at 16
	binary.LittleEndian.PutUint32(msg[20:], n)
	msg = append(msg, body...)
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(msg)))
	return msg
}

func rootList(t testing.TB, msg []byte) codec.List {
	t.Helper()
	m, err := codec.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	return m.Root().List(0)
}

// TestVarScalarBuilder pins the element bytes of docs/wire.md §4 for every width,
// as the canonical generated constructors wrote them (generated-lists.json,
// case mix: I32s, U8s, U64s).
func TestVarScalarBuilder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		add  func(l *codec.ListBuilder)
		want string
	}{
		{"u8", func(l *codec.ListBuilder) { l.AddUint8Element(42) }, "010000002a"},
		{"u16", func(l *codec.ListBuilder) { l.AddUint16Element(0x0102); l.AddUint16Element(0xffff) }, "020000000201" + "02000000ffff"},
		{"i32", func(l *codec.ListBuilder) { l.AddUint32Element(uint32(0xfffeee90)); l.AddUint32Element(70000) }, "0400000090eefeff0400000070110100"},
		{"u64", func(l *codec.ListBuilder) { l.AddUint64Element(1 << 40) }, "080000000000000000010000"},
		{"text", func(l *codec.ListBuilder) { l.AddTextElement(""); l.AddTextElement("z") }, "00000000010000007a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := varListMessage(tt.add)
			l := rootList(t, msg)
			// The list starts at 16 (no padding needed); the root follows it.
			end := 16 + len(tt.want)/2
			if got := hex.EncodeToString(msg[16:end]); got != tt.want {
				t.Errorf("elements %s, want %s", got, tt.want)
			}
			if l.IsNull() {
				t.Fatal("null list")
			}
		})
	}
	// A flat list refuses the var-element adders and the reverse.
	var b codec.Builder
	b.Reset(nil)
	l := b.StartList(4)
	l.AddUint32Element(1)
	if b.Err() == nil {
		t.Error("AddUint32Element on a flat list: no error")
	}
}

// TestVarScalarRead reads each width through the O(1) accessors, the
// iterator and BytesAt, and checks the zero value out of range.
func TestVarScalarRead(t *testing.T) {
	t.Parallel()
	msg := varListMessage(func(l *codec.ListBuilder) {
		for i := range 10 {
			l.AddUint32Element(uint32(i*1000 + 1))
		}
	})
	l := rootList(t, msg)
	if l.Len() != 10 {
		t.Fatalf("Len %d", l.Len())
	}
	for i := range 10 {
		if got := l.VarUint32(i); got != uint32(i*1000+1) {
			t.Errorf("VarUint32(%d) = %d", i, got)
		}
		if got := l.VarFixed(i, 4); binary.LittleEndian.Uint32(got) != uint32(i*1000+1) || cap(got) != 4 {
			t.Errorf("VarFixed(%d) = %x cap %d", i, got, cap(got))
		}
		// Wrong width: the size word says 4.
		if l.VarUint16(i) != 0 || l.VarUint64(i) != 0 || l.VarUint8(i) != 0 || l.VarFixed(i, 3) != nil {
			t.Errorf("element %d read at a wrong width is not zero", i)
		}
	}
	for _, i := range []int{-1, 10, math.MaxInt} {
		if l.VarUint32(i) != 0 || l.VarFixed(i, 4) != nil {
			t.Errorf("VarUint32(%d) is not zero", i)
		}
	}
	n := 0
	for it := l.Iter(); it.Next(); n++ {
		if it.Uint32() != uint32(n*1000+1) || it.Uint16() != 0 || it.Uint8() != 0 || it.Uint64() != 0 || it.Fixed(4) == nil || it.Fixed(2) != nil {
			t.Errorf("iter %d: %d", n, it.Uint32())
		}
	}
	if n != 10 {
		t.Errorf("iterated %d", n)
	}
	var zero codec.List
	if zero.VarUint32(0) != 0 || zero.VarFixed(0, 1) != nil || !zero.VarFits(4) {
		t.Error("zero List")
	}
}

// TestVarScalarNonUniform: when an element before i is not w bytes, the
// size word at the computed position usually does not match and the
// accessor walks; when it happens to be w, the accessor reads the w bytes
// after it, which are not element i (varlist.go says so).
func TestVarScalarNonUniform(t *testing.T) {
	t.Parallel()
	var body []byte
	body = codec.AppendBytesElement(body, []byte{1, 2, 3, 4, 5, 6}) // 6 bytes: not a u32
	body = codec.AppendUint32Element(body, 7)
	body = codec.AppendUint32Element(body, 8)
	l := rootList(t, rawListMessage(body, 3))
	if got := []uint32{l.VarUint32(0), l.VarUint32(1), l.VarUint32(2), l.VarUint32(3)}; got[0] != 0 || got[1] != 7 || got[2] != 8 || got[3] != 0 {
		t.Errorf("got %v, want [0 7 8 0]", got)
	}
	if !bytes.Equal(l.VarFixed(0, 6), []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("VarFixed(0, 6) = %x", l.VarFixed(0, 6))
	}

	// Element 0 is empty and element 1 is 8 bytes, whose first word is 4:
	// at the uniform position of element 1 (8 bytes from the start) lies
	// a size word of 4, so VarUint32(1) reads the word after it, where
	// the walk finds an 8-byte element 1.
	body = codec.AppendBytesElement(nil, nil)
	body = codec.AppendBytesElement(body, []byte{4, 0, 0, 0, 0x77, 0x77, 0x77, 0x77})
	l = rootList(t, rawListMessage(body, 2))
	if got := l.VarUint32(1); got != 0x77777777 || len(l.BytesAt(1)) != 8 {
		t.Errorf("VarUint32(1) = %#x, BytesAt(1) = %x", got, l.BytesAt(1))
	}
}

// FuzzVarAgree: the Var readers of every width agree with VarFixed, on
// any list; they agree with the walk (BytesAt) whenever the walked
// elements up to i are all w bytes, as every writer makes them; and
// whatever they return lies inside the message, after a size word of w.
func FuzzVarAgree(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 1, 2, 3, 4, 4, 0, 0, 0, 5, 6, 7, 8}, uint32(2), 1)
	f.Add([]byte{0, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0, 7, 7, 7, 7}, uint32(2), 1)
	f.Add([]byte{1, 0, 0, 0, 9, 2, 0, 0, 0, 1, 2}, uint32(9), 0)
	f.Fuzz(func(t *testing.T, body []byte, n uint32, i int) {
		msg := rawListMessage(body, n)
		l := rootList(t, msg)
		for _, w := range []int{0, 1, 2, 3, 4, 8, 12} {
			got := l.VarFixed(i, w)
			var fast uint64
			switch w {
			case 1:
				fast = uint64(l.VarUint8(i))
			case 2:
				fast = uint64(l.VarUint16(i))
			case 4:
				fast = uint64(l.VarUint32(i))
			case 8:
				fast = l.VarUint64(i)
			}
			var want uint64
			for k, c := range got {
				if k < 8 {
					want |= uint64(c) << (8 * k)
				}
			}
			if w == 1 || w == 2 || w == 4 || w == 8 {
				if fast != want {
					t.Fatalf("width %d, element %d: Var reader %#x, VarFixed %x", w, i, fast, got)
				}
			}
			if got != nil {
				if len(got) != w || cap(got) != w {
					t.Fatalf("VarFixed(%d, %d) = %x, cap %d", i, w, got, cap(got))
				}
				// Where got lies in msg: after a size word of w.
				at := -1
				for p := 24 + codec.ElementHeaderSize; w > 0 && p+w <= len(msg); p++ {
					if &msg[p] == &got[0] {
						at = p
						break
					}
				}
				if w > 0 && (at < 0 || binary.LittleEndian.Uint32(msg[at-4:]) != uint32(w)) {
					t.Fatalf("VarFixed(%d, %d) = %x: not after a size word of %d in the message", i, w, got, w)
				}
			}
			// The walk: when elements 0..i are all w bytes, both agree.
			uniform := i >= 0
			k := 0
			for it := l.Iter(); uniform && it.Next() && k <= i; k++ {
				uniform = len(it.Bytes()) == w
			}
			if uniform && k == i+1 {
				if want := l.BytesAt(i); !bytes.Equal(got, want) || got == nil {
					t.Fatalf("uniform list %x count %d: VarFixed(%d, %d) = %x, the walk gives %x", body, n, i, w, got, want)
				}
			} else if i < 0 || i >= l.Len() {
				if got != nil {
					t.Fatalf("VarFixed(%d, %d) of %d elements = %x", i, w, l.Len(), got)
				}
			}
		}
	})
}

// TestVarScalarHostile checks reads of truncated lists and hostile counts:
// zero values, no panic, and agreement with a reference walk whenever the
// elements before i are uniform.
func TestVarScalarHostile(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		w := []int{1, 2, 4, 8}[r.IntN(4)]
		var body []byte
		uniform := r.IntN(2) == 0
		for range r.IntN(6) {
			size := w
			if !uniform && r.IntN(3) == 0 {
				size = r.IntN(12)
			}
			body = binary.LittleEndian.AppendUint32(body, uint32(size))
			for range size {
				body = append(body, byte(r.IntN(256)))
			}
		}
		body = body[:r.IntN(len(body)+1)] // maybe truncated
		n := uint32(r.IntN(8))
		if r.IntN(10) == 0 {
			n = 0xffffffff
		}
		l := rootList(t, rawListMessage(body, n))
		var walked [][]byte
		for it := l.Iter(); it.Next(); {
			walked = append(walked, it.Bytes())
		}
		for i := -1; i < 9; i++ {
			var want []byte
			if i >= 0 && i < len(walked) {
				want = walked[i]
			}
			if got := l.BytesAt(i); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("list %x count %d: BytesAt(%d) = %x, the iterator gives %x", body, n, i, got, want)
			}
		}
		for i := -1; i < 9; i++ {
			got := l.VarFixed(i, w)
			if got != nil && len(got) != w {
				t.Fatalf("VarFixed(%d, %d) = %x", i, w, got)
			}
			if uniform {
				want := l.BytesAt(i)
				if len(want) != w {
					want = nil
				}
				if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("uniform list %x count %d: VarFixed(%d, %d) = %x, walk gives %x", body, n, i, w, got, want)
				}
			}
			_ = l.VarUint8(i) + uint8(l.VarUint16(i)) + uint8(l.VarUint32(i)) + uint8(l.VarUint64(i))
		}
		if l.VarFits(w) && !l.IsNull() && uint64(l.Len())*uint64(4+w) > uint64(len(body)) {
			t.Fatalf("VarFits(%d) true for %d elements in %d bytes", w, l.Len(), len(body))
		}
	}
}

func TestVarListOf(t *testing.T) {
	t.Parallel()
	var body []byte
	body = codec.AppendUint16Element(body, 1)
	body = codec.AppendTextElement(body, "abc")
	body = codec.AppendUint16Element(body, 2)
	l, ok := codec.VarListOf(body)
	if !ok || l.Len() != 3 || l.VarUint16(0) != 1 || string(l.BytesAt(1)) != "abc" || l.VarUint16(2) != 2 {
		t.Errorf("VarListOf: ok %v len %d", ok, l.Len())
	}
	if l, ok := codec.VarListOf(body[:len(body)-1]); ok || l.Len() != 2 {
		t.Errorf("truncated: ok %v len %d", ok, l.Len())
	}
	if l, ok := codec.VarListOf(nil); !ok || !l.IsNull() || l.Len() != 0 {
		t.Error("empty")
	}
	if l, ok := codec.VarListOf([]byte{1, 2}); ok || l.Len() != 0 {
		t.Error("short")
	}

	// StartElement/FinishElement nest one list in another.
	outer, at := codec.StartElement(nil)
	outer = codec.AppendUint16Element(outer, 5)
	outer = codec.AppendUint16Element(outer, 6)
	codec.FinishElement(outer, at)
	if got := hex.EncodeToString(outer); got != "0c000000"+"020000000500"+"020000000600" {
		t.Errorf("nested element %s", got)
	}
	codec.FinishElement(outer, 2)   // misuse: ignored
	codec.FinishElement(outer, 100) // misuse: ignored
	if !bytes.Equal(outer[:4], []byte{12, 0, 0, 0}) {
		t.Error("misused FinishElement wrote")
	}
}

func FuzzVarList(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 1, 2, 3, 4}, uint32(1), 0, 4)
	f.Add([]byte{6, 0, 0, 0, 1, 2, 3, 4, 5, 6, 2, 0, 0, 0, 9, 9}, uint32(2), 1, 2)
	f.Fuzz(func(t *testing.T, body []byte, n uint32, i, w int) {
		l := rootList(t, rawListMessage(body, n))
		if p := l.VarFixed(i, w); p != nil && len(p) != w {
			t.Fatalf("VarFixed(%d, %d) = %x", i, w, p)
		}
		_ = l.VarUint8(i) + uint8(l.VarUint16(i)) + uint8(l.VarUint32(i)) + uint8(l.VarUint64(i))
		_ = l.VarFits(w)
		in, _ := codec.VarListOf(body)
		if uint64(in.Len())*codec.ElementHeaderSize > uint64(len(body)) {
			t.Fatalf("VarListOf counted %d elements in %d bytes", in.Len(), len(body))
		}
		_ = in.VarFixed(i, w)
		for it := in.Iter(); it.Next(); {
			_ = it.Uint32()
		}
	})
}
