package codec_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// checkGeneratedHelpers checks, on any bytes, that the helpers generated
// decoders use agree with the general accessors: ParseFixed with Parse,
// Root and Fixed, RootOf with Parse and Root, BytesIn with Bytes, for
// every fixed size and slot offset up to 64.
func checkGeneratedHelpers(t *testing.T, b []byte) {
	m, err := codec.Parse(b)
	o, ok := codec.RootOf(b)
	// RootOf answers exactly when the header is good and the root lies
	// inside the message; then it is Parse's root.
	if want := err == nil && !m.Root().IsNull() && m.Root().Pos() < m.Size(); ok != want || (ok && (o.Pos() != m.Root().Pos() || !sameObject(o, m.Root()))) || (!ok && !o.IsNull()) {
		t.Fatalf("RootOf = %v, %v; Parse: %v, root null %v", ok, o.IsNull(), err, err == nil && m.Root().IsNull())
	}
	if err != nil {
		if _, f, err2 := codec.ParseFixed(b, 8); f != nil || err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("ParseFixed of what Parse refuses (%v): %v, section %x", err, err2, f)
		}
		return
	}
	root := m.Root()
	// MessageSize is the message's, for the root and for every object
	// under it; 0 for a null one.
	if want := m.Size(); root.MessageSize() != want*boolInt(!root.IsNull()) || (ok && o.MessageSize() != want) {
		t.Fatalf("MessageSize: root %d, RootOf's %d, message %d", root.MessageSize(), o.MessageSize(), want)
	}
	if c := root.Object(0); c.MessageSize() != m.Size()*boolInt(!c.IsNull()) {
		t.Fatalf("MessageSize of a nested object (null %v): %d, message %d", c.IsNull(), c.MessageSize(), m.Size())
	}
	for n := 0; n <= 64; n++ {
		o, f, err := codec.ParseFixed(b, n)
		if err != nil || !sameObject(o, root) {
			t.Fatalf("ParseFixed(%d) object differs from Root (%v)", n, err)
		}
		want := root.Fixed(n)
		if n == 0 {
			want = nil // ParseFixed gives no empty section
		}
		if !bytes.Equal(f, want) || (f == nil) != (want == nil) || (f != nil && len(f) != n) {
			t.Fatalf("ParseFixed(%d) = %x, Fixed %x", n, f, want)
		}
		for off := 0; off+codec.TextSlotSize <= n && f != nil; off++ {
			got, want := root.BytesIn(f, off), root.Bytes(off)
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("BytesIn(f[%d], %d) = %x, Bytes %x", n, off, got, want)
			}
		}
	}
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestGeneratedHelpers(t *testing.T) {
	msg := handRequest(nil) // the eth request: a 44-byte root and a text
	checkGeneratedHelpers(t, msg)
	o, f, err := codec.ParseFixed(msg, 44)
	if err != nil || len(f) != 44 || string(o.BytesIn(f, 36)) != benchMethod {
		t.Fatalf("ParseFixed(44): %d bytes, method %q (%v)", len(f), o.BytesIn(f, 36), err)
	}
	// A root that runs past the end: no section, the object still there.
	short := append([]byte(nil), msg[:codec.HeaderSize+40]...)
	binary.LittleEndian.PutUint32(short[12:], uint32(len(short)))
	checkGeneratedHelpers(t, short)
	if o, f, err := codec.ParseFixed(short, 44); err != nil || f != nil || o.IsNull() || o.Uint64(28) != 1 {
		t.Fatalf("truncated: section %x, null %v", f, o.IsNull())
	}
	// A slot that points past the end, a root in the header.
	bad := append([]byte(nil), msg...)
	binary.LittleEndian.PutUint32(bad[codec.HeaderSize+36:], 1000)
	checkGeneratedHelpers(t, bad)
	binary.LittleEndian.PutUint32(bad[8:], 4)
	checkGeneratedHelpers(t, bad)
	// Every version and flags word: RootOf accepts versions 1 and 2 with
	// any flags, as Parse does, and nothing else.
	for _, vf := range []uint32{0, 1, 2, 3, 0x101, 0x10001, 0x20002, 0xFFFF0001, 0xFFFF0002, 0xFFFF, 0x10000, 0x1_0000_0000 - 1} {
		v := append([]byte(nil), msg...)
		binary.LittleEndian.PutUint32(v[4:], vf)
		checkGeneratedHelpers(t, v)
		if _, ok := codec.RootOf(v); ok != (uint16(vf) == 1 || uint16(vf) == 2) {
			t.Errorf("RootOf with version and flags %#x: %v", vf, ok)
		}
	}
	for i := range 4 { // each byte of the magic wrong
		v := append([]byte(nil), msg...)
		v[i] ^= 0x20
		checkGeneratedHelpers(t, v)
	}
	// BytesIn given a short f refuses rather than panics.
	if p := o.BytesIn(f[:3], 0); p != nil {
		t.Fatalf("BytesIn of a 3-byte section: %x", p)
	}
}

func TestSameText(t *testing.T) {
	for _, c := range []struct{ p, s string }{
		{"", ""}, {"a", "a"}, {"a", "b"}, {"eth_getBalance", "eth_getBalance"}, {"eth_getBalance", "eth_getBalancf"},
		{"Xth_getBalance", "eth_getBalance"}, {"12345678", "12345678"}, {"12345678", "12345679"},
		{"0123456789abcdef", "0123456789abcdef"}, {"0123456789abcdef", "0123456789abcdeF"},
		{"0123456789abcdefg", "0123456789abcdefg"}, {"0123456789abcdefg", "0123456789abcdefh"}, {"abc", "abcd"},
	} {
		if got, want := codec.SameText([]byte(c.p), c.s), c.p == c.s; got != want {
			t.Errorf("SameText(%q, %q) = %v", c.p, c.s, got)
		}
	}
	if !codec.SameText(nil, "") {
		t.Error("SameText(nil, \"\") = false")
	}
}

// FuzzGeneratedHelpers: ParseFixed, RootOf and BytesIn agree with Parse, Root,
// Fixed and Bytes on any input, and never panic.
func FuzzGeneratedHelpers(f *testing.F) {
	f.Add(handRequest(nil))
	f.Add(handResponse(nil))
	f.Fuzz(checkGeneratedHelpers)
}

// sameObject reports whether a and b read alike: nullness, and every byte
// and text slot of the first 64 bytes.
func sameObject(a, b codec.Object) bool {
	if a.IsNull() != b.IsNull() {
		return false
	}
	for off := range 64 {
		if a.Uint8(off) != b.Uint8(off) || !bytes.Equal(a.Bytes(off), b.Bytes(off)) || (a.Fixed(off) == nil) != (b.Fixed(off) == nil) {
			return false
		}
	}
	return true
}
