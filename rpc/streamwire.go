package rpc

import (
	"encoding/binary"
	"errors"
)

// Stream frame kinds (WIRE.md §6) and the flow-control kind of this
// package (WIRE.md §8 extension).
const (
	// KindStreamOpen opens a stream: its body is a request envelope whose
	// promise_id is the stream id, method the method ordinal and payload
	// the initial message.
	KindStreamOpen = 3
	// KindStreamMsg carries one stream message: [u32 LE stream id][message].
	KindStreamMsg = 4
	// KindStreamEnd half-closes the sender's direction of a stream:
	// [u32 LE stream id], optionally followed (zapcodec extension) by
	// [u32 LE status][message text] for an error end. A canonical receiver
	// ignores the bytes after the id and reads a clean end.
	KindStreamEnd = 5
	// KindStreamWindow is this package's flow-control frame (a canonical
	// peer ignores it): [u32 LE stream id][u32 LE bytes]. For a stream id
	// other than 0 it grants the peer that many more bytes of messages on
	// the stream (each message counts its length plus 4); for id 0 it is
	// the hello: the sender does flow control and gives every stream it
	// receives on a window of that many bytes.
	KindStreamWindow = 9
)

// StreamMsgOverhead is the size of a stream message frame's body beyond
// the message: the stream id.
const StreamMsgOverhead = 4

// streamEndErrOverhead is the size of an error end's body beyond its text:
// id and status.
const streamEndErrOverhead = 8

// errStreamFrameShort: a stream frame's body is shorter than its id.
var errStreamFrameShort = errors.New("rpc: stream frame shorter than its 4-byte id")

// AppendStreamMsg appends the body of a KindStreamMsg frame (stream id,
// then msg) to dst and returns the extended slice.
func AppendStreamMsg(dst []byte, id uint32, msg []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	return append(dst, msg...)
}

// AppendStreamEnd appends the body of a clean KindStreamEnd frame (the
// stream id alone, as the canonical runtime writes it) to dst.
func AppendStreamEnd(dst []byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, id)
}

// AppendStreamEndError appends the body of an error end: the stream id,
// then (zapcodec extension, WIRE.md §8) the status and the message text.
// A canonical receiver reads it as a clean end.
func AppendStreamEndError(dst []byte, id, status uint32, msg string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	dst = binary.LittleEndian.AppendUint32(dst, status)
	return append(dst, msg...)
}

// AppendStreamWindow appends the body of a KindStreamWindow frame.
func AppendStreamWindow(dst []byte, id, n uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	return binary.LittleEndian.AppendUint32(dst, n)
}

// ParseStreamMsg splits the body of a KindStreamMsg frame into the stream
// id and the message (aliasing p). It fails only on a body shorter than
// the id.
func ParseStreamMsg(p []byte) (id uint32, msg []byte, err error) {
	if len(p) < StreamMsgOverhead {
		return 0, nil, errStreamFrameShort
	}
	return binary.LittleEndian.Uint32(p), p[StreamMsgOverhead:], nil
}

// StreamEnd is a decoded KindStreamEnd body.
type StreamEnd struct {
	ID uint32
	// Status is 0 for a clean end (the canonical body: the id alone, or a
	// status of 200); otherwise the error end's status. A body with 1 to 3
	// bytes after the id (no whole status) reads as status 500.
	Status uint32
	// Message is the error end's text, aliasing the parsed bytes.
	Message []byte
}

// ParseStreamEnd decodes the body of a KindStreamEnd frame. It fails only
// on a body shorter than the id; Message aliases p.
func ParseStreamEnd(p []byte) (StreamEnd, error) {
	if len(p) < StreamMsgOverhead {
		return StreamEnd{}, errStreamFrameShort
	}
	e := StreamEnd{ID: binary.LittleEndian.Uint32(p)}
	switch {
	case len(p) == StreamMsgOverhead:
	case len(p) < streamEndErrOverhead:
		e.Status = StatusInternal
	default:
		e.Status = binary.LittleEndian.Uint32(p[4:])
		e.Message = p[streamEndErrOverhead:]
		if e.Status == StatusOK {
			e.Status, e.Message = 0, nil
		}
	}
	return e, nil
}

// ParseStreamWindow decodes the body of a KindStreamWindow frame; ok is
// false unless it is exactly 8 bytes (a reader ignores such a frame).
func ParseStreamWindow(p []byte) (id, n uint32, ok bool) {
	if len(p) != 8 {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]), true
}
