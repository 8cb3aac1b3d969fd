package codec_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

// addFixtureSeeds adds every message of the canonical fixtures
// (testdata/canonical in the repository).
func addFixtureSeeds(f *testing.F, add func([]byte)) {
	for _, name := range []string{"messages.json", "messages-more.json", "malformed.json"} {
		var cases struct{ Cases []struct{ Hex string } }
		if err := json.Unmarshal(fixture.Read(f, "fixtures/"+name), &cases); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		if len(cases.Cases) == 0 {
			f.Fatalf("%s: no cases", name)
		}
		for _, c := range cases.Cases {
			if b, err := hex.DecodeString(c.Hex); err == nil && len(b) < 4096 {
				add(b)
			}
		}
	}
}

// readEverything calls every accessor at offset off (and its neighbours),
// walks every list it finds, and returns a checksum so nothing is optimised
// away. It must never panic.
func readEverything(o codec.Object, off int, depth int) uint64 {
	var s uint64
	for d := -1; d <= 8; d++ {
		x := off + d
		s += uint64(o.Uint8(x)) + uint64(o.Uint16(x)) + uint64(o.Uint32(x)) + o.Uint64(x)
		s += uint64(o.Int8(x)) + uint64(o.Int16(x)) + uint64(o.Int32(x)) + uint64(o.Int64(x))
		s += uint64(o.Float32(x)) + uint64(o.Float64(x))
		if o.Bool(x) {
			s++
		}
		s += uint64(len(o.Text(x)) + len(o.Bytes(x)) + len(o.BytesFixed(x, d+1)))
		l := o.List(x)
		s += uint64(l.Len())
		for i := -1; i <= min(l.Len(), 64); i++ {
			s += uint64(l.Uint8(i)) + uint64(l.Uint16(i)) + uint64(l.Uint32(i)) + l.Uint64(i)
			s += uint64(len(l.BytesAt(i)) + len(l.Data(d)))
			if depth > 0 {
				s += readEverything(l.Object(i, d), 0, depth-1)
				s += readEverything(l.ObjectAt(i), 0, depth-1)
			}
		}
		for it := l.Iter(); it.Next(); {
			s += uint64(len(it.Bytes()))
			if depth > 0 {
				s += readEverything(it.Object(), 0, depth-1)
			}
		}
		if depth > 0 {
			s += readEverything(o.Object(x), 0, depth-1)
		}
	}
	return s
}

func FuzzParse(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b, 0, 8) })
	f.Add(varList100(), 0, 0)
	f.Fuzz(func(t *testing.T, data []byte, off, off2 int) {
		m, err := codec.Parse(data)
		if err != nil {
			if m.Size() != 0 || !m.Root().IsNull() {
				t.Fatal("a failed Parse returned a usable message")
			}
			var pe *codec.ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(data) || pe.Offset > codec.HeaderSize {
				t.Fatalf("Parse error %v: not a *ParseError inside the header", err)
			}
			return
		}
		if m.Size() < codec.HeaderSize || m.Size() > len(data) {
			t.Fatalf("size %d of %d bytes", m.Size(), len(data))
		}
		root := m.Root()
		sink += readEverything(root, off, 2) + readEverything(root, off2, 1)
		// CheckedBytes agrees with Bytes, and fails exactly where Bytes
		// reads nil from a non-null slot, at an offset inside the message.
		for _, o := range []int{off, off2} {
			got, err := root.CheckedBytes(o)
			if b := root.Bytes(o); !bytes.Equal(got, b) || (got == nil) != (b == nil) {
				t.Fatalf("CheckedBytes(%d) = %q, %v; Bytes = %q", o, got, err, b)
			}
			var pe *codec.ParseError
			if err != nil && (!errors.As(err, &pe) || !errors.Is(err, codec.ErrOutOfBounds)) {
				t.Fatalf("CheckedBytes(%d): %v", o, err)
			}
			// BytesAt, at the slot's position in the message, agrees.
			if !root.IsNull() && o >= 0 && o <= m.Size() {
				at, ok := m.BytesAt(root.Pos() + o)
				if ok != (err == nil) || !bytes.Equal(at, got) || (at == nil) != (got == nil) {
					t.Fatalf("BytesAt(%d) = %q, %v; CheckedBytes(%d) = %q, %v", root.Pos()+o, at, ok, o, got, err)
				}
			}
		}
		for _, pos := range []int{off, off2, -1, m.Size() - 8, m.Size() - 7} {
			m.BytesAt(pos) // never panics
		}
		sink += uint64(m.Version()) + uint64(m.Flags()) + uint64(m.Type())
	})
}

