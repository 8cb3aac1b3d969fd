package codec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// parseErr returns err's *ParseError or fails the test.
func parseErr(t *testing.T, err error) *codec.ParseError {
	t.Helper()
	var pe *codec.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *codec.ParseError", err, err)
	}
	return pe
}

// Every Parse failure is a *ParseError with the offset where the input
// broke, matching its sentinel with errors.Is.
func TestParseErrorOffsets(t *testing.T) {
	good := []byte("ZAP\x00\x02\x00\x00\x00\x10\x00\x00\x00\x18\x00\x00\x00" + "01234567")
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
		off  int
	}{
		{"empty", nil, codec.ErrTooSmall, 0},
		{"15 bytes", good[:15], codec.ErrTooSmall, 15},
		{"magic byte 0", mut(func(b []byte) { b[0] = 'z' }), codec.ErrMagic, 0},
		{"magic byte 2", mut(func(b []byte) { b[2] = 'X' }), codec.ErrMagic, 2},
		{"magic byte 3", mut(func(b []byte) { b[3] = 1 }), codec.ErrMagic, 3},
		{"version 0", mut(func(b []byte) { b[4] = 0 }), codec.ErrVersion, 4},
		{"version 3", mut(func(b []byte) { b[4] = 3 }), codec.ErrVersion, 4},
		{"version 258", mut(func(b []byte) { b[5] = 1 }), codec.ErrVersion, 4},
		{"size 15", mut(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 15) }), codec.ErrTooSmall, 12},
		{"size past the end", mut(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 25) }), codec.ErrTooSmall, 12},
		{"size 4 GiB", mut(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 0xFFFFFFFF) }), codec.ErrTooSmall, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := codec.Parse(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse error %v, want %v", err, tc.want)
			}
			if pe := parseErr(t, err); pe.Offset != tc.off || pe.Err != tc.want {
				t.Fatalf("ParseError{Offset: %d, Err: %v}, want offset %d", pe.Offset, pe.Err, tc.off)
			}
			if m.Size() != 0 {
				t.Fatal("a failed Parse returned a message")
			}
		})
	}
	if _, err := codec.Parse(good); err != nil {
		t.Fatalf("good message: %v", err)
	}
	if got := (&codec.ParseError{Offset: 12, Err: codec.ErrTooSmall}).Error(); got != "codec: message too small at byte 12" {
		t.Fatalf("Error() = %q", got)
	}
}

// checkedMsg is a message whose root object (at 16, 24 bytes) holds a
// bytes slot at 0 with "hello", a null slot at 8 and a non-null empty one
// at 16.
func checkedMsg(t *testing.T) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(24)
	o.SetBytes(0, []byte("hello"))
	o.SetBytes(16, []byte("x"))
	o.SetBytes(16, nil)
	b.SetRoot(o.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// CheckedBytes reads what Bytes reads from well-formed slots and reports
// the malformed ones Bytes reads as nil, with the slot's position.
func TestCheckedBytes(t *testing.T) {
	msg := checkedMsg(t)
	root := func(b []byte) codec.Object {
		m, err := codec.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return m.Root()
	}
	r := root(msg)
	if r.Pos() != 16 {
		t.Fatalf("root Pos %d, want 16", r.Pos())
	}
	if got, err := r.CheckedBytes(0); err != nil || string(got) != "hello" {
		t.Fatalf("slot 0: %q %v", got, err)
	}
	if got, err := r.CheckedBytes(8); err != nil || got != nil {
		t.Fatalf("null slot: %q %v", got, err)
	}
	if got, err := r.CheckedBytes(16); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty non-null slot: %q (nil %v) %v", got, got == nil, err)
	}
	if got, err := (codec.Object{}).CheckedBytes(0); err != nil || got != nil {
		t.Fatalf("null object: %q %v", got, err)
	}
	put := func(off int, v uint32) []byte {
		b := bytes.Clone(msg)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		obj  codec.Object
		off  int
		at   int
	}{
		{"slot past the message", r, len(msg) - 16 - 4, len(msg) - 4},
		{"slot at a huge offset", r, 1 << 30, 16 + 1<<30},
		// The slot's position passes MaxInt: it saturates there (it
		// wrapped to a negative offset).
		{"slot at MaxInt", r, math.MaxInt, math.MaxInt},
		{"slot at MaxInt - 15", r, math.MaxInt - 15, math.MaxInt},
		{"slot at MaxInt - 16", r, math.MaxInt - 16, math.MaxInt},
		{"slot at MaxInt - 17", r, math.MaxInt - 17, math.MaxInt - 1},
		// A negative offset: the slot's position, before the object;
		// before the message, it saturates at 0.
		{"slot at -1", r, -1, 15},
		{"slot at -16", r, -16, 0},
		{"slot at -17", r, -17, 0},
		{"slot at MinInt", r, math.MinInt, 0},
		{"value past the end", root(put(16+4, 1000)), 0, 16},
		{"value wraps", root(put(16, 0xFFFFFFF8)), 0, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.obj.CheckedBytes(tc.off)
			if got != nil || !errors.Is(err, codec.ErrOutOfBounds) {
				t.Fatalf("%q %v, want ErrOutOfBounds", got, err)
			}
			if pe := parseErr(t, err); pe.Offset != tc.at {
				t.Fatalf("offset %d, want %d", pe.Offset, tc.at)
			}
			if b := tc.obj.Bytes(tc.off); b != nil {
				t.Fatalf("Bytes read %q where CheckedBytes fails", b)
			}
		})
	}
}

// BytesAt reads at a slot's position what CheckedBytes reads at its
// field offset, and reports false exactly where CheckedBytes fails.
func TestBytesAt(t *testing.T) {
	msg := checkedMsg(t)
	m, err := codec.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := m.BytesAt(16); !ok || string(b) != "hello" {
		t.Fatalf("slot at 16: %q %v", b, ok)
	}
	if b, ok := m.BytesAt(24); !ok || b != nil {
		t.Fatalf("null slot: %q %v", b, ok)
	}
	if b, ok := m.BytesAt(32); !ok || b == nil || len(b) != 0 {
		t.Fatalf("empty non-null slot: %q (nil %v) %v", b, b == nil, ok)
	}
	for _, pos := range []int{-1, -8, len(msg) - 7, len(msg), len(msg) + 100, int(^uint(0) >> 1)} {
		if b, ok := m.BytesAt(pos); ok || b != nil {
			t.Fatalf("slot at %d: %q %v, want nil false", pos, b, ok)
		}
	}
	bad := bytes.Clone(msg)
	binary.LittleEndian.PutUint32(bad[16+4:], 1000)
	if m, err = codec.Parse(bad); err != nil {
		t.Fatal(err)
	}
	if b, ok := m.BytesAt(16); ok || b != nil {
		t.Fatalf("value past the end: %q %v", b, ok)
	}
	if b, ok := (codec.Message{}).BytesAt(0); ok || b != nil {
		t.Fatalf("zero Message: %q %v", b, ok)
	}
}
