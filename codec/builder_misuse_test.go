package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// buildMisuse builds a message whose root object has 16 bytes, set by
// steps, and returns the message and the Builder's error. A panic is
// returned as an error instead of ending the test run.
func buildMisuse(b *codec.Builder, dst []byte, steps func(b *codec.Builder, root codec.ObjectBuilder)) (msg []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	b.Reset(dst)
	root := b.StartObject(16)
	steps(b, root)
	b.SetRoot(root.Finish())
	msg = b.Finish()
	return msg, b.Err()
}

// checkMisuse builds the message with misuse and the message with only the
// calls that are not misuse (clean), and checks that they are the same
// bytes and that the first is reported as misuse whose text holds want
// ("": no misuse at all).
func checkMisuse(t *testing.T, misuse, clean func(b *codec.Builder, root codec.ObjectBuilder), want string) {
	t.Helper()
	var b codec.Builder
	wantMsg, err := buildMisuse(&b, nil, clean)
	if wantMsg == nil {
		t.Fatalf("the calls that are not misuse: %v", err)
	}
	got, err := buildMisuse(&b, nil, misuse)
	if want == "" && err != nil || want != "" && (!errors.Is(err, codec.ErrBuilder) || !strings.Contains(err.Error(), want)) {
		t.Errorf("Err() = %v, want %q", err, want)
	}
	if !bytes.Equal(got, wantMsg) {
		t.Fatalf("misuse wrote bytes:\n got %x\nwant %x", got, wantMsg)
	}
	if _, err := codec.Parse(got); err != nil {
		t.Fatal(err)
	}
}

// TestOneListOpen: while a list is open, a call that would append to the
// buffer (another StartList, StartObject, WriteBytes, the Finish of an
// object with values) is misuse and writes nothing, so the list's elements
// stay together; so is the use of a list after its Finish. Objects may be
// started before a list and set while it is open.
func TestOneListOpen(t *testing.T) {
	t.Parallel()
	type steps = func(b *codec.Builder, root codec.ObjectBuilder)
	cases := []struct {
		name          string
		misuse, clean steps
		want          string
	}{
		{"StartList while a list is open, both written to", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			c := b.StartList(1)
			c.AddUint8('x')
			a.AddUint8('b')
			root.SetList(0, a.Finish())
			root.SetList(8, c.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			a.AddUint8('b')
			root.SetList(0, a.Finish())
		}, "StartList while a list is open"},
		{"StartList while an element is begun", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			buf := a.BeginElement()
			c := b.StartList(0)
			c.AddMessage([]byte("xyz"))
			a.EndElement(append(buf, "ab"...))
			root.SetList(0, a.Finish())
			root.SetList(8, c.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			a.EndElement(append(a.BeginElement(), "ab"...))
			root.SetList(0, a.Finish())
		}, "StartList while a list is open"},
		{"AddMessage between BeginElement and EndElement", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			buf := append(a.BeginElement(), "ab"...)
			a.AddMessage([]byte("xyz")) // where the element was to go
			a.EndElement(buf)
			root.SetList(0, a.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			a.AddMessage([]byte("xyz"))
			root.SetList(0, a.Finish())
		}, "after something was written since BeginElement"},
		{"StartObject while a list is open", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(4)
			a.AddUint32(1)
			o := b.StartObject(8)
			o.SetUint64(0, 7)
			a.AddUint32(2)
			root.SetList(0, a.Finish())
			root.SetObject(8, o.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(4)
			a.AddUint32(1)
			a.AddUint32(2)
			root.SetList(0, a.Finish())
		}, "StartObject while a list is open"},
		{"WriteBytes while a list is open", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			b.WriteBytes([]byte("blob"))
			a.AddUint8('b')
			root.SetList(0, a.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			a.AddUint8('b')
			root.SetList(0, a.Finish())
		}, "WriteBytes while a list is open"},
		{"object with a text value finished while a list is open", func(b *codec.Builder, root codec.ObjectBuilder) {
			o := b.StartObject(8)
			o.SetText(0, "tail")
			a := b.StartList(1)
			a.AddUint8('a')
			root.SetObject(8, o.Finish())
			a.AddUint8('b')
			root.SetList(0, a.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			o := b.StartObject(8)
			o.SetText(0, "tail") // never written: its object is not finished
			a := b.StartList(1)
			a.AddUint8('a')
			a.AddUint8('b')
			root.SetList(0, a.Finish())
		}, "finished while a list is open"},
		{"list added to after its Finish, another list open", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			ar := a.Finish()
			c := b.StartList(1)
			c.AddUint8('x')
			a.AddUint8('b')
			c.AddUint8('y')
			root.SetList(0, ar)
			root.SetList(8, c.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			ar := a.Finish()
			c := b.StartList(1)
			c.AddUint8('x')
			c.AddUint8('y')
			root.SetList(0, ar)
			root.SetList(8, c.Finish())
		}, "element added to a list builder used after its Finish"},
		{"EndElement after the list's Finish, another list open", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			a.AddMessage([]byte("ab"))
			buf := append(a.BeginElement(), "lost"...)
			ar := a.Finish() // the element begun is not part of the list
			c := b.StartList(0)
			c.AddMessage([]byte("xyz"))
			a.EndElement(buf)
			root.SetList(0, ar)
			root.SetList(8, c.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(0)
			a.AddMessage([]byte("ab"))
			ar := a.Finish()
			c := b.StartList(0)
			c.AddMessage([]byte("xyz"))
			root.SetList(0, ar)
			root.SetList(8, c.Finish())
		}, "list finished between BeginElement and EndElement"},
		{"Finish twice", func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			root.SetList(0, a.Finish())
			root.SetList(8, a.Finish())
		}, func(b *codec.Builder, root codec.ObjectBuilder) {
			a := b.StartList(1)
			a.AddUint8('a')
			root.SetList(0, a.Finish())
		}, "list builder used after its Finish"},
		{"objects started before a list, set and finished while it is open", func(b *codec.Builder, root codec.ObjectBuilder) {
			o := b.StartObject(16)
			p := b.StartObject(8)
			o.SetText(0, "before")
			a := b.StartList(4)
			a.AddUint32(1)
			o.SetUint64(8, 5)
			p.SetUint32(0, 6)
			root.SetObject(12, p.Finish()) // no values: writes nothing
			a.AddUint32(2)
			root.SetList(0, a.Finish())
			root.SetObject(8, o.Finish())
		}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clean := c.clean
			if clean == nil {
				clean = c.misuse
			}
			checkMisuse(t, c.misuse, clean, c.want)
		})
	}
}

