package codec

import (
	"errors"
	"strconv"
)

// Sentinel errors for malformed input. The functions of this package that
// reject input ([Parse], [Split], [Object.CheckedBytes]) return them
// wrapped in a *[ParseError] that says where the input broke; match them
// with errors.Is.
var (
	// ErrTooSmall: the buffer is shorter than the header, or the size field
	// is below the header size or past the end of the buffer.
	ErrTooSmall = errors.New("codec: message too small")
	// ErrMagic: the first four bytes are not "ZAP\x00".
	ErrMagic = errors.New("codec: invalid magic")
	// ErrVersion: the header version is neither 1 nor 2.
	ErrVersion = errors.New("codec: unsupported version")
	// ErrShort: the buffer ends inside a message whose bytes so far are a
	// valid beginning (see [Split]): more bytes may complete it.
	ErrShort = errors.New("codec: buffer ends inside the message")
	// ErrOutOfBounds: a slot, or the value it points to, does not lie
	// inside the message (see [Object.CheckedBytes]).
	ErrOutOfBounds = errors.New("codec: value outside the message")
)

// ParseError is the error of a function that rejected malformed input: Err
// is the sentinel that says what was wrong ([ErrTooSmall], [ErrMagic],
// [ErrVersion], [ErrShort], [ErrOutOfBounds]) and Offset where: the
// position, from the start of the buffer given to [Parse] (or [Split]),
// of the first byte that could not be accepted (the header field that is wrong, the slot that points outside
// the message, or the end of a buffer that is too short). errors.Is(err,
// ErrMagic) and the like see through it; errors.As gives the offset.
//
// Parse and the checked reads allocate a ParseError only when they fail;
// success never allocates.
type ParseError struct {
	Offset int   // position of the byte where the input broke
	Err    error // the sentinel: what was wrong there
	// Reason says what was found there, for a person reading a report
	// (Parse fills it: "version 9, expected 1 or 2"); empty otherwise.
	Reason string
}

// Error returns the sentinel's text and the offset, as in
// "codec: invalid magic at byte 0".
func (e *ParseError) Error() string {
	return e.Err.Error() + " at byte " + strconv.Itoa(e.Offset)
}

// Unwrap returns Err, so that errors.Is matches the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

// parseError returns a *ParseError for err at offset off. It is kept out
// of line so that the success paths of its callers stay small.
//
//go:noinline
func parseError(err error, off int) error { return &ParseError{Offset: off, Err: err} }

// ErrBuilder is wrapped by the error [Builder.Err] reports when a builder
// was misused (a field written outside its object, a list element of the
// wrong width, a call that writes while a list is open, a list builder used
// after its Finish, an object or list builder used after Reset, a message
// of 2 GiB or more). The helpers of generated code, which have no error
// to return ([AppendFlat], [AppendTail], [PutHeader], [PutObjectSlot],
// [PutListSlot], [AppendBytesElement], [AppendTextElement],
// [FinishElement]), panic with an error that wraps it, writing nothing,
// when a size, an offset or a count does not fit in its 32-bit word.
var ErrBuilder = errors.New("codec: builder misuse")
