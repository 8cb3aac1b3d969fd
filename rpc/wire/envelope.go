package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Envelope layout constants (docs/wire.md §6). The request and the response are
// each one ZAP message: a 16-byte header, the root object right after it
// (offset 16 is already 8-aligned), then the tails in set order.
const (
	// EnvelopeVersion is the header version the canonical runtime writes
	// for RPC envelopes.
	EnvelopeVersion = 2
	// EnvelopeFlags is the header flags word of an envelope: message type
	// 200 in the high byte.
	EnvelopeFlags = 0xC800
	// EnvelopeType is the message type (flags >> 8) of an envelope.
	EnvelopeType = 200

	// RequestFixedSize is the size of the request's fixed section.
	RequestFixedSize = 28
	// ResponseFixedSize is the size of the response's fixed section.
	ResponseFixedSize = 20

	headerSize = 16
	rootOffset = headerSize

	reqMethod  = 0
	reqPromise = 4
	reqTarget  = 8
	reqCap     = 12
	reqPayload = 20

	respStatus  = 0
	respPromise = 4
	respBody    = 12

	// respFlags is a zapcodec extension field (a u32 past the canonical
	// fixed section, docs/wire.md §8), present only in answers that set a flag:
	// the fixed section is then respExtFixedSize bytes. A canonical reader
	// reads its fields at their offsets and never looks here.
	respFlags        = 20
	respExtFixedSize = 24
	// respFlagNotRun marks an answer the server sent without running the
	// handler (a refusal after go-away): the call may be sent again.
	respFlagNotRun = 1

	// Request extension fields (zapcodec, docs/wire.md §8), past the canonical
	// 28-byte fixed section. They are written only when used: a request
	// with a deadline has a fixed section of reqExtDeadlineSize bytes (the
	// remaining time at reqTimeout), one with metadata reqExtFixedSize
	// bytes (the timeout word then 0 when there is no deadline). A field
	// is present only when it lies before the first tail of the message
	// (see fixedEnd); canonical writers put the tails right after the
	// canonical fixed section, so a canonical request never has one. A
	// canonical reader reads its fields at their offsets and never looks
	// here.
	reqTimeout         = 28 // u64: microseconds left until the caller's deadline, 0 none
	reqMetadata        = 36 // bytes: key/value metadata (see encodeMetadata)
	reqExtDeadlineSize = 36
	reqExtFixedSize    = 44

	// RequestOverhead is the size of a request envelope with empty cap and
	// payload: header plus fixed section.
	RequestOverhead = headerSize + RequestFixedSize
	// ResponseOverhead is the size of a response envelope with an empty
	// body: header plus fixed section.
	ResponseOverhead = headerSize + ResponseFixedSize
)

// Request is a decoded or to-be-encoded call envelope. Cap and Payload
// alias the bytes they were parsed from (see [ParseRequest]).
type Request struct {
	Method    uint32 // 1-based method ordinal
	PromiseID uint32 // echoed by the answer
	Target    uint32 // 0, or the promise_id this call pipelines on
	Cap       []byte // opaque capability token, may be empty
	Payload   []byte // the request message, may be empty

	// Timeout is a zapcodec extension (docs/wire.md §8): the time left until
	// the caller's deadline when the request was built, in microseconds,
	// relative so that the two hosts' clocks need not agree; 0 means no
	// deadline. A canonical peer never sets it, and ignores it.
	Timeout uint64
	// Metadata is a zapcodec extension (docs/wire.md §8): key/value pairs in
	// the encoding of rpc.Metadata (each key and value a u32 little-endian
	// length and its bytes, key first), empty when there are none. A
	// canonical peer never sets it, and ignores it.
	Metadata []byte
}

// Response is a decoded or to-be-encoded answer envelope. Body aliases the
// bytes it was parsed from (see [ParseResponse]).
type Response struct {
	Status    uint32
	PromiseID uint32
	Body      []byte
	// NotRun is a zapcodec extension (docs/wire.md §8): the server refused the
	// call without running its handler, so it may be sent again. Only a
	// server's own refusal sets it; no handler return value can. A
	// canonical peer never sets it, and ignores it.
	NotRun bool
}

