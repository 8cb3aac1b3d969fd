package frame

import "errors"

// Errors of this package. Match them with errors.Is; the returned error may
// wrap them with the values involved.
var (
	// ErrFrameTooLarge: a header announced, or a caller tried to write, a
	// frame whose length prefix exceeds the maximum frame size. The reader
	// reports it before reading or allocating any of the body (a Reader set
	// with DiscardTooLarge, after the head it returns, as a
	// *TooLargeError, and reads past the rest).
	ErrFrameTooLarge = errors.New("frame: frame too large")

	// ErrEmptyFrame: a canonical frame with length 0, which cannot hold
	// the kind byte. A protocol violation: the peer is broken.
	ErrEmptyFrame = errors.New("frame: frame of length 0 has no kind byte")

	// ErrForeignProtocol: the stream begins with a TLS ClientHello whose
	// record is short enough (under 256 bytes) that, read as a frame
	// length, it is within the limit (16 03 01 00: 66,326 bytes), and the
	// client waits for the server's answer: the reader says so at once,
	// from the record's and the handshake's headers, instead of waiting
	// for the rest of that frame. The error names the TLS handshake as
	// other foreign openings are named (see [Reader.Next]); those fail the
	// length check and wrap its error instead. A stream's first frame whose
	// first 11 bytes read as such a record is refused too while it is not
	// all read: a frame of 790 + 65,536·n bytes (n from 0 to 4) whose body
	// begins 01, three bytes worth 41 or more, 03 and 00 to 04. No first
	// frame of the rpc wire is one.
	ErrForeignProtocol = errors.New("frame: not a ZAP frame stream")

	// ErrNoBegin: Writer.End was called without a matching Begin, or with a
	// buffer that does not extend the one Begin returned.
	ErrNoBegin = errors.New("frame: End without matching Begin")
)

// noCopy makes go vet's copylocks check flag copies of Reader and Writer.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
