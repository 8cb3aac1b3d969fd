package codec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata/codec")

// goldenCases are messages built by this package whose bytes are kept in
// ../testdata/codec/<name>.hex and reviewed like code: a change to the
// builder that moves a byte shows up as a diff there.
var goldenCases = []struct {
	name  string
	build func(b *codec.Builder)
}{
	{"eth_request", func(b *codec.Builder) { buildRequest(b, nil) }},
	{"eth_response", func(b *codec.Builder) { buildResponse(b, nil) }},
	{"empty_root", func(b *codec.Builder) {
		b.Reset(nil)
		b.SetRoot(b.StartObject(8).Finish())
	}},
	{"version2_flags", func(b *codec.Builder) {
		b.Reset(nil)
		b.SetVersion(codec.Version2)
		b.SetFlags(0xC800 | codec.FlagSigned)
		o := b.StartObject(4)
		o.SetUint32(0, 200)
		b.SetRoot(o.Finish())
	}},
	{"nested_both_ways", func(b *codec.Builder) {
		b.Reset(nil)
		before := b.StartObject(12)
		before.SetInt32(0, -1)
		before.SetText(4, "before")
		ref := before.Finish()
		root := b.StartObject(16)
		root.SetText(0, "root")
		root.SetObject(8, ref)
		after := b.StartObject(5)
		after.SetUint8(4, 9)
		root.SetObject(12, after.Finish())
		b.SetRoot(root.Finish())
	}},
	{"lists", func(b *codec.Builder) {
		b.Reset(nil)
		root := b.StartObject(40)
		l16 := b.StartList(2)
		l16.AddUint16(0xBEEF)
		l16.AddUint16(7)
		root.SetList(0, l16.Finish())
		lb := b.StartList(1)
		lb.AddBytes([]byte("abc"))
		root.SetList(8, lb.Finish())
		empty := b.StartList(8)
		root.SetList(16, empty.Finish())
		fixed := b.StartList(3)
		fixed.AddElement([]byte{1, 2, 3})
		fixed.AddElement([]byte{4, 5, 6})
		root.SetList(24, fixed.Finish())
		vl := b.StartList(0)
		vl.AddMessage([]byte("raw element"))
		vl.AddMessage(nil)
		root.SetList(32, vl.Finish())
		b.SetRoot(root.Finish())
	}},
	{"interleaved_tails", func(b *codec.Builder) {
		b.Reset(nil)
		root := b.StartObject(24)
		root.SetText(0, "root-first")
		child := b.StartObject(8)
		child.SetText(0, "child")
		root.SetText(16, "root-second")
		root.SetObject(8, child.Finish())
		b.SetRoot(root.Finish())
	}},
	{"raw_blob_before_root", func(b *codec.Builder) {
		b.Reset(nil)
		b.WriteBytes([]byte("blob"))
		o := b.StartObject(8)
		o.SetFloat64(0, -0.5)
		b.SetRoot(o.Finish())
	}},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			var b codec.Builder
			c.build(&b)
			got := b.Finish()
			if err := b.Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := codec.Parse(got); err != nil {
				t.Fatalf("golden message does not parse: %v", err)
			}
			path := filepath.Join("..", "testdata", "codec", c.name+".hex")
			text := hex.EncodeToString(got) + "\n"
			if *update {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./codec -update to create it)", err)
			}
			wantBytes, err := hex.DecodeString(strings.TrimSpace(string(want)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantBytes) {
				t.Fatalf("bytes differ from %s\n got %x\nwant %x", path, got, wantBytes)
			}
		})
	}
}