// TestStaleListAfterReset: a ListBuilder from before Reset (or Release)
// writes nothing into the next message, and its Finish is refused.
func TestStaleListAfterReset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// before is called in a first message and returns what after,
		// called in the next one, misuses.
		before func(b *codec.Builder) *codec.ListBuilder
		after  func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder)
		want   string
	}{
		{"element added", func(b *codec.Builder) *codec.ListBuilder {
			l := b.StartList(4)
			l.AddUint32(1)
			return &l
		}, func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder) {
			stale.AddUint32(2)
		}, "element added to a list builder used after its Finish or after Reset"},
		{"element added while a list of the message is open", func(b *codec.Builder) *codec.ListBuilder {
			l := b.StartList(1)
			return &l
		}, func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder) {
			l := b.StartList(1)
			l.AddUint8('a')
			stale.AddUint8('x')
			l.AddUint8('b')
			root.SetList(0, l.Finish())
		}, "after Reset"},
		{"finished", func(b *codec.Builder) *codec.ListBuilder {
			l := b.StartList(4)
			l.AddUint32(1)
			return &l
		}, func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder) {
			root.SetList(0, stale.Finish())
		}, "list builder used after its Finish or after Reset"},
		{"element ended", func(b *codec.Builder) *codec.ListBuilder {
			l := b.StartList(0)
			buf := l.BeginElement()
			l.EndElement(append(buf, "one"...))
			_ = append(l.BeginElement(), "two"...)
			return &l
		}, func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder) {
			// The element's buffer is the one of the first message,
			// longer than this one.
			stale.EndElement(append(make([]byte, 1000), "two"...))
		}, "EndElement without BeginElement, after the list's Finish or Reset"},
		{"the list left open", func(b *codec.Builder) *codec.ListBuilder {
			l := b.StartList(4)
			l.AddUint32(1)
			return &l
		}, func(b *codec.Builder, root codec.ObjectBuilder, stale *codec.ListBuilder) {
			// Reset closed it: a list of this message may start.
			l := b.StartList(4)
			l.AddUint32(2)
			root.SetList(0, l.Finish())
			stale.AddUint32(3)
		}, "after Reset"},
	}
	for _, c := range cases {
		for _, release := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/release=%v", c.name, release), func(t *testing.T) {
				var b codec.Builder
				var stale *codec.ListBuilder
				buf := make([]byte, 0, 4096)
				first, err := buildMisuse(&b, buf, func(b *codec.Builder, _ codec.ObjectBuilder) {
					stale = c.before(b)
				})
				if err != nil || first == nil {
					t.Fatalf("first message: %v", err)
				}
				if release {
					b.Release()
				}
				var clean codec.Builder
				wantMsg, err := buildMisuse(&clean, nil, func(b *codec.Builder, root codec.ObjectBuilder) {
					c.after(b, root, new(codec.ListBuilder)) // a zero ListBuilder writes nothing
				})
				if err != nil {
					t.Fatalf("the calls that are not misuse: %v", err)
				}
				got, err := buildMisuse(&b, buf[:0], func(b *codec.Builder, root codec.ObjectBuilder) {
					c.after(b, root, stale)
				})
				if !errors.Is(err, codec.ErrBuilder) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Err() = %v, want %q", err, c.want)
				}
				if !bytes.Equal(got, wantMsg) {
					t.Fatalf("the stale list wrote bytes:\n got %x\nwant %x", got, wantMsg)
				}
			})
		}
	}
}

