package compare

// The FlatBuffers arm: flatc-generated tables (internal/fb/ethfb,
// committed) on github.com/google/flatbuffers. Reading goes through the
// generated accessors on a stack value (Init, no GetRootAs allocation);
// Method aliases the input like zapcodec's Text. FlatBuffers' Go runtime has
// no verifier: a malformed buffer makes the accessors panic, so decoding
// recovers and reports ErrMalformed, as any server taking untrusted input
// has to.

import (
	"fmt"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/zapcodec/zapcodec/examples/compare/internal/fb/ethfb"
)

type flatbuffersCodec struct {
	b *flatbuffers.Builder
}

func newFlatbuffers() *flatbuffersCodec { return &flatbuffersCodec{b: flatbuffers.NewBuilder(256)} }

func (*flatbuffersCodec) Name() string { return "flatbuffers" }

func aliasString(p []byte) string { return unsafe.String(unsafe.SliceData(p), len(p)) }

func (c *flatbuffersCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	b := c.b
	b.Reset()
	acc := b.CreateByteVector(r.Account[:])
	m := b.CreateString(r.Method)
	ethfb.GetBalanceRequestStart(b)
	ethfb.GetBalanceRequestAddAccount(b, acc)
	ethfb.GetBalanceRequestAddBlock(b, r.Block)
	ethfb.GetBalanceRequestAddId(b, r.ID)
	ethfb.GetBalanceRequestAddMethod(b, m)
	b.Finish(ethfb.GetBalanceRequestEnd(b))
	return append(dst, b.FinishedBytes()...), nil
}

// fbRoot checks that b can hold a root offset and turns a panic of the
// unverified accessors into ErrMalformed.
func fbRoot(b []byte) (flatbuffers.UOffsetT, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	return flatbuffers.GetUOffsetT(b), nil
}

func fbRecover(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrMalformed, p)
	}
}

func (c *flatbuffersCodec) DecodeRequest(b []byte, r *Request) (err error) {
	defer fbRecover(&err)
	at, err := fbRoot(b)
	if err != nil {
		return err
	}
	var t ethfb.GetBalanceRequest
	t.Init(b, at)
	if err := fixedField("account", r.Account[:], t.AccountBytes()); err != nil {
		return err
	}
	r.Block, r.ID, r.Method = t.Block(), t.Id(), aliasString(t.Method())
	return nil
}

func (c *flatbuffersCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	return c.appendResponse(dst, r.Balance[:], r.Nonce, r.BlockHash[:], r.ID), nil
}

func (c *flatbuffersCodec) appendResponse(dst, balance []byte, nonce uint64, hash []byte, id uint64) []byte {
	b := c.b
	b.Reset()
	bal := b.CreateByteVector(balance)
	h := b.CreateByteVector(hash)
	ethfb.GetBalanceResponseStart(b)
	ethfb.GetBalanceResponseAddBalance(b, bal)
	ethfb.GetBalanceResponseAddNonce(b, nonce)
	ethfb.GetBalanceResponseAddBlockHash(b, h)
	ethfb.GetBalanceResponseAddId(b, id)
	b.Finish(ethfb.GetBalanceResponseEnd(b))
	return append(dst, b.FinishedBytes()...)
}

func (c *flatbuffersCodec) DecodeResponse(b []byte, r *Response) (err error) {
	defer fbRecover(&err)
	at, err := fbRoot(b)
	if err != nil {
		return err
	}
	var t ethfb.GetBalanceResponse
	t.Init(b, at)
	if err := fixedField("balance", r.Balance[:], t.BalanceBytes()); err != nil {
		return err
	}
	if err := fixedField("block_hash", r.BlockHash[:], t.BlockHashBytes()); err != nil {
		return err
	}
	r.Nonce, r.ID = t.Nonce(), t.Id()
	return nil
}

func (c *flatbuffersCodec) Handle(dst, req []byte, tb *Table) (out []byte, err error) {
	defer fbRecover(&err)
	at, err := fbRoot(req)
	if err != nil {
		return dst, err
	}
	var t ethfb.GetBalanceRequest
	t.Init(req, at)
	if aliasString(t.Method()) != Method {
		return dst, ErrMethod
	}
	// The account where it lies in the request, as the zapcodec handler
	// looks it up through its view, not a copy.
	acc := t.AccountBytes()
	if len(acc) != 20 {
		return dst, fmt.Errorf("%w: account has %d bytes, want 20", ErrMalformed, len(acc))
	}
	a, h := tb.Lookup((*[20]byte)(acc), t.Block())
	return c.appendResponse(dst, a.Balance[:], a.Nonce, h[:], t.Id()), nil
}
