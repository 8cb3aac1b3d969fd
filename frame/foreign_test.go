package frame

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestReaderNamesForeignProtocol: a stream that begins with another
// protocol's opening (an HTTP request or response, the HTTP/2 preface, a
// TLS record) fails its first frame with an error that names what the
// peer sent, still wrapping the frame error; the same bytes later in the
// stream, or a stream of ZAP frames, get no such name.
func TestReaderNamesForeignProtocol(t *testing.T) {
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	smallHello := []byte{0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c, 0x03, 0x03}
	alert := []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46}
	for _, tc := range []struct {
		name, in, want string
		is             error
	}{
		{"get", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request", ErrFrameTooLarge},
		{"post", "POST /rpc HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request", ErrFrameTooLarge},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "an HTTP/2 connection preface", ErrFrameTooLarge},
		{"response", "HTTP/1.1 400 Bad Request\r\n\r\n", "an HTTP response", ErrFrameTooLarge},
		{"client hello", string(hello), "a TLS handshake", ErrFrameTooLarge},
		// A length that fits the limit: refused once the record's and
		// the handshake's headers are in (TestReaderNamesShortClientHello).
		{"small client hello", string(smallHello), "a TLS handshake", ErrForeignProtocol},
		{"alert", string(alert), "a TLS alert", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := NewReader(strings.NewReader(tc.in))
			_, _, err := fr.Next()
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), "the peer sent "+tc.want+", not ZAP frames") {
				t.Fatalf("Next: %v; want %v naming %q", err, tc.is, tc.want)
			}
			// Reset starts a new stream: its first frame is diagnosed too.
			fr.Reset(strings.NewReader(tc.in))
			if _, _, err := fr.Next(); !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Next after Reset: %v; want it to name %q", err, tc.want)
			}
		})
	}

	// After a good frame, the same bytes are only a bad frame.
	in := cat(le(2), []byte{1, 'x'}, []byte("GET / HTTP/1.1\r\n\r\n"))
	fr := NewReader(bytes.NewReader(in))
	if _, _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) || strings.Contains(err.Error(), "peer sent") {
		t.Fatalf("second frame: %v; want a plain ErrFrameTooLarge", err)
	}
	// A truncated ZAP frame is not named.
	fr = NewReader(bytes.NewReader(cat(le(100), []byte{1, 'Z', 'A', 'P', 0})))
	if _, _, err := fr.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated frame: %v; want io.ErrUnexpectedEOF", err)
	}
}

// TestReaderNamesShortClientHello: a TLS ClientHello whose record is
// under 256 bytes reads, as a frame length, as one within the limit
// (16 03 01 00 → 66,326 bytes), and the TLS client then waits for the
// server's answer: the Reader used to wait for the rest of that frame
// until the read deadline, where it should refuse the stream at once.
// The record's and the handshake's headers, which agree on the length,
// say what it is before the whole record is in; a ZAP first frame whose
// length happens to begin alike is read as a frame.
func TestReaderNamesShortClientHello(t *testing.T) {
	body := make([]byte, 0x3c) // the ClientHello: version, random, ...
	body[0], body[1] = 0x03, 0x03
	hello := cat([]byte{0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c}, body)
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write(hello) // and nothing more: the client waits for our answer
	done := make(chan error, 1)
	go func() {
		_, _, err := NewReader(pr).Next()
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Next still waits 30 s after a short TLS ClientHello")
	}
	if !errors.Is(err, ErrForeignProtocol) || !strings.Contains(err.Error(), "the peer sent a TLS handshake, not ZAP frames") {
		t.Fatalf("Next: %v; want ErrForeignProtocol naming a TLS handshake", err)
	}

	// A ZAP frame of 790 bytes (16 03 00 00) of kind 1 is no ClientHello.
	frame := cat([]byte{0x16, 0x03, 0x00, 0x00, 0x01}, make([]byte, 0x0316-1))
	fr := NewReader(bytes.NewReader(frame))
	if kind, p, err := fr.Next(); err != nil || kind != 1 || len(p) != 0x0316-1 {
		t.Fatalf("Next on a ZAP frame of 790 bytes: kind %d, %d bytes, %v", kind, len(p), err)
	}
}
