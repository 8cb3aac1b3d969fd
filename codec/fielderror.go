package codec

import (
	"errors"
	"strconv"
)

// Errors a generated DecodeZAP reports, besides [ErrOutOfBounds] for a
// list or list element outside the message, wrapped in a [*FieldError]
// that says where it found them. Match them with errors.Is.
var (
	// ErrTooDeep: records nest more than 100 levels deep.
	ErrTooDeep = errors.New("codec: nesting deeper than 100 levels")
	// ErrShared: decoding the message into records would take far more
	// memory than it has bytes: its objects are shared or cyclic, it
	// lists records it does not hold (elements whose fixed section lies
	// outside them), or many text and bytes fields point at one value.
	ErrShared = errors.New("codec: objects shared or cyclic beyond the message size")
	// ErrElementSize: an element of a list of scalars or of bytes_fixed[N]
	// does not have the element type's size.
	ErrElementSize = errors.New("codec: list element of the wrong size")
	// ErrNestedList: an element of a list of lists does not end on an
	// element boundary.
	ErrNestedList = errors.New("codec: nested list element does not end on an element boundary")
)

// FieldError is the error a generated DecodeZAP returns: Err says what was
// wrong ([ErrTooSmall], [ErrMagic] or [ErrVersion] from a header, whether
// bare or wrapped by the error Parse returns, or one of [ErrOutOfBounds],
// [ErrTooDeep], [ErrShared], [ErrElementSize], [ErrNestedList]) and Path
// where: the record type, then field names and list indices, as in
// "Block.txs[3].to". errors.Is(err, ErrOutOfBounds) and the like see through it.
type FieldError struct {
	Path string
	Err  error
}

// Error returns "PATH: ERR".
func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// InField is for generated code. It returns err as found inside name (a
// record type or a field name): a [*FieldError] whose path starts with
// name. A *FieldError given is extended in place and returned, which is
// safe because generated code builds a new one for each failed decode; nil
// stays nil.
func InField(err error, name string) error {
	if err == nil {
		return nil
	}
	return prependPath(err, name)
}

// InElement is for generated code: [InField] for element i of a list.
func InElement(err error, i int) error {
	if err == nil {
		return nil
	}
	return prependPath(err, "["+strconv.Itoa(i)+"]")
}

// prependPath puts seg (a name or "[i]") in front of err's path. It is
// kept out of line so that the error path does not bloat every decoder
// that calls InField.
//
//go:noinline
func prependPath(err error, seg string) error {
	fe, ok := err.(*FieldError)
	if !ok {
		return &FieldError{Path: seg, Err: err}
	}
	switch {
	case fe.Path == "":
		fe.Path = seg
	case fe.Path[0] == '[':
		fe.Path = seg + fe.Path
	default:
		fe.Path = seg + "." + fe.Path
	}
	return fe
}