// TestGoldenReads pins what the reader sees in the hand-built goldens, the
// cases the shared fixtures do not have.
func TestGoldenReads(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	for _, c := range goldenCases {
		c.build(&b)
		m, err := codec.Parse(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		root := m.Root()
		switch c.name {
		case "nested_both_ways":
			if got := root.Object(8).Text(4); got != "before" {
				t.Errorf("backward child text = %q", got)
			}
			if got := root.Object(8).Int32(0); got != -1 {
				t.Errorf("backward child int = %d", got)
			}
			if got := root.Object(12).Uint8(4); got != 9 {
				t.Errorf("forward child u8 = %d", got)
			}
			if root.Text(0) != "root" {
				t.Errorf("root text = %q", root.Text(0))
			}
		case "lists":
			if l := root.List(0); l.Len() != 2 || l.Uint16(0) != 0xBEEF || l.Uint16(1) != 7 {
				t.Errorf("u16 list = %d %d %d", l.Len(), l.Uint16(0), l.Uint16(1))
			}
			if got := string(root.List(8).Data(1)); got != "abc" {
				t.Errorf("byte list = %q", got)
			}
			if l := root.List(16); l.Len() != 0 || !l.IsNull() {
				t.Errorf("empty list: len %d null %v", l.Len(), l.IsNull())
			}
			if got := root.List(24).Data(3); !bytes.Equal(got, []byte{1, 2, 3, 4, 5, 6}) {
				t.Errorf("fixed list = %v", got)
			}
			vl := root.List(32)
			if vl.Len() != 2 || string(vl.BytesAt(0)) != "raw element" || len(vl.BytesAt(1)) != 0 || vl.BytesAt(2) != nil {
				t.Errorf("var list = %d %q %q", vl.Len(), vl.BytesAt(0), vl.BytesAt(1))
			}
		case "interleaved_tails":
			if root.Text(0) != "root-first" || root.Text(16) != "root-second" || root.Object(8).Text(0) != "child" {
				t.Errorf("interleaved tails read %q %q %q", root.Text(0), root.Text(16), root.Object(8).Text(0))
			}
		case "version2_flags":
			if m.Version() != 2 || m.Type() != 200 || m.Flags()&codec.FlagSigned == 0 {
				t.Errorf("header: version %d type %d flags %#x", m.Version(), m.Type(), m.Flags())
			}
		}
	}
}

func TestBuilderMisuse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		use  func(b *codec.Builder)
		want string
	}{
		{"field past the end", func(b *codec.Builder) { b.StartObject(4).SetUint64(0, 1) }, "outside object"},
		{"negative offset", func(b *codec.Builder) { b.StartObject(8).SetUint32(-1, 1) }, "outside object"},
		{"text slot past the end", func(b *codec.Builder) { b.StartObject(8).SetText(4, "x") }, "outside object"},
		{"wrong element width", func(b *codec.Builder) {
			l := b.StartList(4)
			l.AddUint64(1)
		}, "8-byte element"},
		{"variable element in a flat list", func(b *codec.Builder) {
			l := b.StartList(4)
			if buf := l.BeginElement(); buf != nil {
				panic("BeginElement on a flat list gave a buffer")
			}
		}, "0-byte element in a list of 4-byte elements"},
		{"empty flat element in a variable-element list", func(b *codec.Builder) {
			l := b.StartList(0)
			l.AddElement(nil)
		}, "AddElement of an empty element in a variable-element list"},
		{"empty flat element in a flat list", func(b *codec.Builder) {
			l := b.StartList(4)
			l.AddElement([]byte{})
		}, "0-byte element in a list of 4-byte elements"},
		{"negative list element size", func(b *codec.Builder) {
			l := b.StartList(-1)
			l.AddUint32(1) // a zero ListBuilder: nothing written, nothing more recorded
		}, "list element size -1"},
		{"first misuse wins", func(b *codec.Builder) {
			l := b.StartList(4)
			l.AddUint64(1)  // recorded inline
			b.SetVersion(7) // recorded by a call, later
		}, "8-byte element in a list of 4-byte elements"},
		{"unfinished object", func(b *codec.Builder) { b.StartObject(8).SetText(0, "lost") }, "unfinished"},
		{"bad version", func(b *codec.Builder) { b.SetVersion(3) }, "version 3"},
		{"end without begin", func(b *codec.Builder) {
			l := b.StartList(0)
			l.EndElement(nil)
		}, "EndElement"},
		{"zero object builder", func(b *codec.Builder) {
			var o codec.ObjectBuilder
			o.SetUint32(0, 1)
			o.SetText(0, "x")
			_ = o.Finish()
			b.StartObject(-1)
		}, "object size -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b codec.Builder
			b.Reset(nil)
			c.use(&b)
			out := b.Finish()
			if err := b.Err(); !errors.Is(err, codec.ErrBuilder) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Err() = %v, want one containing %q", err, c.want)
			}
			if _, err := codec.Parse(out); err != nil {
				t.Fatalf("a misused builder still finishes a parseable message: %v", err)
			}
		})
	}
}