// AppendRequest appends the request envelope for r to dst and returns the
// extended slice. Without extension values (Timeout 0, no Metadata) it is
// byte-identical to the canonical rpc.BuildRequest: header (version 2,
// flags 0xC800, root 16, size), the 28-byte fixed section, then cap and
// payload with no padding. Empty cap or payload is a {0,0} slot. With a
// Timeout the fixed section grows to 36 bytes (u64 at offset 28), with
// Metadata to 44 (bytes slot at offset 36, its tail after the payload).
// dst may be nil; r's slices are only read.
func AppendRequest(dst []byte, r *Request) []byte {
	fixed := RequestFixedSize
	switch {
	case len(r.Metadata) > 0:
		fixed = reqExtFixedSize
	case r.Timeout != 0:
		fixed = reqExtDeadlineSize
	}
	size := headerSize + fixed + len(r.Cap) + len(r.Payload) + len(r.Metadata)
	dst = appendHeader(dst, uint32(size))
	dst = binary.LittleEndian.AppendUint32(dst, r.Method)
	dst = binary.LittleEndian.AppendUint32(dst, r.PromiseID)
	dst = binary.LittleEndian.AppendUint32(dst, r.Target)
	pos := headerSize + fixed // where the next tail lands
	dst, pos = appendSlot(dst, headerSize+reqCap, pos, len(r.Cap))
	dst, pos = appendSlot(dst, headerSize+reqPayload, pos, len(r.Payload))
	if fixed > RequestFixedSize {
		dst = binary.LittleEndian.AppendUint64(dst, r.Timeout)
	}
	if fixed > reqExtDeadlineSize {
		dst, _ = appendSlot(dst, headerSize+reqMetadata, pos, len(r.Metadata))
	}
	dst = append(dst, r.Cap...)
	dst = append(dst, r.Payload...)
	dst = append(dst, r.Metadata...)
	return dst
}

// AppendResponse appends the answer envelope for r to dst and returns the
// extended slice, byte-identical to the canonical rpc.BuildResponse. An
// empty body is a {0,0} slot. dst may be nil; r.Body is only read.
func AppendResponse(dst []byte, r *Response) []byte {
	if r.NotRun {
		dst = AppendRefusalHeader(dst, r.Status, r.PromiseID, len(r.Body))
	} else {
		dst = AppendResponseHeader(dst, r.Status, r.PromiseID, len(r.Body))
	}
	return append(dst, r.Body...)
}

// AppendResponseHeader appends a response envelope's header and fixed
// section for a body of bodyLen bytes; the caller must append exactly
// bodyLen body bytes right after it. It lets a server build the body in
// place after the header.
func AppendResponseHeader(dst []byte, status, promiseID uint32, bodyLen int) []byte {
	dst = appendHeader(dst, uint32(ResponseOverhead+bodyLen))
	dst = binary.LittleEndian.AppendUint32(dst, status)
	dst = binary.LittleEndian.AppendUint32(dst, promiseID)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst, _ = appendSlot(dst, headerSize+respBody, ResponseOverhead, bodyLen)
	return dst
}

// AppendRefusalHeader is [AppendResponseHeader] for an answer whose
// handler did not run (a [Response] with NotRun): the fixed section
// carries the flags extension field (docs/wire.md §8) with the not-run bit, and
// the caller must append exactly bodyLen body bytes right after it.
func AppendRefusalHeader(dst []byte, status, promiseID uint32, bodyLen int) []byte {
	const overhead = headerSize + respExtFixedSize
	dst = appendHeader(dst, uint32(overhead+bodyLen))
	dst = binary.LittleEndian.AppendUint32(dst, status)
	dst = binary.LittleEndian.AppendUint32(dst, promiseID)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst, _ = appendSlot(dst, headerSize+respBody, overhead, bodyLen)
	return binary.LittleEndian.AppendUint32(dst, respFlagNotRun)
}

// patchResponseBodyLen rewrites the size and body slot of a response
// envelope that starts at env[0] and was written by AppendResponseHeader
// with a provisional body length.
func patchResponseBodyLen(env []byte, bodyLen int) {
	binary.LittleEndian.PutUint32(env[12:], uint32(ResponseOverhead+bodyLen))
	slot := env[headerSize+respBody:]
	if bodyLen == 0 {
		binary.LittleEndian.PutUint32(slot, 0)
		binary.LittleEndian.PutUint32(slot[4:], 0)
		return
	}
	binary.LittleEndian.PutUint32(slot, uint32(ResponseOverhead-(headerSize+respBody)))
	binary.LittleEndian.PutUint32(slot[4:], uint32(bodyLen))
}

