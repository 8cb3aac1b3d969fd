package mp

import (
	"unsafe"

	"github.com/tinylib/msgp/msgp"
)

// Text is a string field (a MessagePack str on the wire, as a Go string
// field is) whose UnmarshalMsg reads it with msgp.ReadStringZC, msgp's
// zero-copy string read, so that decoding allocates nothing: the result
// aliases the input, valid while the input bytes stay unchanged, as
// vtprotobuf's UnmarshalVTUnsafe leaves its strings. msgp's generated code
// reads a string field with ReadStringBytes, which allocates a copy every
// time, and its zerocopy tag covers only []byte fields, which would go on
// the wire as bin, not str. Text lives outside records.go, so that msgp
// calls these methods instead of generating its own.
type Text string

// MarshalMsg implements msgp.Marshaler: the str msgp writes for a string.
func (t Text) MarshalMsg(b []byte) ([]byte, error) { return msgp.AppendString(b, string(t)), nil }

// UnmarshalMsg implements msgp.Unmarshaler. The result aliases b. On
// error t is "" (ReadStringZC's v is nil): with no branch of its own,
// UnmarshalMsg is small enough to inline.
func (t *Text) UnmarshalMsg(b []byte) ([]byte, error) {
	v, o, err := msgp.ReadStringZC(b)
	*t = *(*Text)(unsafe.Pointer(&v)) // the slice's pointer and length
	return o, err
}

// Msgsize implements msgp.Sizer.
func (t Text) Msgsize() int { return msgp.StringPrefixSize + len(t) }

// EncodeMsg implements msgp.Encodable.
func (t Text) EncodeMsg(w *msgp.Writer) error { return w.WriteString(string(t)) }

// DecodeMsg implements msgp.Decodable. A stream has no input to alias:
// the string is a copy.
func (t *Text) DecodeMsg(r *msgp.Reader) error {
	s, err := r.ReadString()
	*t = Text(s)
	return err
}