// TestFinishWithoutReset: a Builder not Reset since it was made or
// Released has no header to finish, even with objects or lists written
// since: Finish returns nil and Err reports it.
func TestFinishWithoutReset(t *testing.T) {
	t.Parallel()
	released := func(b *codec.Builder) {
		b.Reset(make([]byte, 0, 64))
		b.SetRoot(b.StartObject(8).Finish())
		b.Release()
	}
	for _, c := range []struct {
		name string
		use  func(b *codec.Builder)
	}{
		{"zero Builder", func(b *codec.Builder) {}},
		{"object started in a zero Builder", func(b *codec.Builder) {
			b.SetRoot(b.StartObject(16).Finish())
		}},
		{"list started in a zero Builder", func(b *codec.Builder) {
			l := b.StartList(1)
			l.AddBytes(make([]byte, 24))
			l.Finish()
		}},
		{"after Release", released},
		{"object started after Release", func(b *codec.Builder) {
			released(b)
			o := b.StartObject(24)
			o.SetUint64(0, 1)
			b.SetRoot(o.Finish())
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b codec.Builder
			c.use(&b)
			if out := b.Finish(); out != nil || b.Err() == nil || !strings.Contains(b.Err().Error(), "Finish without Reset") {
				t.Fatalf("Finish = %x, %v; want nil and Finish without Reset", out, b.Err())
			}
		})
	}
}

// TestListHugeStride: a stride no element can have gives a null object
// rather than wrapping around to some other position.
func TestListHugeStride(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	b.Reset(nil)
	root := b.StartObject(8)
	l := b.StartList(4)
	l.AddUint32(1)
	l.AddUint32(2)
	root.SetList(0, l.Finish())
	b.SetRoot(root.Finish())
	m, err := codec.Parse(b.Finish())
	if err != nil {
		t.Fatal(err)
	}
	list := m.Root().List(0)
	for _, stride := range []int{math.MaxInt/2 + 1, math.MaxInt, math.MaxInt/4 + 1} { // 1<<62, 1<<63-1, 1<<61 on 64-bit
		if o := list.Object(1, stride); !o.IsNull() {
			t.Errorf("Object(1, %d) is not null", stride)
		}
	}
}