func appendHeader(dst []byte, size uint32) []byte {
	dst = append(dst, 'Z', 'A', 'P', 0)
	dst = binary.LittleEndian.AppendUint16(dst, EnvelopeVersion)
	dst = binary.LittleEndian.AppendUint16(dst, EnvelopeFlags)
	dst = binary.LittleEndian.AppendUint32(dst, rootOffset)
	dst = binary.LittleEndian.AppendUint32(dst, size)
	return dst
}

// appendSlot appends a bytes slot located at absolute position slotPos for
// a tail of n bytes that will start at absolute position tailPos; it
// returns the position after that tail.
func appendSlot(dst []byte, slotPos, tailPos, n int) ([]byte, int) {
	if n == 0 {
		return binary.LittleEndian.AppendUint64(dst, 0), tailPos
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(tailPos-slotPos))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	return dst, tailPos + n
}

// ErrMalformed: an envelope did not decode (see [EnvelopeError]). Package
// rpc exports the same value as rpc.ErrMalformed.
var ErrMalformed = errors.New("rpc: malformed envelope")

// EnvelopeError describes a malformed envelope: which part failed and, when
// it could be read, the promise_id (so a server can still answer 400).
// It matches [ErrMalformed] with errors.Is.
type EnvelopeError struct {
	Reason    string // e.g. "fixed section truncated"
	PromiseID uint32 // valid only when HasPromise
	// HasPromise reports whether the promise_id field was readable.
	HasPromise bool
}

func (e *EnvelopeError) Error() string {
	if e.HasPromise {
		return fmt.Sprintf("rpc: malformed envelope (promise:%d): %s", e.PromiseID, e.Reason)
	}
	return "rpc: malformed envelope: " + e.Reason
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *EnvelopeError) Is(target error) bool { return target == ErrMalformed }

// Preallocated reasons: a hostile peer must not make the parser allocate.
var (
	errEnvShort   = &EnvelopeError{Reason: "shorter than the 16-byte header"}
	errEnvMagic   = &EnvelopeError{Reason: "bad magic"}
	errEnvVersion = &EnvelopeError{Reason: "version not 1 or 2"}
	errEnvSize    = &EnvelopeError{Reason: "size field outside the buffer"}
	errEnvType    = &EnvelopeError{Reason: "message type is not 200"}
	errEnvRoot    = &EnvelopeError{Reason: "root offset outside the message"}
	errEnvPromise = &EnvelopeError{Reason: "promise_id truncated"}
)

