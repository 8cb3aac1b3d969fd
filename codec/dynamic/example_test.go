package dynamic_test

import (
	"errors"
	"fmt"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

const exampleSchema = `
struct Point { X i32; Y i32 }

struct Shape
    Name   text
    Origin Point
    Tags   list<text>
    Id     bytes_fixed[4]
    Area   f64
`

// JSON to ZAP and back, through a schema parsed at run time: what a JSON
// gateway in front of a ZAP service does with each request and answer.
func Example() {
	f, err := schema.Parse("shapes.zap", []byte(exampleSchema))
	if err != nil {
		fmt.Println(err)
		return
	}
	shape := f.Struct("Shape")

	in := []byte(`{"Name": "square", "Origin": {"X": -1, "Y": 2}, "Tags": ["red", "big"], "Id": "0a0b0c0d", "Area": 4}`)
	msg, err := dynamic.AppendMessage(nil, shape, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := codec.Parse(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ZAP message: %d bytes, version %d\n", m.Size(), m.Version())
	fmt.Printf("Name at @0 read with codec: %q\n", m.Root().Text(0))

	out, err := dynamic.AppendJSON(nil, shape, msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("back to JSON: %s\n", out)
	// Output:
	// ZAP message: 76 bytes, version 1
	// Name at @0 read with codec: "square"
	// back to JSON: {"Name":"square","Origin":{"X":-1,"Y":2},"Tags":["red","big"],"Id":"0a0b0c0d","Area":4}
}

// Errors say where a message stops matching the schema (decoding) or which
// field of the JSON is wrong (encoding): the byte offset and the field
// path a gateway can return to its caller.
func Example_errors() {
	f, err := schema.Parse("shapes.zap", []byte(exampleSchema))
	if err != nil {
		fmt.Println(err)
		return
	}
	shape := f.Struct("Shape")

	_, err = dynamic.AppendMessage(nil, shape, []byte(`{"Origin": {"X": 1e10}}`))
	var ee *dynamic.EncodeError
	if errors.As(err, &ee) {
		fmt.Printf("encode: field %s: %s\n", ee.Path, ee.Reason)
	}

	msg, _ := dynamic.AppendMessage(nil, shape, []byte(`{"Name": "square"}`))
	_, err = dynamic.AppendJSON(nil, shape, msg[:len(msg)-4])
	var de *dynamic.DecodeError
	if errors.As(err, &de) {
		fmt.Printf("decode: byte %d: %s\n", de.Offset, de.Reason)
	}
	// Output:
	// encode: field Origin.X: bad i32 "1e10": invalid syntax
	// decode: byte 12: size 54, expected 16..50 (the bytes present)
}
