package codec

import (
	"encoding/binary"
	"fmt"
)

// Message is a parsed ZAP message: a view of the caller's bytes. It is a
// small value; copying it does not copy the bytes. A Message and everything
// read from it alias the buffer given to [Parse]: they are valid only while
// those bytes are unchanged.
type Message struct {
	b []byte // the message, b[:size]
}

// Parse checks the 16-byte header of b and returns a view of the message it
// holds. Bytes past the header's size field are not part of the message
// ([Split] returns them, for messages written back to back, and tells a
// buffer that ends inside a message from a malformed one). Parse does
// not copy b and does not allocate unless it fails.
//
// Errors are a *[ParseError] whose Offset says where b broke and whose
// sentinel (errors.Is) says how: [ErrTooSmall] (len(b) < 16: offset
// len(b); size < 16 or size > len(b): offset 12, the size field),
// [ErrMagic] (offset of the first wrong byte of the magic), [ErrVersion]
// (offset 4).
func Parse(b []byte) (Message, error) {
	// One test for the whole header, so that Parse inlines into its
	// callers; parseFailure works out what was wrong.
	if len(b) >= HeaderSize {
		h := binary.LittleEndian.Uint64(b) // magic, version, flags
		size := binary.LittleEndian.Uint32(b[offSize:])
		if uint32(h) == magic32 && uint16(h>>32)-Version1 <= Version2-Version1 &&
			size >= HeaderSize && uint64(size) <= uint64(len(b)) {
			return Message{b: b[:size]}, nil
		}
	}
	return Message{}, parseFailure(b)
}

// parseFailure returns the *ParseError of a header Parse rejected.
//
//go:noinline
func parseFailure(b []byte) error {
	switch {
	case len(b) < HeaderSize:
		return &ParseError{Offset: len(b), Err: ErrTooSmall,
			Reason: fmt.Sprintf("message header truncated: need %d bytes, have %d", HeaderSize, len(b))}
	case string(b[:4]) != Magic:
		return &ParseError{Offset: magicBreak(b), Err: ErrMagic,
			Reason: fmt.Sprintf("expected magic \"ZAP\\x00\" (5a 41 50 00), found % x", b[:4])}
	}
	if v := binary.LittleEndian.Uint16(b[offVersion:]); v != Version1 && v != Version2 {
		return &ParseError{Offset: offVersion, Err: ErrVersion,
			Reason: fmt.Sprintf("version %d, expected 1 or 2", v)}
	}
	return &ParseError{Offset: offSize, Err: ErrTooSmall,
		Reason: fmt.Sprintf("size %d, expected %d..%d (the bytes present)", binary.LittleEndian.Uint32(b[offSize:]), HeaderSize, len(b))}
}

// magic32 is Magic read as a little-endian uint32.
const magic32 = 'Z' | 'A'<<8 | 'P'<<16

// magicBreak returns the position of the first byte of b that differs from
// the magic; b differs from it in one of its first min(len(b), 4) bytes.
func magicBreak(b []byte) int {
	i := 0
	for i < 3 && b[i] == Magic[i] {
		i++
	}
	return i
}

// Root returns the root object. A root offset that points into the header or
// past the end gives a null object whose reads are all zero. A root offset
// equal to the size is the zero-size root the builder writes for an object
// of no bytes at the end of the message: it is not null, and its reads are
// all zero too.
func (m Message) Root() Object {
	if len(m.b) < HeaderSize {
		return Object{}
	}
	pos := binary.LittleEndian.Uint32(m.b[offRoot:])
	if uint64(pos) == uint64(len(m.b)) {
		return Object{b: m.b, pos: int(pos)}
	}
	return objectAt(m.b, uint64(pos))
}

// Version returns the header version (1 or 2); 0 for the zero Message.
func (m Message) Version() uint16 {
	if len(m.b) < HeaderSize {
		return 0
	}
	return binary.LittleEndian.Uint16(m.b[offVersion:])
}

// Flags returns the header flags word: bits 0–2 are [FlagCompressed],
// [FlagEncrypted] and [FlagSigned]; the high byte is the message type.
func (m Message) Flags() uint16 {
	if len(m.b) < HeaderSize {
		return 0
	}
	return binary.LittleEndian.Uint16(m.b[offFlags:])
}

// SetHeader sets, in place, the version (1 or 2) and flags words of the
// message msg starts with: how a caller picks them for a message that an
// encoder wrote with its defaults (generated AppendZAP writes version 1,
// flags 0; [Builder.SetVersion] and [Builder.SetFlags] are the builder's
// way). The data segment of versions 1 and 2 is the same, so nothing else
// changes. It returns Parse's error, and changes nothing, when msg does
// not start with a message Parse accepts, and an error matching
// [ErrVersion] for a version other than 1 or 2.
func SetHeader(msg []byte, version, flags uint16) error {
	if _, err := Parse(msg); err != nil {
		return err
	}
	if version != Version1 && version != Version2 {
		return &ParseError{Offset: offVersion, Err: ErrVersion,
			Reason: fmt.Sprintf("version %d, expected 1 or 2", version)}
	}
	binary.LittleEndian.PutUint16(msg[offVersion:], version)
	binary.LittleEndian.PutUint16(msg[offFlags:], flags)
	return nil
}

// Type returns the message type carried in the high byte of the flags word
// (200 for RPC envelopes).
func (m Message) Type() uint8 { return uint8(m.Flags() >> 8) }

// Size returns the message length, header included.
func (m Message) Size() int { return len(m.b) }

// Bytes returns the message bytes, b[:Size()] of the buffer given to Parse.
// The result aliases that buffer; its capacity ends at Size() too, so
// that appending to it copies instead of writing over the bytes that
// follow the message in the buffer.
func (m Message) Bytes() []byte { return m.b[:len(m.b):len(m.b)] }

// BytesAt reads the bytes slot at position pos of the message (from its
// start: an object's [Object.Pos] plus the field's offset) as
// [Object.Bytes] reads a field, and reports with ok whether the read was
// well formed: ok is false exactly when [Object.CheckedBytes] of the same
// slot fails (the slot, or the value it points to, is not inside the
// message), and a caller that must say where the input broke asks
// CheckedBytes for the error then. A null slot gives nil and true. It is
// small enough to inline, for parsers on a per-call path. The result
// aliases the message.
func (m Message) BytesAt(pos int) (b []byte, ok bool) {
	if pos < 0 || pos > len(m.b)-BytesSlotSize {
		return nil, false
	}
	v := binary.LittleEndian.Uint64(m.b[pos:])
	rel := v & 0xFFFFFFFF
	if rel == 0 {
		return nil, true
	}
	start := uint64(pos) + rel
	end := start + v>>32
	if start < HeaderSize || end > uint64(len(m.b)) {
		return nil, false
	}
	return m.b[start:end:end], true
}

// objectAt returns the object at absolute position pos of msg, or a null
// object when pos is inside the header or at or past the end. pos is 64
// bits wide: a view of a buffer over 4 GiB (VarListOf) has positions
// past 32 bits.
func objectAt(msg []byte, pos uint64) Object {
	if pos < HeaderSize || pos >= uint64(len(msg)) {
		return Object{}
	}
	return Object{b: msg, pos: int(pos)}
}
