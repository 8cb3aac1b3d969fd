package codec_test

import (
	"bytes"
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