// TestStaleObjectAfterReset: an ObjectBuilder from before Reset (or
// Release) writes nothing into the next message, wherever its section lay,
// never panics, and its Finish is refused.
func TestStaleObjectAfterReset(t *testing.T) {
	t.Parallel()
	type after = func(b *codec.Builder, root, stale codec.ObjectBuilder)
	// child builds an object of this message, where the stale one lay.
	child := func(b *codec.Builder, root codec.ObjectBuilder, stale codec.ObjectBuilder, use func(stale codec.ObjectBuilder)) {
		c := b.StartObject(16)
		c.SetUint32(0, 5)
		c.SetText(8, "fresh")
		use(stale)
		root.SetObject(0, c.Finish())
	}
	cases := []struct {
		name  string
		size  int // of the stale object, started right after the root
		after after
	}{
		{"setter past the end of this message", 512, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			stale.SetUint64(500, 1)
		}},
		{"every setter past the end of this message", 512, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			stale.SetBool(400, true)
			stale.SetUint8(401, 1)
			stale.SetInt16(402, -1)
			stale.SetFloat32(404, 1.5)
			stale.SetFloat64(408, 2.5)
			stale.SetBytesFixed(416, []byte("fixed"))
			stale.SetText(424, "text")
			stale.SetBytes(432, []byte("bytes"))
			stale.SetObject(440, 16)
			stale.SetList(448, codec.ListRef{})
		}},
		{"setter over an object of this message", 16, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			child(b, root, stale, func(stale codec.ObjectBuilder) { stale.SetUint32(0, 0xdead) })
		}},
		{"text set over an object of this message", 16, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			child(b, root, stale, func(stale codec.ObjectBuilder) {
				stale.SetText(0, "stale")
				stale.SetText(8, "")
			})
		}},
		{"slots set over an object of this message", 16, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			l := b.StartList(1)
			l.AddUint8(1)
			lr := l.Finish()
			child(b, root, stale, func(stale codec.ObjectBuilder) {
				stale.SetList(0, lr)
				stale.SetObject(8, 16)
			})
		}},
		{"finished, with a text value set before Reset", 16, func(b *codec.Builder, root, stale codec.ObjectBuilder) {
			child(b, root, stale, func(codec.ObjectBuilder) {})
			root.SetObject(8, stale.Finish())
		}},
	}
	for _, c := range cases {
		for _, release := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/release=%v", c.name, release), func(t *testing.T) {
				var b codec.Builder
				var stale codec.ObjectBuilder
				buf := make([]byte, 0, 4096)
				first, err := buildMisuse(&b, buf, func(b *codec.Builder, _ codec.ObjectBuilder) {
					stale = b.StartObject(c.size)
					stale.SetText(0, "first") // pending at Reset
				})
				if first == nil {
					t.Fatalf("first message: %v", err)
				}
				if release {
					b.Release()
				}
				var clean codec.Builder
				wantMsg, err := buildMisuse(&clean, nil, func(b *codec.Builder, root codec.ObjectBuilder) {
					c.after(b, root, codec.ObjectBuilder{}) // writes nothing
				})
				if err != nil {
					t.Fatalf("the calls that are not misuse: %v", err)
				}
				got, err := buildMisuse(&b, buf[:0], func(b *codec.Builder, root codec.ObjectBuilder) {
					c.after(b, root, stale)
				})
				if !errors.Is(err, codec.ErrBuilder) || !strings.Contains(err.Error(), "object builder used after Reset") {
					t.Errorf("Err() = %v, want the stale object reported", err)
				}
				if !bytes.Equal(got, wantMsg) {
					t.Fatalf("the stale object wrote bytes:\n got %x\nwant %x", got, wantMsg)
				}
			})
		}
	}
}

