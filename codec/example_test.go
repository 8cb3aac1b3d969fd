package codec_test

import (
	"errors"
	"fmt"

	"github.com/zapcodec/zapcodec/codec"
)

// A message with a u32, a text and a nested object, built into a reused
// buffer and read back.
func Example() {
	var b codec.Builder
	buf := make([]byte, 0, 256) // reused across messages

	b.Reset(buf[:0])
	child := b.StartObject(8)
	child.SetUint64(0, 42)
	childRef := child.Finish()

	root := b.StartObject(16)
	root.SetUint32(0, 7)
	root.SetText(4, "hello")
	root.SetObject(12, childRef)
	b.SetRoot(root.Finish())
	buf = b.Finish()

	m, err := codec.Parse(buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := m.Root()
	fmt.Println(r.Uint32(0), r.Text(4), r.Object(12).Uint64(0), m.Size())
	// Output: 7 hello 42 45
}

// Reading a variable-element list front to back without allocating.
func ExampleListIter() {
	var b, elem codec.Builder
	b.Reset(nil)
	root := b.StartObject(8)
	l := b.StartList(0)
	for i, name := range []string{"one", "two", "three"} {
		elem.Reset(l.BeginElement())
		e := elem.StartObject(12)
		e.SetUint32(0, uint32(i+1))
		e.SetText(4, name)
		elem.SetRoot(e.Finish())
		l.EndElement(elem.Finish())
	}
	root.SetList(0, l.Finish())
	b.SetRoot(root.Finish())

	m, _ := codec.Parse(b.Finish())
	for it := m.Root().List(0).Iter(); it.Next(); {
		item := it.Object()
		fmt.Println(item.Uint32(0), item.Text(4))
	}
	// Output:
	// 1 one
	// 2 two
	// 3 three
}

// Hostile bytes never panic: a read that does not fit gives the zero value.
func ExampleObject_Text() {
	msg := []byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x20\x00\x00\x00" +
		"\x08\x00\x00\x00\xff\xff\xff\xff" + // text slot: length 4 GiB
		"\x00\x00\x00\x00\x00\x00\x00\x00")
	m, err := codec.Parse(msg)
	fmt.Printf("%v %q %d\n", err, m.Root().Text(0), m.Root().List(0).Len())
	// Output: <nil> "" 0
}

func ExampleParse() {
	_, err := codec.Parse([]byte("ZAP\x00\x07\x00\x00\x00 not a version"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, codec.ErrVersion))
	var pe *codec.ParseError
	if errors.As(err, &pe) {
		fmt.Println("broke at byte", pe.Offset)
	}
	// Output:
	// codec: unsupported version at byte 4
	// true
	// broke at byte 4
}

// Messages written back to back: Split cuts the first off and returns
// the rest; ErrShort says the bytes end inside a message (read more).
func ExampleSplit() {
	one := []byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x10\x00\x00\x00") // an empty message
	stream := append(append(append([]byte(nil), one...), one...), one[:9]...)
	for {
		msg, rest, err := codec.Split(stream)
		if err != nil {
			fmt.Println(err, errors.Is(err, codec.ErrShort))
			break
		}
		fmt.Println(len(msg), "bytes,", len(rest), "left")
		stream = rest
	}
	// Output:
	// 16 bytes, 25 left
	// 16 bytes, 9 left
	// codec: buffer ends inside the message at byte 9 true
}

// A message built field by field and read back: the README's "Messages by
// hand" sample, the body of builderSample (TestREADMEBuilderSample keeps
// the two equal).
func ExampleBuilder() {
	buf := make([]byte, 0, 64)
	if err := builderSample(buf); err != nil {
		fmt.Println(err)
	}
	// Output: 7 hello
}

func builderSample(buf []byte) error {
	var b codec.Builder
	b.Reset(buf[:0])       // buf is yours; reuse it
	o := b.StartObject(16) // a fixed section of 16 bytes
	o.SetUint32(0, 7)
	o.SetText(4, "hello") // written when o finishes: keep it unchanged until then
	b.SetRoot(o.Finish())
	buf = b.Finish() // the whole message, aliasing buf
	if err := b.Err(); err != nil {
		return err // a misused call (a field outside its object, say) wrote nothing; Finish still gave a message
	}

	m, err := codec.Parse(buf) // a value: no allocation
	if err != nil {
		return err // codec.ErrTooSmall, ErrMagic, ErrVersion (errors.Is)
	}
	fmt.Println(m.Root().Uint32(0), m.Root().Text(4)) // Text aliases buf
	return nil
}
