package compare

// The msgp arms: github.com/tinylib/msgp generated MarshalMsg/UnmarshalMsg
// (internal/mp, committed) in msgp's two layouts: its default map
// encoding (field names on the wire) and its tuple encoding (the
// msgp:tuple directive: an array of the fields in order, no names; msgp's
// most compact and fastest layout). internal/mp's structs have
// Request's and Response's fields, so the records convert by pointer,
// without a copy; the requests' Method is an mp.Text, which msgp reads
// with its zero-copy ReadStringZC (the decoded Method aliases the input,
// as vtprotobuf's UnmarshalVTUnsafe leaves it), where the string msgp
// generates for a string field is a new copy on every decode.

import (
	"fmt"
	"unsafe"

	"github.com/zapcodec/zapcodec/examples/compare/internal/mp"
)

// mpRequest and mpTupleRequest convert through unsafe.Pointer: mp.Text,
// the requests' Method, is a string type, so the structs have the same
// layout as Request (TestMsgpLayout checks it) but do not convert directly.
func mpRequest(r *Request) *mp.Request           { return (*mp.Request)(unsafe.Pointer(r)) }
func mpTupleRequest(r *Request) *mp.TupleRequest { return (*mp.TupleRequest)(unsafe.Pointer(r)) }

type msgpCodec struct {
	tuple bool
	in    Request
	out   Response
}

func newMsgp() *msgpCodec      { return &msgpCodec{} }
func newMsgpTuple() *msgpCodec { return &msgpCodec{tuple: true} }

func (c *msgpCodec) Name() string {
	if c.tuple {
		return "msgp (tuple)"
	}
	return "msgp"
}

func (c *msgpCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	if c.tuple {
		return mpTupleRequest(r).MarshalMsg(dst)
	}
	return mpRequest(r).MarshalMsg(dst)
}

func noRest(rest []byte, err error) error {
	if err == nil && len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the record", ErrMalformed, len(rest))
	}
	return err
}

// DecodeRequest: the tuple layout's UnmarshalMsg reads an array of exactly
// 4 and writes every field or fails; the map layout's leaves fields absent
// from b unchanged, so r is zeroed first.
func (c *msgpCodec) DecodeRequest(b []byte, r *Request) error {
	if c.tuple {
		return noRest(mpTupleRequest(r).UnmarshalMsg(b))
	}
	*r = Request{}
	return noRest(mpRequest(r).UnmarshalMsg(b))
}

func (c *msgpCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	if c.tuple {
		return (*mp.TupleResponse)(r).MarshalMsg(dst)
	}
	return (*mp.Response)(r).MarshalMsg(dst)
}

func (c *msgpCodec) DecodeResponse(b []byte, r *Response) error {
	if c.tuple {
		return noRest((*mp.TupleResponse)(r).UnmarshalMsg(b))
	}
	*r = Response{}
	return noRest((*mp.Response)(r).UnmarshalMsg(b))
}

func (c *msgpCodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	if err := c.DecodeRequest(req, &c.in); err != nil {
		return dst, err
	}
	if err := t.Answer(&c.in, &c.out); err != nil {
		return dst, err
	}
	return c.AppendResponse(dst, &c.out)
}