// misuseRun is one run of a FuzzBuilderMisuse op sequence.
type misuseRun struct {
	msgs  [][]byte // a copy of every message Finish returned
	first int      // the op that recorded the first misuse of a message, or -1
	// stop: the first misuse is one that still writes (Finish of a list with
	// an element begun finishes the list; Builder.Finish writes the header).
	stop bool
	errs []error // Err() after each Builder.Finish
}

// runMisuseOps runs ops (3 bytes each: op, a, c) on b. An op in skip is
// replaced by what the Builder gives back when it refuses it as misuse,
// without calling it: a zero ObjectBuilder or ListBuilder, a zero Ref or
// ListRef, a nil element buffer, or nothing.
func runMisuseOps(ops []byte, skip map[int]bool) misuseRun {
	var b codec.Builder
	run := misuseRun{first: -1}
	store := make([]byte, 0, 96) // reused by every Reset that asks for it
	var (
		objs  []codec.ObjectBuilder
		lists []*codec.ListBuilder
		elems [][]byte // the buffer BeginElement gave, per list
		refs  []codec.Ref
		lrefs []codec.ListRef
	)
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	for i := 0; i+3 <= len(ops); i += 3 {
		op, a, c := ops[i]%16, int(ops[i+1]), int(ops[i+2])
		skipped := skip[i]
		obj := func() codec.ObjectBuilder {
			if len(objs) == 0 {
				return codec.ObjectBuilder{}
			}
			return objs[a%len(objs)]
		}
		list := func() *codec.ListBuilder {
			if len(lists) == 0 {
				return new(codec.ListBuilder)
			}
			return lists[a%len(lists)]
		}
		off := c%48 - 4 // a few offsets are negative
		switch op {
		case 0, 1: // Reset, into the reused store or a new buffer; Release
			if op == 1 {
				b.Release()
			}
			if a&1 == 0 {
				b.Reset(store[:0])
			} else {
				b.Reset(nil)
			}
			refs, lrefs = nil, nil // positions in a message, not builders
		case 2:
			size := c % 40
			if a%16 == 0 {
				size = -1
			}
			if skipped {
				objs = append(objs, codec.ObjectBuilder{})
			} else {
				objs = append(objs, b.StartObject(size))
			}
		case 3:
			l := new(codec.ListBuilder)
			if !skipped {
				*l = b.StartList([]int{0, 1, 2, 4, 8, 0, 4, -1}[c%8])
			}
			lists = append(lists, l)
			elems = append(elems, nil)
		case 4: // scalar setters
			if skipped {
				break
			}
			o := obj()
			switch c % 5 {
			case 0:
				o.SetBool(off, a&1 != 0)
			case 1:
				o.SetUint16(off, uint16(a))
			case 2:
				o.SetUint32(off, uint32(a))
			case 3:
				o.SetFloat64(off, float64(a))
			case 4:
				o.SetBytesFixed(off, data[:a%5])
			}
		case 5: // text and bytes values
			if skipped {
				break
			}
			if a&1 == 0 {
				obj().SetText(off&^7, string(data[:c%7]))
			} else {
				obj().SetBytes(off&^7, data[:c%7])
			}
		case 6:
			if !skipped && len(refs) > 0 {
				obj().SetObject(off&^3, refs[c%len(refs)])
			}
		case 7:
			if !skipped && len(lrefs) > 0 {
				obj().SetList(off&^7, lrefs[c%len(lrefs)])
			}
		case 8:
			if skipped {
				refs = append(refs, 0)
			} else {
				refs = append(refs, obj().Finish())
			}
		case 9: // list adders
			if skipped {
				break
			}
			l := list()
			switch c % 9 {
			case 0:
				l.AddUint8(uint8(a))
			case 1:
				l.AddUint16(uint16(a))
			case 2:
				l.AddUint32(uint32(a))
			case 3:
				l.AddUint64(uint64(a))
			case 4:
				l.AddBytes(data[:c%5])
			case 5:
				l.AddElement(data[:[]int{0, 1, 2, 4, 8}[a%5]])
			case 6:
				l.AddMessage(data[:a%9])
			case 7:
				l.AddUint32Element(uint32(a))
			case 8:
				l.AddTextElement(string(data[:a%9]))
			}
		case 10:
			if len(lists) == 0 {
				break
			}
			k := a % len(lists)
			if skipped {
				elems[k] = nil
			} else {
				elems[k] = lists[k].BeginElement()
			}
		case 11: // EndElement, with the buffer of this list or another one
			if len(lists) == 0 {
				break
			}
			// The element's bytes are appended by the caller, not the
			// Builder: into its spare capacity, even when the element's
			// list is finished or stale, and even when EndElement is then
			// refused.
			buf := append(elems[c%len(elems)], data[:a%9]...)
			if !skipped {
				list().EndElement(buf)
			}
		case 12:
			if skipped {
				lrefs = append(lrefs, codec.ListRef{})
			} else {
				lrefs = append(lrefs, list().Finish())
			}
		case 13:
			if !skipped {
				b.WriteBytes(data[:a%11])
			}
		case 14, 15: // Finish, with a root (or none)
			if len(refs) > 0 && a&1 == 0 {
				b.SetRoot(refs[c%len(refs)])
			}
			run.msgs = append(run.msgs, bytes.Clone(b.Finish()))
			run.errs = append(run.errs, b.Err())
		}
		if run.first < 0 && b.Err() != nil {
			run.first = i
			run.stop = op >= 14 || op == 12 && strings.Contains(b.Err().Error(), "between BeginElement and EndElement")
		}
	}
	return run
}

