package compare

// The zapcodec arm, on the records `zapcodec gen` generated from the eth
// schema (package ethzap of examples/ethrpc, the same layout as
// testdata/canonical/schemas/eth.zap). Request and Response have the same fields
// as the generated records, so pointers convert without a copy.

import (
	"encoding/binary"
	"fmt"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
)

// Zapcodec is the zapcodec arm. It holds no state.
type Zapcodec struct{}

// NewZapcodec returns a zapcodec arm.
func NewZapcodec() *Zapcodec { return &Zapcodec{} }

// Name implements Codec.
func (*Zapcodec) Name() string { return "zapcodec" }

// AppendRequest implements Codec.
func (*Zapcodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	return (*ethzap.GetBalanceRequest)(r).AppendZAP(dst), nil
}

// isWhole reports whether the header at the start of b says that b is one
// message with nothing after it and a root object of at least fixed bytes
// (the generated reader checks the rest of the header): the other arms
// refuse such input too, where the generated reader would read the missing
// fields as zero. It reads the root offset and size as one word and is
// small enough to inline; notWhole says what was wrong.
func isWhole(b []byte, fixed int) bool {
	if len(b) < codec.HeaderSize {
		return false
	}
	rs := binary.LittleEndian.Uint64(b[8:])
	root, size := rs&0xFFFF_FFFF, rs>>32
	return size == uint64(len(b)) && root >= codec.HeaderSize && root+uint64(fixed) <= size
}

// notWhole returns the error for a b that isWhole refused.
//
//go:noinline
func notWhole(b []byte, fixed int) error {
	if len(b) < codec.HeaderSize {
		return fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if size := int(binary.LittleEndian.Uint32(b[12:])); size != len(b) {
		return fmt.Errorf("%w: %d bytes after the message", ErrMalformed, len(b)-size)
	}
	return fmt.Errorf("%w: root object shorter than %d bytes", ErrMalformed, fixed)
}

// DecodeRequest implements Codec. The generated DecodeZAP copies the
// Method text (it allocates only when the value changes). The whole-message
// check comes first, so that b goes on to DecodeZAP without being kept
// across the call; for input it refuses, DecodeZAP still runs first to
// report a malformed header as its own error.
func (*Zapcodec) DecodeRequest(b []byte, r *Request) error {
	if !isWhole(b, 44) {
		if err := (*ethzap.GetBalanceRequest)(r).DecodeZAP(b); err != nil {
			return err // no message: the generated reader's own error
		}
		return notWhole(b, 44)
	}
	return (*ethzap.GetBalanceRequest)(r).DecodeZAP(b)
}

// AppendResponse implements Codec.
func (*Zapcodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	return (*ethzap.GetBalanceResponse)(r).AppendZAP(dst), nil
}

// DecodeResponse implements Codec.
func (*Zapcodec) DecodeResponse(b []byte, r *Response) error {
	if !isWhole(b, 80) {
		if err := (*ethzap.GetBalanceResponse)(r).DecodeZAP(b); err != nil {
			return err
		}
		return notWhole(b, 80)
	}
	return (*ethzap.GetBalanceResponse)(r).DecodeZAP(b)
}

// Handle implements Codec: it reads the request through the generated view
// (no copy) and appends the generated response record.
func (*Zapcodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	v, err := ethzap.ReadGetBalanceRequest(req)
	if err != nil {
		return dst, err
	}
	if !isWhole(req, 44) {
		return dst, notWhole(req, 44)
	}
	if v.Method() != Method {
		return dst, ErrMethod
	}
	// The account in place: a copy to the stack, read back at once by
	// the map's hash, cost 17 ns more (most likely a stall on the copy's
	// stores).
	addr := (*[20]byte)(v.AccountBytes())
	if addr == nil {
		addr = &[20]byte{}
	}
	a, h := t.Lookup(addr, v.Block())
	resp := ethzap.GetBalanceResponse{Balance: a.Balance, Nonce: a.Nonce, BlockHash: *h, ID: v.ID()}
	return resp.AppendZAP(dst), nil
}
