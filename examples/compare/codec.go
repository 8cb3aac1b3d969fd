package compare

import "errors"

// ErrMalformed is returned when a codec's input does not decode into a
// complete record (wrong length of a fixed-size field, trailing bytes, ...).
var ErrMalformed = errors.New("compare: malformed record")

// Codec is one wire format for the eth_getBalance records. Implementations
// keep scratch state (builders, reusable messages): one value per goroutine.
type Codec interface {
	// Name is the codec's label in tables.
	Name() string
	// AppendRequest appends r's encoding to dst.
	AppendRequest(dst []byte, r *Request) ([]byte, error)
	// DecodeRequest fills every field of r from b.
	DecodeRequest(b []byte, r *Request) error
	// AppendResponse appends r's encoding to dst.
	AppendResponse(dst []byte, r *Response) ([]byte, error)
	// DecodeResponse fills every field of r from b.
	DecodeResponse(b []byte, r *Response) error
	// Handle is the server's whole job: decode the request in req, answer
	// it from t and append the encoded response to dst, in the codec's most
	// natural style (typed messages or views).
	Handle(dst, req []byte, t *Table) ([]byte, error)
}

// Maker names a codec and makes fresh instances of it.
type Maker struct {
	Name string
	New  func() Codec
}

// Codecs lists every codec of the comparison, zapcodec first and the
// hand-written floor last.
func Codecs() []Maker {
	return []Maker{
		{"zapcodec", func() Codec { return NewZapcodec() }},
		{"encoding/json", func() Codec { return newStdJSON() }},
		{"goccy/go-json", func() Codec { return newGoccyJSON() }},
		{"sonic", func() Codec { return newSonicJSON() }},
		{"protobuf", func() Codec { return newProtobuf() }},
		{"vtprotobuf", func() Codec { return newVTProtobuf() }},
		{"msgp", func() Codec { return newMsgp() }},
		{"msgp (tuple)", func() Codec { return newMsgpTuple() }},
		{"flatbuffers", func() Codec { return newFlatbuffers() }},
		{"floor (by hand)", func() Codec { return newFloor() }},
	}
}