// FuzzBuilderMisuse runs any sequence of Builder calls, misuse included:
// none panics, a message Err finds no misuse in parses, and misuse writes
// nothing: the sequence without the calls refused as misuse (replaced by
// what the refusal gives back) writes the same messages.
func FuzzBuilderMisuse(f *testing.F) {
	seeds := [][]byte{
		// StartList while a list is open, both written to
		{0, 0, 0, 2, 1, 16, 3, 0, 1, 9, 0, 0, 3, 0, 1, 9, 1, 0, 9, 0, 0, 12, 0, 0, 7, 0, 12, 8, 0, 0, 14, 0, 0},
		// StartObject while a list is open
		{0, 0, 0, 3, 0, 6, 9, 0, 2, 2, 1, 8, 4, 1, 2, 9, 0, 2, 12, 0, 0, 14, 1, 0},
		// an object with a text value finished while a list is open
		{0, 0, 0, 2, 1, 16, 5, 0, 11, 3, 0, 1, 9, 0, 0, 8, 0, 0, 9, 0, 0, 12, 0, 0, 14, 0, 0},
		// a list added to and ended after its Finish
		{0, 0, 0, 3, 0, 0, 9, 0, 6, 12, 0, 0, 3, 0, 0, 9, 0, 6, 11, 0, 0, 12, 1, 0, 14, 1, 0},
		// object and list builders used after Reset
		{0, 0, 0, 2, 1, 32, 5, 0, 12, 3, 0, 1, 0, 0, 0, 4, 0, 30, 5, 0, 12, 9, 0, 0, 8, 0, 0, 12, 0, 0, 2, 1, 8, 8, 1, 0, 14, 0, 0},
		// Release, then WriteBytes while a list is open
		{0, 0, 0, 2, 1, 8, 1, 0, 0, 4, 0, 6, 2, 1, 8, 8, 1, 0, 3, 0, 1, 13, 3, 0, 12, 0, 0, 14, 0, 0},
		// elements begun and ended
		{0, 0, 0, 2, 1, 24, 3, 0, 0, 10, 0, 0, 11, 5, 0, 10, 0, 0, 11, 3, 0, 12, 0, 0, 7, 0, 12, 8, 0, 0, 14, 0, 0},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 3*64 {
			ops = ops[:3*64]
		}
		want := runMisuseOps(ops, nil)
		for i, msg := range want.msgs {
			if want.errs[i] != nil {
				continue
			}
			m, err := codec.Parse(msg)
			if err != nil {
				t.Fatalf("message %d: Err() nil, Parse: %v (%x)", i, err, msg)
			}
			sink += readEverything(m.Root(), 0, 1)
		}
		skip := map[int]bool{}
		for run := want; run.first >= 0 && !run.stop; {
			skip[run.first] = true
			run = runMisuseOps(ops, skip)
			if len(run.msgs) != len(want.msgs) {
				t.Fatalf("without the misuse at ops %v: %d messages, want %d", skip, len(run.msgs), len(want.msgs))
			}
			for i := range run.msgs {
				if !bytes.Equal(run.msgs[i], want.msgs[i]) {
					t.Fatalf("without the misuse at ops %v, message %d:\n got %x\nwant %x", skip, i, run.msgs[i], want.msgs[i])
				}
			}
		}
	})
}
