package wire

import (
	"encoding/binary"
	"errors"
)

// StreamMsgOverhead is the size of a stream message frame's body beyond
// the message: the stream id.
const StreamMsgOverhead = 4

// streamEndErrOverhead is the size of an error end's body beyond its text:
// id and status.
const streamEndErrOverhead = 8

// ErrStreamFrameShort: a stream frame's body is shorter than its id.
var ErrStreamFrameShort = errors.New("rpc: stream frame shorter than its 4-byte id")

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
// then (zapcodec extension, docs/wire.md §9) the status and the message text.
// A canonical receiver reads it as a clean end; [ParseStreamEnd] reads a
// status of 200 as a clean end and one of 0 as 500.
func AppendStreamEndError(dst []byte, id, status uint32, msg string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	dst = binary.LittleEndian.AppendUint32(dst, status)
	return append(dst, msg...)
}

// AppendStreamNotRun appends the body of a KindStreamNotRun frame (the
// stream id) to dst and returns the extended slice.
func AppendStreamNotRun(dst []byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, id)
}

// ParseStreamNotRun returns the stream id of a KindStreamNotRun body. It
// fails only on a body shorter than the id; bytes after it are ignored.
func ParseStreamNotRun(p []byte) (id uint32, err error) {
	id, _, err = ParseStreamMsg(p)
	return id, err
}

// AppendStreamTrailer appends the body of a KindStreamTrailer frame (the
// stream id, then the encoded metadata md) to dst and returns the
// extended slice.
func AppendStreamTrailer(dst []byte, id uint32, md []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	return append(dst, md...)
}

// ParseStreamTrailer splits the body of a KindStreamTrailer frame into the
// stream id and the encoded metadata, which it does not decode. It fails
// only on a body shorter than the id. md aliases p and is valid only while
// p is unchanged; copy it to keep it.
func ParseStreamTrailer(p []byte) (id uint32, md []byte, err error) {
	return ParseStreamMsg(p)
}

// AppendStreamWindow appends the body of a KindStreamWindow frame.
func AppendStreamWindow(dst []byte, id, n uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, id)
	return binary.LittleEndian.AppendUint32(dst, n)
}

// AppendStreamNoWindow appends the body of the no-window notice, a
// KindStreamWindow frame of 4 bytes, a stream id of 0 alone: the sender
// stops keeping the receiver's windows (a client that took its server for
// a canonical one, no hello having come in time), so its messages may go
// past them from this frame on. An 8-byte reader ignores it (see
// ParseStreamWindow), as a canonical one ignores the kind.
func AppendStreamNoWindow(dst []byte) []byte {
	return binary.LittleEndian.AppendUint32(dst, 0)
}

// IsStreamNoWindow reports whether p, the body of a KindStreamWindow
// frame, is the no-window notice (see AppendStreamNoWindow).
func IsStreamNoWindow(p []byte) bool {
	return len(p) == 4 && binary.LittleEndian.Uint32(p) == 0
}

// ParseStreamMsg splits the body of a KindStreamMsg frame into the stream
// id and the message. It fails only on a body shorter than the id. msg
// aliases p and is valid only while p is unchanged; copy it to keep it.
func ParseStreamMsg(p []byte) (id uint32, msg []byte, err error) {
	if len(p) < StreamMsgOverhead {
		return 0, nil, ErrStreamFrameShort
	}
	return binary.LittleEndian.Uint32(p), p[StreamMsgOverhead:], nil
}

// StreamEnd is a decoded KindStreamEnd body.
type StreamEnd struct {
	ID uint32 // the stream id
	// Status is 0 for a clean end (the canonical body: the id alone, or a
	// status of 200); otherwise the error end's status. A body with 1 to 3
	// bytes after the id (no whole status), or with a status of 0 (no
	// status of docs/wire.md §6), reads as status 500: an error end all
	// the same.
	Status uint32
	// Message is the error end's text, aliasing the parsed bytes; nil for
	// a clean end.
	Message []byte
}

// ParseStreamEnd decodes the body of a KindStreamEnd frame. It fails only
// on a body shorter than the id. Message aliases p and is valid only
// while p is unchanged; copy it to keep it.
func ParseStreamEnd(p []byte) (StreamEnd, error) {
	if len(p) < StreamMsgOverhead {
		return StreamEnd{}, ErrStreamFrameShort
	}
	e := StreamEnd{ID: binary.LittleEndian.Uint32(p)}
	switch {
	case len(p) == StreamMsgOverhead:
	case len(p) < streamEndErrOverhead:
		e.Status = 500 // internal error
	default:
		e.Status = binary.LittleEndian.Uint32(p[4:])
		e.Message = p[streamEndErrOverhead:]
		switch e.Status {
		case 200: // OK: a clean end
			e.Status, e.Message = 0, nil
		case 0: // no status: not to be taken for a clean end, whose Status is 0
			e.Status = 500
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
