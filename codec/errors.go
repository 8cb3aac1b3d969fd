package codec

import "errors"

// Errors returned by [Parse]. Match them with errors.Is.
var (
	// ErrTooSmall: the buffer is shorter than the header, or the size field
	// is below the header size or past the end of the buffer.
	ErrTooSmall = errors.New("codec: message too small")
	// ErrMagic: the first four bytes are not "ZAP\x00".
	ErrMagic = errors.New("codec: invalid magic")
	// ErrVersion: the header version is neither 1 nor 2.
	ErrVersion = errors.New("codec: unsupported version")
)

// ErrBuilder is wrapped by the error [Builder.Err] reports when a builder
// was misused (a field written outside its object, a list element of the
// wrong width, a message larger than 4 GiB).
var ErrBuilder = errors.New("codec: builder misuse")
