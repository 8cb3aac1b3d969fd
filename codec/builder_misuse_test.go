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
		}, "EndElement without BeginElement, or after the list's Finish or Reset"},
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
