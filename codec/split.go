package codec

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Split returns the message b starts with and the bytes that follow it:
// how a reader of messages written back to back finds where each one
// ends. msg is b[:size], size being the header's size field, checked as
// [Parse] checks it (so Parse(msg) succeeds); rest is b[size:]. msg's
// capacity ends at size too, so that appending to it copies instead of
// writing over rest. Split does not copy b and does not allocate unless
// it fails. Both results alias b.
//
// Errors are a *[ParseError] whose sentinel (errors.Is) tells "read more"
// from "malformed": [ErrShort] when b is a valid beginning of a message
// that goes on past len(b) (b is shorter than the header, or than the
// size field says; offset len(b)): a reader appends the bytes that come
// next and calls Split again, and at the end of its input has a
// truncated message. Otherwise b cannot start a message, whatever
// follows: [ErrMagic] (offset of the first wrong byte of the magic),
// [ErrVersion] (offset 4), [ErrTooSmall] (a size field below the header
// size: offset 12). A size field is only compared with len(b), never
// used to allocate. See [ScanMessages] to read messages from an
// io.Reader.
func Split(b []byte) (msg, rest []byte, err error) {
	if len(b) >= HeaderSize {
		h := binary.LittleEndian.Uint64(b) // magic, version, flags
		size := binary.LittleEndian.Uint32(b[offSize:])
		if uint32(h) == magic32 && uint16(h>>32)-Version1 <= Version2-Version1 &&
			size >= HeaderSize && uint64(size) <= uint64(len(b)) {
			return b[:size:size], b[size:], nil
		}
	}
	return nil, b, splitFailure(b)
}

// splitFailure returns the *ParseError of a start of b that Split
// rejected.
//
//go:noinline
func splitFailure(b []byte) error {
	if n := min(len(b), len(Magic)); string(b[:n]) != Magic[:n] {
		return &ParseError{Offset: magicBreak(b), Err: ErrMagic,
			Reason: fmt.Sprintf("expected magic \"ZAP\\x00\" (5a 41 50 00), found % x", b[:n])}
	}
	if len(b) > offVersion {
		// The version's low byte alone already rules out all but 1 and 2.
		v := uint16(b[offVersion])
		if len(b) > offVersion+1 {
			v = binary.LittleEndian.Uint16(b[offVersion:])
		}
		if v != Version1 && v != Version2 {
			return &ParseError{Offset: offVersion, Err: ErrVersion,
				Reason: fmt.Sprintf("version %d, expected 1 or 2", v)}
		}
	}
	if len(b) < HeaderSize {
		return &ParseError{Offset: len(b), Err: ErrShort,
			Reason: fmt.Sprintf("message header truncated: need %d bytes, have %d", HeaderSize, len(b))}
	}
	size := binary.LittleEndian.Uint32(b[offSize:])
	if size < HeaderSize {
		return &ParseError{Offset: offSize, Err: ErrTooSmall,
			Reason: fmt.Sprintf("size %d, below the header's %d bytes", size, HeaderSize)}
	}
	return &ParseError{Offset: len(b), Err: ErrShort,
		Reason: fmt.Sprintf("message of %d bytes (its size field), have %d", size, len(b))}
}

// ScanMessages is a split function for a bufio.Scanner that reads
// messages written back to back: each token is one whole message, as
// [Split] finds it, aliasing the scanner's buffer (valid until the next
// Scan; copy it to keep it). Bytes that cannot start a message stop the
// scan with Split's error; input that ends inside a message stops it
// with an error that matches [ErrShort] and io.ErrUnexpectedEOF (an
// input that ends between messages ends the scan cleanly).
//
// The scanner's buffer grows with the bytes it has read, not with a
// size field; it stops at the scanner's maximum token size
// (bufio.MaxScanTokenSize, 64 KiB, unless set with Scanner.Buffer),
// and a larger message stops the scan with bufio.ErrTooLong.
func ScanMessages(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	msg, _, err := Split(data)
	if err == nil {
		return len(msg), msg, nil
	}
	if pe, ok := err.(*ParseError); ok && pe.Err == ErrShort {
		if !atEOF {
			return 0, nil, nil // ask for more
		}
		return 0, nil, &truncatedError{pe}
	}
	return 0, nil, err
}

// truncatedError is the error of [ScanMessages] for input that ends
// inside a message: Split's *ParseError (ErrShort), which it also
// matches as io.ErrUnexpectedEOF.
type truncatedError struct{ pe *ParseError }

func (e *truncatedError) Error() string   { return e.pe.Error() + ": " + io.ErrUnexpectedEOF.Error() }
func (e *truncatedError) Unwrap() []error { return []error{e.pe, io.ErrUnexpectedEOF} }