// FuzzSplit: Split never panics; on success msg and rest are b cut at the
// message's size, which Parse reads the same; ErrShort only where more
// bytes could complete a message (Parse accepts b with a size field's
// worth of bytes appended, when that is small), any other error also
// stops Parse; and a message Split found is found again whatever follows.
func FuzzSplit(f *testing.F) {
	addFixtureSeeds(f, func(b []byte) { f.Add(b, []byte(nil)) })
	f.Add(varList100(), []byte("ZAP\x00\x01\x00"))
	f.Add([]byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x20\x00\x00\x00"), []byte{})
	f.Fuzz(func(t *testing.T, b, more []byte) {
		msg, rest, err := codec.Split(b)
		if err != nil {
			var pe *codec.ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(b) || msg != nil || !bytes.Equal(rest, b) {
				t.Fatalf("Split error %v: msg %x, rest of %d bytes", err, msg, len(rest))
			}
			if _, perr := codec.Parse(b); perr == nil {
				t.Fatalf("Split failed (%v) where Parse succeeds", err)
			}
			if !errors.Is(err, codec.ErrShort) {
				// Nothing appended makes a message of b.
				if _, _, err2 := codec.Split(append(append([]byte(nil), b...), more...)); err2 == nil {
					t.Fatalf("Split(b) = %v, but b+%x splits", err, more)
				}
				return
			}
			if pe.Offset != len(b) {
				t.Fatalf("ErrShort at %d of %d bytes", pe.Offset, len(b))
			}
			// Complete b: to the header first, then to its size when small.
			c := append(append([]byte(nil), b...), make([]byte, max(0, codec.HeaderSize-len(b)))...)
			copy(c[len(b):], codec.Magic[min(len(b), 4):])
			if len(b) < 5 {
				c[4] = 1
			}
			if len(b) <= 12 {
				c[12] = codec.HeaderSize // the size field's missing bytes are 0
			}
			size := int(binary.LittleEndian.Uint32(c[12:]))
			if size > 1<<16 || size < codec.HeaderSize {
				// Too big to complete here, or completed by a missing
				// size byte that is not 0 (a size of 16 MiB and more).
				return
			}
			c = append(c, make([]byte, max(0, size-len(c)))...)
			if m, _, err := codec.Split(c); err != nil {
				t.Fatalf("ErrShort for %x, yet %x (completed) does not split: %v", b, c, err)
			} else if err == nil && !bytes.Equal(m[:min(len(b), len(m))], b[:min(len(b), len(m))]) {
				t.Fatal("completed message does not start with b")
			}
			return
		}
		if len(msg)+len(rest) != len(b) || !bytes.Equal(msg, b[:len(msg)]) || cap(msg) != len(msg) {
			t.Fatalf("msg %d bytes (cap %d) + rest %d bytes of %d", len(msg), cap(msg), len(rest), len(b))
		}
		m, perr := codec.Parse(b)
		if perr != nil || m.Size() != len(msg) {
			t.Fatalf("Split gave %d bytes, Parse %d, %v", len(msg), m.Size(), perr)
		}
		if m2, perr := codec.Parse(msg); perr != nil || m2.Size() != len(msg) {
			t.Fatalf("Parse(msg) = %d, %v", m2.Size(), perr)
		}
		joined := append(append([]byte(nil), b...), more...)
		if m3, r3, err := codec.Split(joined); err != nil || !bytes.Equal(m3, msg) || len(r3) != len(rest)+len(more) {
			t.Fatalf("with %x appended: %x, %v", more, m3, err)
		}
	})
}

// FuzzBuildParse builds a random tree seeded by the fuzzer and checks that
// it reads back.
func FuzzBuildParse(f *testing.F) {
	for i := range 8 {
		f.Add(uint64(i), uint64(i*7+1))
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		want := randObject(r, 3)
		var b codec.Builder
		b.Reset(nil)
		b.SetRoot(build(&b, want))
		m, err := codec.Parse(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		verify(t, "root", m.Root(), want)
	})
}
