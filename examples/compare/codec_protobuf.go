package compare

// The protobuf arms: google.golang.org/protobuf (proto.MarshalOptions
// .MarshalAppend / proto.Unmarshal) and vtprotobuf's generated
// MarshalToSizedBufferVT / UnmarshalVTUnsafe, on the same generated
// messages (internal/pb, committed). Bytes fields on encode point at the
// caller's arrays (no copy), as a protobuf user would write it.
// UnmarshalVTUnsafe is vtprotobuf's zero-copy decode (bytes and string
// fields alias the input), its fastest, as the zapcodec handler reads the
// request through a view.

import (
	"fmt"
	"slices"

	"github.com/zapcodec/zapcodec/examples/compare/internal/pb"
	"google.golang.org/protobuf/proto"
)

type protobufCodec struct {
	vt   bool
	req  pb.GetBalanceRequest
	resp pb.GetBalanceResponse
}

func newProtobuf() *protobufCodec   { return &protobufCodec{} }
func newVTProtobuf() *protobufCodec { return &protobufCodec{vt: true} }

func (c *protobufCodec) Name() string {
	if c.vt {
		return "vtprotobuf"
	}
	return "protobuf"
}

// pbAppend appends m's encoding to dst.
func pbAppend(dst []byte, m interface {
	proto.Message
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}, vt bool) ([]byte, error) {
	if !vt {
		return proto.MarshalOptions{}.MarshalAppend(dst, m)
	}
	n := m.SizeVT()
	dst = slices.Grow(dst, n)
	if _, err := m.MarshalToSizedBufferVT(dst[len(dst) : len(dst)+n]); err != nil {
		return dst, err
	}
	return dst[:len(dst)+n], nil
}

func fixedField(name string, dst, src []byte) error {
	if len(src) != len(dst) {
		return fmt.Errorf("%w: %s has %d bytes, want %d", ErrMalformed, name, len(src), len(dst))
	}
	copy(dst, src)
	return nil
}

// setRequest replaces the whole message (as the generated Reset does), so
// unknown fields kept by an earlier decode are not sent again.
func (c *protobufCodec) setRequest(r *Request) {
	c.req = pb.GetBalanceRequest{Account: r.Account[:], Block: r.Block, Id: r.ID, Method: r.Method}
}

func (c *protobufCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	c.setRequest(r)
	return pbAppend(dst, &c.req, c.vt)
}

func (c *protobufCodec) unmarshalRequest(b []byte) error {
	if !c.vt {
		return proto.Unmarshal(b, &c.req)
	}
	// UnmarshalVTUnsafe merges (and keeps unknown fields): start from a
	// fresh message. Account and Method alias b.
	c.req = pb.GetBalanceRequest{}
	return c.req.UnmarshalVTUnsafe(b)
}

func (c *protobufCodec) DecodeRequest(b []byte, r *Request) error {
	if err := c.unmarshalRequest(b); err != nil {
		return err
	}
	if err := fixedField("account", r.Account[:], c.req.Account); err != nil {
		return err
	}
	r.Block, r.ID, r.Method = c.req.Block, c.req.Id, c.req.Method
	return nil
}

func (c *protobufCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	c.resp = pb.GetBalanceResponse{Balance: r.Balance[:], Nonce: r.Nonce, BlockHash: r.BlockHash[:], Id: r.ID}
	return pbAppend(dst, &c.resp, c.vt)
}

func (c *protobufCodec) DecodeResponse(b []byte, r *Response) error {
	var err error
	if !c.vt {
		err = proto.Unmarshal(b, &c.resp)
	} else {
		c.resp = pb.GetBalanceResponse{}
		err = c.resp.UnmarshalVTUnsafe(b)
	}
	if err != nil {
		return err
	}
	if err := fixedField("balance", r.Balance[:], c.resp.Balance); err != nil {
		return err
	}
	if err := fixedField("block_hash", r.BlockHash[:], c.resp.BlockHash); err != nil {
		return err
	}
	r.Nonce, r.ID = c.resp.Nonce, c.resp.Id
	return nil
}

// Handle decodes into the reused message and answers with bytes fields
// pointing at the table row (no copy until encode).
func (c *protobufCodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	if err := c.unmarshalRequest(req); err != nil {
		return dst, err
	}
	return pbAnswer(dst, &c.req, &c.resp, t, c.vt)
}

// pbAnswer is the compute and encode step shared with the gRPC arm.
func pbAnswer(dst []byte, req *pb.GetBalanceRequest, resp *pb.GetBalanceResponse, t *Table, vt bool) ([]byte, error) {
	a, h, err := pbLookup(req, t)
	if err != nil {
		return dst, err
	}
	*resp = pb.GetBalanceResponse{Balance: a.Balance[:], Nonce: a.Nonce, BlockHash: h[:], Id: req.Id}
	return pbAppend(dst, resp, vt)
}

// pbLookup answers req from t. It looks the account up where it lies in
// the message (for the handler's UnmarshalVTUnsafe, in the request's
// bytes), as the zapcodec handler does through its view, not in a copy.
func pbLookup(req *pb.GetBalanceRequest, t *Table) (*Account, *[32]byte, error) {
	if req.Method != Method {
		return nil, nil, ErrMethod
	}
	if len(req.Account) != 20 {
		return nil, nil, fmt.Errorf("%w: account has %d bytes, want 20", ErrMalformed, len(req.Account))
	}
	a, h := t.Lookup((*[20]byte)(req.Account), req.Block)
	return a, h, nil
}
