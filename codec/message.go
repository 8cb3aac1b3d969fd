package codec

import "encoding/binary"

// Message is a parsed ZAP message: a view of the caller's bytes. It is a
// small value; copying it does not copy the bytes. A Message and everything
// read from it alias the buffer given to [Parse]: they are valid only while
// those bytes are unchanged.
type Message struct {
	b []byte // the message, b[:size]
}

// Parse checks the 16-byte header of b and returns a view of the message it
// holds. Bytes past the header's size field are not part of the message.
// Parse does not copy b and does not allocate.
//
// Possible errors: [ErrTooSmall] (len(b) < 16, size < 16 or size > len(b)),
// [ErrMagic], [ErrVersion].
func Parse(b []byte) (Message, error) {
	if len(b) < HeaderSize {
		return Message{}, ErrTooSmall
	}
	if string(b[:4]) != Magic {
		return Message{}, ErrMagic
	}
	if v := binary.LittleEndian.Uint16(b[offVersion:]); v != Version1 && v != Version2 {
		return Message{}, ErrVersion
	}
	size := binary.LittleEndian.Uint32(b[offSize:])
	if size < HeaderSize || uint64(size) > uint64(len(b)) {
		return Message{}, ErrTooSmall
	}
	return Message{b: b[:size]}, nil
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
	return objectAt(m.b, pos)
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

// Type returns the message type carried in the high byte of the flags word
// (200 for RPC envelopes).
func (m Message) Type() uint8 { return uint8(m.Flags() >> 8) }

// Size returns the message length, header included.
func (m Message) Size() int { return len(m.b) }

// Bytes returns the message bytes, b[:Size()] of the buffer given to Parse.
// The result aliases that buffer.
func (m Message) Bytes() []byte { return m.b }

// objectAt returns the object at absolute position pos of msg, or a null
// object when pos is inside the header or at or past the end.
func objectAt(msg []byte, pos uint32) Object {
	if pos < HeaderSize || uint64(pos) >= uint64(len(msg)) {
		return Object{}
	}
	return Object{b: msg, pos: int(pos)}
}
