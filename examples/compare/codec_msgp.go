package compare

// The msgp arm: github.com/tinylib/msgp generated MarshalMsg/UnmarshalMsg
// (internal/mp, committed) with msgp's default map encoding (field names on
// the wire). internal/mp's structs have exactly Request's and Response's
// fields, so the records convert by pointer, without a copy.

import (
	"fmt"

	"github.com/zapcodec/zapcodec/examples/compare/internal/mp"
)

type msgpCodec struct {
	in  Request
	out Response
}

func newMsgp() *msgpCodec { return &msgpCodec{} }

func (*msgpCodec) Name() string { return "msgp" }

func (*msgpCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	return (*mp.Request)(r).MarshalMsg(dst)
}

func noRest(rest []byte, err error) error {
	if err == nil && len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the record", ErrMalformed, len(rest))
	}
	return err
}

func (*msgpCodec) DecodeRequest(b []byte, r *Request) error {
	*r = Request{} // UnmarshalMsg leaves fields absent from b unchanged
	return noRest((*mp.Request)(r).UnmarshalMsg(b))
}

func (*msgpCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	return (*mp.Response)(r).MarshalMsg(dst)
}

func (*msgpCodec) DecodeResponse(b []byte, r *Response) error {
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
