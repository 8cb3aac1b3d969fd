package all

import (
	"bytes"
	"errors"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// fieldErr decodes msg into a new record and returns its *codec.FieldError.
func fieldErr(t *testing.T, rec interface{ DecodeZAP([]byte) error }, msg []byte) *codec.FieldError {
	t.Helper()
	err := rec.DecodeZAP(msg)
	var fe *codec.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("DecodeZAP: %v (%T), want a *codec.FieldError", err, err)
	}
	return fe
}

// DecodeZAP says where in the record a broken message broke: here the
// third Point of the Points of the nested Self, whose magic is wrong.
func TestDecodeErrorPathNested(t *testing.T) {
	k := Kitchen{Self: &Kitchen{Points: []Point{{X: 1}, {X: 2}, {X: 3}}}}
	msg := k.AppendZAP(nil)
	// Magic words: the root's, then the three Point elements'.
	at := -1
	for range 4 {
		i := bytes.Index(msg[at+1:], []byte(codec.Magic))
		if i < 0 {
			t.Fatal("fewer magic words than messages")
		}
		at += 1 + i
	}
	msg[at] = 'X'
	fe := fieldErr(t, new(Kitchen), msg)
	if fe.Path != "Kitchen.Self.Points[2]" || !errors.Is(fe, codec.ErrMagic) {
		t.Fatalf("got %q (%v), want Kitchen.Self.Points[2] and ErrMagic", fe.Path, fe)
	}
}

// A header error of the root message names the record.
func TestDecodeErrorPathRoot(t *testing.T) {
	msg := (&Pair{A: 1, B: "x"}).AppendZAP(nil)
	fe := fieldErr(t, new(Pair), msg[:10])
	if fe.Path != "Pair" || !errors.Is(fe, codec.ErrTooSmall) {
		t.Fatalf("got %q (%v)", fe.Path, fe)
	}
}

// An element of a nested list of the wrong size: Deep.Grid[1][1] is four
// bytes where a u16 takes two.
func TestDecodeErrorPathNestedList(t *testing.T) {
	const gridOff = 56 // Deep.Grid (all.zap.go)
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(new(Deep).SizeZAP() - codec.HeaderSize)
	l := b.StartList(0)
	buf := l.BeginElement()
	buf = codec.AppendUint16Element(buf, 7)
	l.EndElement(buf)
	buf = l.BeginElement()
	buf = codec.AppendUint16Element(buf, 8)
	buf = codec.AppendUint32Element(buf, 9)
	buf = codec.AppendUint16Element(buf, 10)
	l.EndElement(buf)
	o.SetList(gridOff, l.Finish())
	b.SetRoot(o.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	fe := fieldErr(t, new(Deep), msg)
	if fe.Path != "Deep.Grid[1][1]" || !errors.Is(fe, codec.ErrElementSize) {
		t.Fatalf("got %q (%v), want Deep.Grid[1][1] and ErrElementSize", fe.Path, fe)
	}
}

// A list whose count overstates its elements.
func TestDecodeErrorPathOutside(t *testing.T) {
	k := Kitchen{Words: []uint32{1, 2, 3}}
	msg := k.AppendZAP(nil)
	v, err := ReadKitchen(msg)
	if err != nil || v.Words().Len() != 3 {
		t.Fatal(err)
	}
	// Raise the count of the Words slot (offset 72 + 4 in the root object,
	// which follows the header) from 3 to 4.
	const slot = codec.HeaderSize + 72 + 4
	if msg[slot] != 3 {
		t.Fatalf("count byte %d", msg[slot])
	}
	msg[slot] = 4
	fe := fieldErr(t, new(Kitchen), msg)
	if fe.Path != "Kitchen.Words" || !errors.Is(fe, codec.ErrOutOfBounds) {
		t.Fatalf("got %q (%v), want Kitchen.Words and ErrOutOfBounds", fe.Path, fe)
	}
}
