package frame_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/zapcodec/zapcodec/frame"
)

func Example() {
	var conn bytes.Buffer // a net.Conn in real use

	w := frame.NewWriter(&conn)
	w.WriteFrame(1, []byte("request"))
	buf := w.Begin(2) // append the payload straight into the output buffer
	buf = append(buf, "response"...)
	if err := w.End(buf); err != nil {
		panic(err)
	}
	w.Flush() // both frames leave in one Write

	r := frame.NewReader(&conn)
	for {
		kind, payload, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		// payload is valid until the next call to Next.
		fmt.Printf("kind %d: %s\n", kind, payload)
	}
	// Output:
	// kind 1: request
	// kind 2: response
}

func ExampleWithHTTPFraming() {
	var conn bytes.Buffer
	w := frame.NewWriter(&conn, frame.WithHTTPFraming())
	w.WriteFrame(0, []byte("ZAP\x00..."))
	w.Flush()
	fmt.Printf("% x\n", conn.Bytes()[:4])
	// Output: 00 00 00 07
}
