//go:build !race

package codec_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

// touch performs the read named by typ without rendering its value, so that
// the only allocations counted are the reader's own.
func touch(o codec.Object, typ string, off, fixedN int) {
	switch typ {
	case "bool":
		if o.Bool(off) {
			sink++
		}
	case "u8":
		sink += uint64(o.Uint8(off))
	case "u16":
		sink += uint64(o.Uint16(off))
	case "u32":
		sink += uint64(o.Uint32(off))
	case "u64":
		sink += o.Uint64(off)
	case "i8":
		sink += uint64(o.Int8(off))
	case "i16":
		sink += uint64(o.Int16(off))
	case "i32":
		sink += uint64(o.Int32(off))
	case "i64":
		sink += uint64(o.Int64(off))
	case "f32":
		sink += uint64(o.Float32(off))
	case "f64":
		sink += uint64(o.Float64(off))
	case "text":
		sink += uint64(len(o.Text(off)))
	case "bytes":
		sink += uint64(len(o.Bytes(off)))
	case "bytes_is_nil":
		if o.Bytes(off) == nil {
			sink++
		}
	case "object_is_null", "object_null":
		if o.Object(off).IsNull() {
			sink++
		}
	case "list_null":
		if o.List(off).IsNull() {
			sink++
		}
	case "root_null":
		if o.IsNull() {
			sink++
		}
	case "list_len":
		sink += uint64(o.List(off).Len())
	case "list<u8>", "list<u32>", "list<u64>":
		l := o.List(off)
		for i := range l.Len() {
			sink += uint64(l.Uint8(i)) + uint64(l.Uint32(i)) + l.Uint64(i)
		}
	default:
		if !strings.HasPrefix(typ, "bytes_fixed[") {
			panic("touch: unknown read type " + typ)
		}
		sink += uint64(len(o.BytesFixed(off, fixedN)))
	}
}

type compiledRead struct {
	kind        string // "", "object", "var_list"
	slot, index int
	typ         string
	off, fixedN int
}

func TestAllocsReadFixtures(t *testing.T) {
	for _, c := range loadMessages(t) {
		msg := fixture.Hex(t, c.Hex)
		var reads []compiledRead
		for _, r := range c.Reads {
			cr := compiledRead{typ: r.Type, off: r.Off}
			if len(r.Path) > 0 {
				cr.kind = unquote(r.Path[0])
				cr.slot = int(parseInt(t, r.Path[1]))
				if len(r.Path) > 2 {
					cr.index = int(parseInt(t, r.Path[2]))
				}
			}
			if n, ok := strings.CutPrefix(r.Type, "bytes_fixed["); ok {
				cr.fixedN, _ = strconv.Atoi(strings.TrimSuffix(n, "]"))
			}
			reads = append(reads, cr)
		}
		allocs := testing.AllocsPerRun(100, func() {
			m, err := codec.Parse(msg)
			if err != nil {
				panic(err)
			}
			root := m.Root()
			for _, r := range reads {
				o := root
				switch r.kind {
				case "object":
					o = root.Object(r.slot)
				case "var_list":
					o = root.List(r.slot).ObjectAt(r.index)
				}
				touch(o, r.typ, r.off, r.fixedN)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: reading allocates %v times, want 0", c.Name, allocs)
		}
	}
}

func TestAllocsBuildFixtures(t *testing.T) {
	for _, c := range loadMessages(t) {
		var b codec.Builder
		p := compile(t, c.Ops)
		s := p.newState(&b)
		buf := make([]byte, 0, 128<<10)
		allocs := testing.AllocsPerRun(100, func() {
			buf = p.run(s, buf[:0])
		})
		if allocs != 0 {
			t.Errorf("%s: building into a warm buffer allocates %v times, want 0", c.Name, allocs)
		}
	}
}

// TestAllocsManyTails covers the spill past the inline record of pending
// text values: a warm Builder still does not allocate.
func TestAllocsManyTails(t *testing.T) {
	var b codec.Builder
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset(buf[:0])
		o := b.StartObject(8 * 40)
		for i := range 40 {
			o.SetText(8*i, "tail")
		}
		b.SetRoot(o.Finish())
		buf = b.Finish()
	})
	if allocs != 0 {
		t.Errorf("40 text fields allocate %v times, want 0", allocs)
	}
}

// Parse, CheckedBytes and BytesAt allocate nothing when the input is well
// formed.
func TestCheckedReadsAllocs(t *testing.T) {
	msg := checkedMsg(t)
	if n := testing.AllocsPerRun(100, func() {
		m, err := codec.Parse(msg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Root().CheckedBytes(0)
		if err != nil {
			t.Fatal(err)
		}
		sink += uint64(len(b))
		if b, ok := m.BytesAt(16); ok {
			sink += uint64(len(b))
		}
	}); n != 0 {
		t.Fatalf("Parse + CheckedBytes + BytesAt: %v allocs, want 0", n)
	}
}

// TestAllocsSplit: Split allocates nothing when it succeeds.
func TestAllocsSplit(t *testing.T) {
	msg := splitSample(t, "no allocations")
	stream := append(append([]byte(nil), msg...), msg...)
	if n := testing.AllocsPerRun(100, func() {
		m, rest, err := codec.Split(stream)
		if err != nil || len(m) != len(msg) || len(rest) != len(msg) {
			t.Fatal(m, rest, err)
		}
	}); n != 0 {
		t.Fatalf("Split: %v allocations, want 0", n)
	}
}