// TestMisusedListWritesNothing: a list element refused as misuse, or
// abandoned, leaves no trace in the list: the count and the elements read
// back are those of the elements added and ended, and the list's bytes end
// with the last of them.
func TestMisusedListWritesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		add     func(l *codec.ListBuilder)
		want    []string // the elements read back
		wantErr string   // "": no misuse
	}{
		{"AddElement(nil) in a variable-element list", func(l *codec.ListBuilder) {
			l.AddMessage([]byte("ab"))
			l.AddElement(nil)
			l.AddMessage([]byte("cd"))
		}, []string{"ab", "cd"}, "AddElement of an empty element"},
		{"AddElement of 2 bytes in a variable-element list", func(l *codec.ListBuilder) {
			l.AddMessage([]byte("ab"))
			l.AddElement([]byte("xy"))
		}, []string{"ab"}, "2-byte element"},
		{"BeginElement again abandons the element begun", func(l *codec.ListBuilder) {
			l.AddMessage([]byte("ab"))
			_ = append(l.BeginElement(), "lost"...)
			l.EndElement(append(l.BeginElement(), "cd"...))
		}, []string{"ab", "cd"}, ""},
		{"BeginElement again, the first one grown", func(l *codec.ListBuilder) {
			_ = append(l.BeginElement(), bytes.Repeat([]byte("x"), 1000)...)
			l.EndElement(append(l.BeginElement(), "cd"...))
			l.AddMessage([]byte("ef"))
		}, []string{"cd", "ef"}, ""},
		{"Finish between BeginElement and EndElement", func(l *codec.ListBuilder) {
			l.AddMessage([]byte("ab"))
			_ = append(l.BeginElement(), "lost"...)
		}, []string{"ab"}, "list finished between BeginElement and EndElement"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b codec.Builder
			b.Reset(nil)
			root := b.StartObject(8)
			l := b.StartList(0)
			c.add(&l)
			lr := l.Finish()
			end := b.Len()
			root.SetList(0, lr)
			b.SetRoot(root.Finish())
			msg := b.Finish()
			if err := b.Err(); c.wantErr == "" && err != nil ||
				c.wantErr != "" && (!errors.Is(err, codec.ErrBuilder) || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Err() = %v, want %q", err, c.wantErr)
			}
			m, err := codec.Parse(msg)
			if err != nil {
				t.Fatal(err)
			}
			list := m.Root().List(0)
			var got []string
			for i := range list.Len() {
				got = append(got, string(list.BytesAt(i)))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("list reads %q (%x), want %q", got, msg, c.want)
			}
			// The list ends with its last element: 24 is where it starts
			// (after the header and the 8-byte root).
			n := 0
			for _, e := range c.want {
				n += codec.ElementHeaderSize + len(e)
			}
			if end != 24+n {
				t.Fatalf("list ends at %d, want %d (%x)", end, 24+n, msg)
			}
		})
	}
}

// TestZeroSizeObjectFinish: a zero-size object takes no bytes, so the next
// object starts at its position. Finishing it writes nothing (it has no
// values): the values of the object started there are written at that
// object's Finish (docs/wire.md §2), so where the zero-size Finish comes
// does not change the message.
func TestZeroSizeObjectFinish(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  func(c codec.ObjectBuilder) // c's values, before the zero-size Finish
		then func(b *codec.Builder, c codec.ObjectBuilder)
	}{
		{"list built before the next object finishes", func(c codec.ObjectBuilder) {
			c.SetText(0, "cc")
		}, func(b *codec.Builder, c codec.ObjectBuilder) {
			l := b.StartList(1)
			l.AddUint8(5)
			c.SetList(8, l.Finish())
		}},
		{"value set empty after", func(c codec.ObjectBuilder) {
			c.SetText(0, "abc")
		}, func(b *codec.Builder, c codec.ObjectBuilder) {
			c.SetText(0, "") // reads as empty, not null
		}},
		{"values set after", func(c codec.ObjectBuilder) {
			c.SetBytes(0, []byte{1, 2})
		}, func(b *codec.Builder, c codec.ObjectBuilder) {
			c.SetText(8, "later")
		}},
	}
	build := func(set, then func(*codec.Builder, codec.ObjectBuilder), zeroFirst bool) []byte {
		var b codec.Builder
		b.Reset(nil)
		root := b.StartObject(8)
		z := b.StartObject(0)
		c := b.StartObject(16) // at z's position
		set(&b, c)
		var zr codec.Ref
		if zeroFirst {
			zr = z.Finish()
		}
		then(&b, c)
		cr := c.Finish()
		if !zeroFirst {
			zr = z.Finish()
		}
		root.SetObject(0, zr)
		root.SetObject(4, cr)
		b.SetRoot(root.Finish())
		msg := b.Finish()
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := func(_ *codec.Builder, o codec.ObjectBuilder) { c.set(o) }
			want := build(set, c.then, false)
			if got := build(set, c.then, true); !bytes.Equal(got, want) {
				t.Fatalf("zero-size object finished first:\n got %x\nwant %x", got, want)
			}
		})
	}
}
