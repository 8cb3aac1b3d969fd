package compare

// The floor: the same records written by hand as fixed little-endian
// fields (request: account, block, id, u32 method length, method; response:
// balance, nonce, block hash, id). No schema, no framing, no evolution: the
// least work any codec can do for these fields, to read the others against.

import (
	"encoding/binary"
	"fmt"
)

type floorCodec struct{}

func newFloor() floorCodec { return floorCodec{} }

func (floorCodec) Name() string { return "floor (by hand)" }

func (floorCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	dst = append(dst, r.Account[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, r.Block)
	dst = binary.LittleEndian.AppendUint64(dst, r.ID)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.Method)))
	return append(dst, r.Method...), nil
}

func (floorCodec) DecodeRequest(b []byte, r *Request) error {
	if len(b) < 40 || uint64(len(b)-40) != uint64(binary.LittleEndian.Uint32(b[36:])) {
		return fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	copy(r.Account[:], b[:20])
	r.Block = binary.LittleEndian.Uint64(b[20:])
	r.ID = binary.LittleEndian.Uint64(b[28:])
	r.Method = aliasString(b[40:])
	return nil
}

func (floorCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	return floorResponse(dst, &r.Balance, r.Nonce, &r.BlockHash, r.ID), nil
}

func floorResponse(dst []byte, balance *[32]byte, nonce uint64, hash *[32]byte, id uint64) []byte {
	dst = append(dst, balance[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, nonce)
	dst = append(dst, hash[:]...)
	return binary.LittleEndian.AppendUint64(dst, id)
}

func (floorCodec) DecodeResponse(b []byte, r *Response) error {
	if len(b) != 80 {
		return fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	copy(r.Balance[:], b[:32])
	r.Nonce = binary.LittleEndian.Uint64(b[32:])
	copy(r.BlockHash[:], b[40:72])
	r.ID = binary.LittleEndian.Uint64(b[72:])
	return nil
}

func (c floorCodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	var r Request
	if err := c.DecodeRequest(req, &r); err != nil {
		return dst, err
	}
	if r.Method != Method {
		return dst, ErrMethod
	}
	a, h := t.Lookup(&r.Account, r.Block)
	return floorResponse(dst, &a.Balance, a.Nonce, h, r.ID), nil
}