// envelopeRoot checks the message header of an envelope and returns the
// message (b[:size]) and its root position.
func envelopeRoot(b []byte) (msg []byte, root int, err error) {
	if len(b) < headerSize {
		return nil, 0, errEnvShort
	}
	if b[0] != 'Z' || b[1] != 'A' || b[2] != 'P' || b[3] != 0 {
		return nil, 0, errEnvMagic
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != 1 && v != 2 {
		return nil, 0, errEnvVersion
	}
	if b[7] != EnvelopeType {
		return nil, 0, errEnvType
	}
	size := binary.LittleEndian.Uint32(b[12:])
	if size < headerSize || uint64(size) > uint64(len(b)) {
		return nil, 0, errEnvSize
	}
	msg = b[:size]
	r := binary.LittleEndian.Uint32(b[8:])
	if r < headerSize || r >= size {
		return nil, 0, errEnvRoot
	}
	return msg, int(r), nil
}

// readBytesSlot reads the bytes slot at absolute position slot of msg.
// {0, n} is empty (null); a non-zero offset must point inside the data
// segment with the whole value inside the message.
func readBytesSlot(msg []byte, slot int) ([]byte, bool) {
	rel := binary.LittleEndian.Uint32(msg[slot:])
	n := binary.LittleEndian.Uint32(msg[slot+4:])
	if rel == 0 {
		return nil, true
	}
	at := uint64(slot) + uint64(rel)
	if at < headerSize || at+uint64(n) > uint64(len(msg)) {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	return msg[at : at+uint64(n) : at+uint64(n)], true
}

// ParseRequest decodes a request envelope. It checks the message header
// (magic, version 1 or 2, type 200, size within b, root inside the
// message), requires the whole 28-byte fixed section inside the message,
// and requires cap and payload to lie inside it. The extension fields
// (Timeout, Metadata) are read only when present: when they lie before
// the first tail of cap and payload (see fixedEnd); Metadata must then lie
// inside the message too (its content is checked by the server, see
// rpc.Metadata). Errors are
// *[EnvelopeError] (errors.Is [ErrMalformed]); PromiseID is reported in the
// error when it was readable. Cap and Payload alias b and are valid as long
// as b is unchanged. Never panics; allocates only for an error that
// carries a promise_id.
func ParseRequest(b []byte) (Request, error) {
	msg, root, err := envelopeRoot(b)
	if err != nil {
		return Request{}, err
	}
	if root+reqPromise+4 > len(msg) {
		return Request{}, errEnvPromise
	}
	r := Request{PromiseID: binary.LittleEndian.Uint32(msg[root+reqPromise:])}
	if root+RequestFixedSize > len(msg) {
		return r, &EnvelopeError{Reason: "request fixed section truncated", PromiseID: r.PromiseID, HasPromise: true}
	}
	r.Method = binary.LittleEndian.Uint32(msg[root+reqMethod:])
	r.Target = binary.LittleEndian.Uint32(msg[root+reqTarget:])
	var ok bool
	if r.Cap, ok = readBytesSlot(msg, root+reqCap); !ok {
		return r, &EnvelopeError{Reason: "cap outside the message", PromiseID: r.PromiseID, HasPromise: true}
	}
	if r.Payload, ok = readBytesSlot(msg, root+reqPayload); !ok {
		return r, &EnvelopeError{Reason: "payload outside the message", PromiseID: r.PromiseID, HasPromise: true}
	}
	if fe := root + RequestFixedSize; fe < len(msg) {
		// Room for extension fields: where does the fixed section end?
		fe = fixedEnd(msg, root+reqCap, root+reqPayload)
		if root+reqExtDeadlineSize <= fe {
			r.Timeout = binary.LittleEndian.Uint64(msg[root+reqTimeout:])
		}
		if root+reqExtFixedSize <= fe {
			if r.Metadata, ok = readBytesSlot(msg, root+reqMetadata); !ok {
				return r, &EnvelopeError{Reason: "metadata outside the message", PromiseID: r.PromiseID, HasPromise: true}
			}
		}
	}
	return r, nil
}

// ParseResponse decodes an answer envelope with the same checks as
// [ParseRequest] (fixed section of 20 bytes, body inside the message).
// Body aliases b and is valid as long as b is unchanged. Never panics.
func ParseResponse(b []byte) (Response, error) {
	msg, root, err := envelopeRoot(b)
	if err != nil {
		return Response{}, err
	}
	if root+respPromise+4 > len(msg) {
		return Response{}, errEnvPromise
	}
	r := Response{PromiseID: binary.LittleEndian.Uint32(msg[root+respPromise:])}
	if root+ResponseFixedSize > len(msg) {
		return r, &EnvelopeError{Reason: "response fixed section truncated", PromiseID: r.PromiseID, HasPromise: true}
	}
	r.Status = binary.LittleEndian.Uint32(msg[root+respStatus:])
	var ok bool
	if r.Body, ok = readBytesSlot(msg, root+respBody); !ok {
		return r, &EnvelopeError{Reason: "body outside the message", PromiseID: r.PromiseID, HasPromise: true}
	}
	if root+respExtFixedSize <= fixedEnd(msg, root+respBody) {
		r.NotRun = binary.LittleEndian.Uint32(msg[root+respFlags:])&respFlagNotRun != 0
	}
	return r, nil
}

// fixedEnd returns where the fixed section of an envelope object ends at
// the latest: the start of its first tail (the smallest target of the
// bytes slots at the absolute positions slots, whose values the builder
// appends right after the fixed section), or the message end when those
// slots are all empty. Extension fields lie before it; a canonical
// envelope has none, because its first tail starts right at the end of
// the canonical fixed section and an envelope without tails ends there.
// msg must be a checked envelope with the slots inside it.
func fixedEnd(msg []byte, slots ...int) int {
	end := uint64(len(msg))
	for _, slot := range slots {
		if rel := binary.LittleEndian.Uint32(msg[slot:]); rel != 0 {
			if at := uint64(slot) + uint64(rel); at < end {
				end = at
			}
		}
	}
	return int(end)
}
