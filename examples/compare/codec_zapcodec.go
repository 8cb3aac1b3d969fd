package compare

// The zapcodec arm, on the hand-written codec API with the eth layout of
// ../shared/zap/schemas/eth.zap. This file is the only one that knows the
// layout: switching the arm to `zapcodec gen` output replaces this file.

import (
	"fmt"

	"github.com/zapcodec/zapcodec/codec"
)

// Field offsets and fixed sizes of the eth schema (the canonical compiler's
// layout, generated.json "offsets").
const (
	reqAccount  = 0
	reqBlock    = 20
	reqID       = 28
	reqMethod   = 36
	reqSize     = 44
	respBalance = 0
	respNonce   = 32
	respHash    = 40
	respID      = 72
	respSize    = 80
)

// Zapcodec is the zapcodec arm. Its Builder is reused across calls: one
// value per goroutine. Decoded Method strings alias the input message.
type Zapcodec struct {
	b codec.Builder
}

// NewZapcodec returns a zapcodec arm.
func NewZapcodec() *Zapcodec { return &Zapcodec{} }

// Name implements Codec.
func (*Zapcodec) Name() string { return "zapcodec" }

// AppendRequest implements Codec.
func (z *Zapcodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	z.b.Reset(dst)
	o := z.b.StartObject(reqSize)
	o.SetBytesFixed(reqAccount, r.Account[:])
	o.SetUint64(reqBlock, r.Block)
	o.SetUint64(reqID, r.ID)
	o.SetText(reqMethod, r.Method)
	z.b.SetRoot(o.Finish())
	out := z.b.Finish()
	return out, z.b.Err()
}

// root parses b and returns its root object, which must hold size bytes.
func zapRoot(b []byte, size int) (codec.Object, error) {
	m, err := codec.Parse(b)
	if err != nil {
		return codec.Object{}, err
	}
	if m.Size() != len(b) {
		return codec.Object{}, fmt.Errorf("%w: %d bytes after the message", ErrMalformed, len(b)-m.Size())
	}
	o := m.Root()
	if o.BytesFixed(0, size) == nil {
		return codec.Object{}, fmt.Errorf("%w: root object shorter than %d bytes", ErrMalformed, size)
	}
	return o, nil
}

// DecodeRequest implements Codec.
func (z *Zapcodec) DecodeRequest(b []byte, r *Request) error {
	o, err := zapRoot(b, reqSize)
	if err != nil {
		return err
	}
	copy(r.Account[:], o.BytesFixed(reqAccount, 20))
	r.Block = o.Uint64(reqBlock)
	r.ID = o.Uint64(reqID)
	r.Method = o.Text(reqMethod)
	return nil
}

// AppendResponse implements Codec.
func (z *Zapcodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	z.b.Reset(dst)
	o := z.b.StartObject(respSize)
	o.SetBytesFixed(respBalance, r.Balance[:])
	o.SetUint64(respNonce, r.Nonce)
	o.SetBytesFixed(respHash, r.BlockHash[:])
	o.SetUint64(respID, r.ID)
	z.b.SetRoot(o.Finish())
	out := z.b.Finish()
	return out, z.b.Err()
}

// DecodeResponse implements Codec.
func (z *Zapcodec) DecodeResponse(b []byte, r *Response) error {
	o, err := zapRoot(b, respSize)
	if err != nil {
		return err
	}
	copy(r.Balance[:], o.BytesFixed(respBalance, 32))
	r.Nonce = o.Uint64(respNonce)
	copy(r.BlockHash[:], o.BytesFixed(respHash, 32))
	r.ID = o.Uint64(respID)
	return nil
}

// Handle implements Codec: it reads the request through the view and
// writes the response straight from the table row.
func (z *Zapcodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	o, err := zapRoot(req, reqSize)
	if err != nil {
		return dst, err
	}
	if o.Text(reqMethod) != Method {
		return dst, ErrMethod
	}
	var addr [20]byte
	copy(addr[:], o.BytesFixed(reqAccount, 20))
	a, h := t.Lookup(&addr, o.Uint64(reqBlock))
	z.b.Reset(dst)
	w := z.b.StartObject(respSize)
	w.SetBytesFixed(respBalance, a.Balance[:])
	w.SetUint64(respNonce, a.Nonce)
	w.SetBytesFixed(respHash, h[:])
	w.SetUint64(respID, o.Uint64(reqID))
	z.b.SetRoot(w.Finish())
	out := z.b.Finish()
	return out, z.b.Err()
}
