package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/zapcodec/zapcodec/codec"
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

	headerSize = codec.HeaderSize
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
	// respFlagDeflate marks an answer whose body is compressed (raw
	// DEFLATE, RFC 1951), sent only to a request that set
	// reqFlagAcceptDeflate.
	respFlagDeflate = 2
	// respFlagTakesDeflate: the server takes requests whose payload is
	// compressed (reqFlagPayloadDeflate).
	respFlagTakesDeflate = 4
	// respMetadata is the response's metadata extension field (bytes,
	// docs/wire.md §8), present only in answers whose handler set
	// response metadata: the fixed section is then respMDFixedSize bytes
	// (the flags word written, 0 without a flag), and the metadata's
	// value follows the body's.
	respMetadata    = 24
	respMDFixedSize = 32

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
	// reqFlags is the request's flags word (u32), present only in
	// requests that set a flag: the fixed section is then
	// reqExtFlagsSize bytes, the timeout word and the metadata slot
	// written (0 and null when unused).
	reqFlags        = 44
	reqExtFlagsSize = 48
	// reqFlagAcceptDeflate: the caller takes an answer whose body is
	// compressed (respFlagDeflate).
	reqFlagAcceptDeflate = 1
	// reqFlagPayloadDeflate: the payload is compressed (raw DEFLATE),
	// sent only to a server that said it takes it (respFlagTakesDeflate).
	reqFlagPayloadDeflate = 2

	// RequestOverhead is the size of a request envelope with empty cap and
	// payload: header plus fixed section.
	RequestOverhead = headerSize + RequestFixedSize
	// ResponseOverhead is the size of a response envelope with an empty
	// body: header plus fixed section.
	ResponseOverhead = headerSize + ResponseFixedSize
)

// Request is a decoded or to-be-encoded call envelope. Cap, Payload and
// Metadata alias the bytes they were parsed from and are valid only while
// those bytes are unchanged (see [ParseRequest]); copy them to keep them.
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
	// AcceptDeflate is a zapcodec extension (docs/wire.md §8, the
	// request's flags word): the caller takes an answer whose body is
	// compressed with raw DEFLATE ([Response].Deflated). A canonical peer
	// never sets it, and ignores it.
	AcceptDeflate bool
	// PayloadDeflated is a zapcodec extension (docs/wire.md §8, bit 1 of
	// the request's flags word): Payload is compressed with raw DEFLATE.
	// A client sets it only on a connection whose server said it takes
	// such requests ([Response].TakesDeflate).
	PayloadDeflated bool
}

// Response is a decoded or to-be-encoded answer envelope. Body aliases the
// bytes it was parsed from and is valid only while those bytes are
// unchanged (see [ParseResponse]); copy it to keep it.
type Response struct {
	Status    uint32 // 200 OK, else the error status (docs/wire.md §6)
	PromiseID uint32 // the request's promise_id
	Body      []byte // the result message, or the error text; may be empty
	// NotRun is a zapcodec extension (docs/wire.md §8): the server refused the
	// call without running its handler, so it may be sent again. Only a
	// server's own refusal sets it; no handler return value can. A
	// canonical peer never sets it, and ignores it.
	NotRun bool
	// Metadata is a zapcodec extension (docs/wire.md §8): the key/value
	// pairs the handler set for its caller, in the encoding of
	// [Request].Metadata, empty when there are none. It aliases the
	// parsed bytes like Body. A canonical peer never sets it, and ignores
	// it.
	Metadata []byte
	// Deflated is a zapcodec extension (docs/wire.md §8, bit 1 of the
	// flags word): Body is compressed with raw DEFLATE (RFC 1951,
	// compress/flate) and must be inflated to be read. A server sets it
	// only in the answer to a request with [Request].AcceptDeflate; a
	// canonical peer never sets it.
	Deflated bool
	// TakesDeflate is a zapcodec extension (docs/wire.md §8, bit 2 of the
	// flags word): the server takes requests whose payload is compressed
	// ([Request].PayloadDeflated) on this connection. A server sets it
	// only in answers to requests with [Request].AcceptDeflate.
	TakesDeflate bool
}

// AppendRequest appends the request envelope for r to dst and returns the
// extended slice. Without extension values (Timeout 0, no Metadata, no
// AcceptDeflate) it is
// byte-identical to the canonical rpc.BuildRequest: header (version 2,
// flags 0xC800, root 16, size), the 28-byte fixed section, then cap and
// payload with no padding. Empty cap or payload is a {0,0} slot. With a
// Timeout the fixed section grows to 36 bytes (u64 at offset 28), with
// Metadata to 44 (bytes slot at offset 36, its tail after the payload),
// with AcceptDeflate to 48 (the u32 flags word at offset 44).
// dst may be nil; r's slices are only read. The header's size field is a
// u32: RequestLen(r) must not pass 4 GiB (package rpc's frame limit keeps
// every envelope far below), or the size and slots written wrap.
func AppendRequest(dst []byte, r *Request) []byte {
	if len(r.Cap) == 0 && len(r.Metadata) == 0 && r.Timeout == 0 && !r.AcceptDeflate && !r.PayloadDeflated {
		return appendPlainRequest(dst, r.Method, r.PromiseID, r.Target, r.Payload)
	}
	return appendAnyRequest(dst, r)
}

// RequestLen returns the length of r's envelope: the number of bytes
// AppendRequest appends for r.
func RequestLen(r *Request) int { return requestLen(r, requestFixedSize(r)) }

// requestLen is RequestLen for r's fixed-section size fixed.
func requestLen(r *Request, fixed int) int {
	return headerSize + fixed + len(r.Cap) + len(r.Payload) + len(r.Metadata)
}

// requestFixedSize is the size of r's fixed section: 28 bytes, 36 with a
// timeout, 44 with metadata, 48 with a flag.
func requestFixedSize(r *Request) int {
	switch {
	case r.AcceptDeflate || r.PayloadDeflated:
		return reqExtFlagsSize
	case len(r.Metadata) > 0:
		return reqExtFixedSize
	case r.Timeout != 0:
		return reqExtDeadlineSize
	}
	return RequestFixedSize
}

// appendAnyRequest is AppendRequest for any request: cap, timeout and
// metadata included.
func appendAnyRequest(dst []byte, r *Request) []byte {
	fixed := requestFixedSize(r)
	size := requestLen(r, fixed)
	start := len(dst)
	dst = grow(dst, size)
	b := dst[start:]
	putHeader(b, uint32(size))
	f := b[headerSize : headerSize+fixed]
	binary.LittleEndian.PutUint32(f[reqMethod:], r.Method)
	binary.LittleEndian.PutUint32(f[reqPromise:], r.PromiseID)
	binary.LittleEndian.PutUint32(f[reqTarget:], r.Target)
	pos := headerSize + fixed // where the next tail lands
	pos = putSlot(f[reqCap:], headerSize+reqCap, pos, len(r.Cap))
	pos = putSlot(f[reqPayload:], headerSize+reqPayload, pos, len(r.Payload))
	if fixed > RequestFixedSize {
		binary.LittleEndian.PutUint64(f[reqTimeout:], r.Timeout)
	}
	if fixed > reqExtDeadlineSize {
		putSlot(f[reqMetadata:], headerSize+reqMetadata, pos, len(r.Metadata))
	}
	if fixed > reqExtFixedSize {
		var flags uint32
		if r.AcceptDeflate {
			flags |= reqFlagAcceptDeflate
		}
		if r.PayloadDeflated {
			flags |= reqFlagPayloadDeflate
		}
		binary.LittleEndian.PutUint32(f[reqFlags:], flags)
	}
	n := headerSize + fixed
	n += copy(b[n:], r.Cap)
	n += copy(b[n:], r.Payload)
	copy(b[n:], r.Metadata)
	return dst
}

// AppendPlainRequest is [AppendRequest] for a request without Cap,
// Timeout and Metadata (the canonical layout, which nearly every call
// has): the same bytes as AppendRequest(dst, &Request{Method: method,
// PromiseID: promiseID, Target: target, Payload: payload}), written in a
// few wide stores, for a caller that knows its request has none of
// those and skips AppendRequest's look at them. The envelope must not
// pass 4 GiB (see [AppendRequest]).
func AppendPlainRequest(dst []byte, method, promiseID, target uint32, payload []byte) []byte {
	return appendPlainRequest(dst, method, promiseID, target, payload)
}

// appendPlainRequest is AppendPlainRequest (AppendRequest calls it
// directly: one frame fewer). The header and fixed section are 44 bytes
// at fixed offsets: one check of the array's length covers all their
// stores.
func appendPlainRequest(dst []byte, method, promiseID, target uint32, payload []byte) []byte {
	size := RequestOverhead + len(payload)
	start := len(dst)
	if cap(dst)-start < size {
		dst = slices.Grow(dst, size)
	}
	dst = dst[:start+size]
	PutPlainRequestHeader((*[RequestOverhead]byte)(dst[start:]), method, promiseID, target, len(payload))
	copy(dst[start+RequestOverhead:], payload)
	return dst
}

// PutPlainRequestHeader writes to h the header and fixed section that
// [AppendPlainRequest] appends for a payload of payloadLen bytes, which
// the caller must place right after them: for a caller that has made
// room already (one growth for a frame's head, envelope and payload). A
// fixed-size array takes no bounds checks, and the function inlines.
// The envelope must not pass 4 GiB (see [AppendRequest]).
func PutPlainRequestHeader(h *[RequestOverhead]byte, method, promiseID, target uint32, payloadLen int) {
	// The payload's slot (putSlot's): {0, 0} when empty, else the tail
	// right after the fixed section (8 bytes past the slot) and its length.
	var slot uint64
	if payloadLen > 0 {
		slot = uint64(RequestOverhead-(headerSize+reqPayload)) | uint64(payloadLen)<<32
	}
	binary.LittleEndian.PutUint64(h[0:], envHeader0)
	binary.LittleEndian.PutUint64(h[8:], rootOffset|uint64(uint32(RequestOverhead+payloadLen))<<32)
	binary.LittleEndian.PutUint64(h[headerSize+reqMethod:], uint64(method)|uint64(promiseID)<<32)
	binary.LittleEndian.PutUint32(h[headerSize+reqTarget:], target)
	binary.LittleEndian.PutUint64(h[headerSize+reqCap:], 0)
	binary.LittleEndian.PutUint64(h[headerSize+reqPayload:], slot)
}

// DeadlineRequestOverhead is the size of the envelope that
// [PutDeadlineRequestHeader] writes: header and the fixed section with
// the timeout (docs/wire.md §8).
const DeadlineRequestOverhead = headerSize + reqExtDeadlineSize

// PutDeadlineRequestHeader is [PutPlainRequestHeader] for a request with
// a Timeout (not 0) and nothing else beyond the canonical fields: the
// header and fixed section (36 bytes) that AppendRequest writes for
// Request{Method: method, PromiseID: promiseID, Target: target, Timeout:
// timeout} with a payload of payloadLen bytes, which the caller must
// place right after them. It inlines; the envelope must not pass 4 GiB.
func PutDeadlineRequestHeader(h *[DeadlineRequestOverhead]byte, method, promiseID, target uint32, timeout uint64, payloadLen int) {
	var slot uint64 // see PutPlainRequestHeader
	if payloadLen > 0 {
		slot = uint64(DeadlineRequestOverhead-(headerSize+reqPayload)) | uint64(payloadLen)<<32
	}
	binary.LittleEndian.PutUint64(h[0:], envHeader0)
	binary.LittleEndian.PutUint64(h[8:], rootOffset|uint64(uint32(DeadlineRequestOverhead+payloadLen))<<32)
	binary.LittleEndian.PutUint64(h[headerSize+reqMethod:], uint64(method)|uint64(promiseID)<<32)
	binary.LittleEndian.PutUint32(h[headerSize+reqTarget:], target)
	binary.LittleEndian.PutUint64(h[headerSize+reqCap:], 0)
	binary.LittleEndian.PutUint64(h[headerSize+reqPayload:], slot)
	binary.LittleEndian.PutUint64(h[headerSize+reqTimeout:], timeout)
}

// AppendResponse appends the answer envelope for r to dst and returns the
// extended slice: without NotRun and Metadata byte-identical to the
// canonical rpc.BuildResponse; with NotRun alone the fixed section of
// [AppendRefusalHeader] (24 bytes, the flags extension field at offset
// 20); with Metadata that of [AppendResponseHeaderMD] (32 bytes, the
// metadata's value after the body's); with Deflated that of
// [AppendDeflatedHeader]. An empty body is a {0,0} slot.
// dst may be nil; r's slices are only read. The envelope must not pass
// 4 GiB (see [AppendRequest]).
func AppendResponse(dst []byte, r *Response) []byte {
	switch {
	case r.Deflated || r.TakesDeflate:
		dst = appendFlaggedHeader(dst, r.Status, r.PromiseID, len(r.Body), responseFlags(r), len(r.Metadata))
		dst = append(dst, r.Body...)
		return append(dst, r.Metadata...)
	case len(r.Metadata) > 0:
		dst = AppendResponseHeaderMD(dst, r.Status, r.PromiseID, len(r.Body), r.NotRun, len(r.Metadata))
		dst = append(dst, r.Body...)
		return append(dst, r.Metadata...)
	case r.NotRun:
		dst = AppendRefusalHeader(dst, r.Status, r.PromiseID, len(r.Body))
	default:
		dst = AppendResponseHeader(dst, r.Status, r.PromiseID, len(r.Body))
	}
	return append(dst, r.Body...)
}

// ResponseLen returns the length of r's envelope: the number of bytes
// AppendResponse appends for r.
func ResponseLen(r *Response) int {
	switch {
	case len(r.Metadata) > 0:
		return headerSize + respMDFixedSize + len(r.Body) + len(r.Metadata)
	case r.NotRun || r.Deflated || r.TakesDeflate:
		return headerSize + respExtFixedSize + len(r.Body)
	}
	return ResponseOverhead + len(r.Body)
}

// responseFlags is the flags word of r's envelope.
func responseFlags(r *Response) uint32 {
	var flags uint32
	if r.NotRun {
		flags |= respFlagNotRun
	}
	if r.Deflated {
		flags |= respFlagDeflate
	}
	if r.TakesDeflate {
		flags |= respFlagTakesDeflate
	}
	return flags
}

// DeflatedOverhead is how many bytes more than [ResponseOverhead] the
// header and fixed section of [AppendDeflatedHeader] take without
// metadata (the flags word); with metadata they take
// [ResponseMetadataOverhead] more, as any answer with metadata.
const DeflatedOverhead = respExtFixedSize - ResponseFixedSize

// AppendDeflatedHeader is [AppendResponseHeader] for an answer whose body
// is compressed with raw DEFLATE (a [Response] with Deflated and
// TakesDeflate, docs/wire.md §8): the flags word at offset 20 has bits 1
// and 2 set, and the fixed section
// is 24 bytes, or, when mdLen > 0, 32 with the response metadata's slot
// at 24 as in [AppendResponseHeaderMD]. The caller must append exactly
// bodyLen bytes of compressed body, then exactly mdLen metadata bytes,
// right after it. Send it only in answer to a request with
// [Request].AcceptDeflate: a peer that did not set it cannot read the
// body.
func AppendDeflatedHeader(dst []byte, status, promiseID uint32, bodyLen, mdLen int) []byte {
	return appendFlaggedHeader(dst, status, promiseID, bodyLen, respFlagDeflate|respFlagTakesDeflate, mdLen)
}

// AppendTakesDeflateHeader is [AppendDeflatedHeader] for an answer whose
// body is not compressed (a [Response] with TakesDeflate alone): the
// flags word says only that the server takes compressed requests.
func AppendTakesDeflateHeader(dst []byte, status, promiseID uint32, bodyLen, mdLen int) []byte {
	return appendFlaggedHeader(dst, status, promiseID, bodyLen, respFlagTakesDeflate, mdLen)
}

// appendFlaggedHeader appends the header and fixed section of an answer
// with the flags word flags: 24 bytes, or 32 with the metadata slot when
// mdLen > 0.
func appendFlaggedHeader(dst []byte, status, promiseID uint32, bodyLen int, flags uint32, mdLen int) []byte {
	if mdLen > 0 {
		dst = AppendResponseHeaderMD(dst, status, promiseID, bodyLen, false, mdLen)
		binary.LittleEndian.PutUint32(dst[len(dst)-respMDFixedSize+respFlags:], flags)
		return dst
	}
	dst = AppendRefusalHeader(dst, status, promiseID, bodyLen)
	binary.LittleEndian.PutUint32(dst[len(dst)-respExtFixedSize+respFlags:], flags)
	return dst
}

// ResponseMetadataOverhead is how many bytes more than [ResponseOverhead]
// the header and fixed section of an answer with response metadata take
// ([AppendResponseHeaderMD]): the flags word and the metadata's slot.
const ResponseMetadataOverhead = respMDFixedSize - ResponseFixedSize

// AppendResponseHeaderMD is [AppendResponseHeader] for an answer that
// carries response metadata (docs/wire.md §8) of mdLen bytes, mdLen > 0:
// the fixed section is 32 bytes, with the flags word at offset 20 (the
// not-run bit when notRun) and the metadata's slot at 24. The caller must
// append exactly bodyLen body bytes, then exactly mdLen metadata bytes,
// right after it. A canonical reader reads the status, promise and body
// at their offsets and ignores the rest.
func AppendResponseHeaderMD(dst []byte, status, promiseID uint32, bodyLen int, notRun bool, mdLen int) []byte {
	const overhead = headerSize + respMDFixedSize
	start := len(dst)
	dst = grow(dst, overhead)
	b := dst[start:]
	putHeader(b, uint32(overhead+bodyLen+mdLen))
	f := b[headerSize:overhead]
	binary.LittleEndian.PutUint32(f[respStatus:], status)
	binary.LittleEndian.PutUint32(f[respPromise:], promiseID)
	binary.LittleEndian.PutUint32(f[respPromise+4:], 0)
	pos := putSlot(f[respBody:], headerSize+respBody, overhead, bodyLen)
	var flags uint32
	if notRun {
		flags = respFlagNotRun
	}
	binary.LittleEndian.PutUint32(f[respFlags:], flags)
	putSlot(f[respMetadata:], headerSize+respMetadata, pos, mdLen)
	return dst
}

// AppendResponseHeader appends a response envelope's header and fixed
// section for a body of bodyLen bytes; the caller must append exactly
// bodyLen body bytes right after it. It lets a server build the body in
// place after the header. ResponseOverhead+bodyLen must not pass 4 GiB
// (the size field is a u32).
func AppendResponseHeader(dst []byte, status, promiseID uint32, bodyLen int) []byte {
	dst = grow(dst, ResponseOverhead)
	PutResponseHeader((*[ResponseOverhead]byte)(dst[len(dst)-ResponseOverhead:]), status, promiseID, bodyLen)
	return dst
}

// PutResponseHeader writes to h the bytes [AppendResponseHeader] appends:
// a response envelope's header and fixed section for a body of bodyLen
// bytes, which the caller must place right after them. It is for a
// caller that has made room already (a server's answer buffer, checked
// once for the frame): a fixed-size array takes no bounds checks, and
// the function no stack frame. ResponseOverhead+bodyLen must not pass 4
// GiB (the size field is a u32).
func PutResponseHeader(h *[ResponseOverhead]byte, status, promiseID uint32, bodyLen int) {
	// The words putHeader and putSlot write: status and promise id are
	// one little-endian word, the reserved u32 is 0.
	var slot uint64 // putSlot's {0, 0} for an empty body
	if bodyLen != 0 {
		slot = uint64(ResponseOverhead-(headerSize+respBody)) | uint64(bodyLen)<<32
	}
	binary.LittleEndian.PutUint64(h[0:], envHeader0)
	binary.LittleEndian.PutUint64(h[8:], rootOffset|uint64(uint32(ResponseOverhead+bodyLen))<<32)
	binary.LittleEndian.PutUint64(h[headerSize+respStatus:], uint64(status)|uint64(promiseID)<<32)
	binary.LittleEndian.PutUint32(h[headerSize+respPromise+4:], 0)
	binary.LittleEndian.PutUint64(h[headerSize+respBody:], slot)
}

// AppendRefusalHeader is [AppendResponseHeader] for an answer whose
// handler did not run (a [Response] with NotRun): the fixed section
// carries the flags extension field (docs/wire.md §8) with the not-run bit, and
// the caller must append exactly bodyLen body bytes right after it.
func AppendRefusalHeader(dst []byte, status, promiseID uint32, bodyLen int) []byte {
	const overhead = headerSize + respExtFixedSize
	start := len(dst)
	dst = grow(dst, overhead)
	b := dst[start:]
	putHeader(b, uint32(overhead+bodyLen))
	f := b[headerSize:overhead]
	binary.LittleEndian.PutUint32(f[respStatus:], status)
	binary.LittleEndian.PutUint32(f[respPromise:], promiseID)
	binary.LittleEndian.PutUint32(f[respPromise+4:], 0)
	putSlot(f[respBody:], headerSize+respBody, overhead, bodyLen)
	binary.LittleEndian.PutUint32(f[respFlags:], respFlagNotRun)
	return dst
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

// grow extends dst by n bytes (their content is to be written) and
// returns it.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		dst = slices.Grow(dst, n)
	}
	return dst[:len(dst)+n]
}

// putHeader writes the message header of an envelope of size bytes to
// b[:16]: the magic, version 2, flags 0xC800, root 16, the size.
func putHeader(b []byte, size uint32) {
	binary.LittleEndian.PutUint64(b, envHeader0)
	binary.LittleEndian.PutUint64(b[8:], rootOffset|uint64(size)<<32)
}

// putSlot writes to b[:8] the bytes slot located at absolute position
// slotPos for a tail of n bytes that will start at absolute position
// tailPos; it returns the position after that tail.
func putSlot(b []byte, slotPos, tailPos, n int) int {
	if n == 0 {
		binary.LittleEndian.PutUint64(b, 0)
		return tailPos
	}
	binary.LittleEndian.PutUint64(b, uint64(tailPos-slotPos)|uint64(n)<<32)
	return tailPos + n
}

// ErrMalformed: an envelope did not decode (see [EnvelopeError]). Package
// rpc exports the same value as rpc.ErrMalformed.
var ErrMalformed = errors.New("rpc: malformed envelope")

// EnvelopeError describes a malformed envelope: which part failed, where,
// and, when it could be read, the promise_id (so a server can still answer
// 400). It matches [ErrMalformed] with errors.Is; when package codec
// rejected the bytes (a bad message header, a tail outside the message),
// Err is codec's *codec.ParseError and errors.Is matches its sentinel too
// (codec.ErrMagic, codec.ErrOutOfBounds...).
type EnvelopeError struct {
	Reason string // e.g. "fixed section truncated"
	// Offset is the position, from the start of the envelope, of the byte
	// where it broke: the header field that is wrong, the root offset
	// field for a bad root, the end of a truncated fixed section, the slot
	// of a tail that lies outside the message.
	Offset    int
	PromiseID uint32 // valid only when HasPromise
	// HasPromise reports whether the promise_id field was readable.
	HasPromise bool
	// Err is the error of package codec that rejected the envelope, or
	// nil when the envelope is a well-formed ZAP message that is not a
	// valid envelope (wrong type, root or fixed section).
	Err error
}

// Error returns "rpc: malformed envelope: " and the reason, with the
// promise_id when it was readable.
func (e *EnvelopeError) Error() string {
	if e.HasPromise {
		return fmt.Sprintf("rpc: malformed envelope (promise:%d): %s", e.PromiseID, e.Reason)
	}
	return "rpc: malformed envelope: " + e.Reason
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *EnvelopeError) Is(target error) bool { return target == ErrMalformed }

// Unwrap returns Err (nil when codec accepted the bytes).
func (e *EnvelopeError) Unwrap() error { return e.Err }

// envError returns an *EnvelopeError; kept out of line so that the parse
// functions' success paths stay small.
//
//go:noinline
func envError(reason string, off int, err error) error {
	return &EnvelopeError{Reason: reason, Offset: off, Err: err}
}

// envPromiseError is envError for an envelope whose promise_id was read.
//
//go:noinline
func envPromiseError(reason string, off int, err error, promise uint32) error {
	return &EnvelopeError{Reason: reason, Offset: off, Err: err, PromiseID: promise, HasPromise: true}
}

// headerError turns codec's rejection of the message header of the
// envelope b into an *EnvelopeError with the reasons this package has
// always given.
func headerError(err error, b []byte) error {
	n := len(b)
	var pe *codec.ParseError
	off := 0
	if errors.As(err, &pe) {
		off = pe.Offset
	}
	reason := "shorter than the 16-byte header"
	switch {
	case errors.Is(err, codec.ErrMagic):
		reason = "bad magic"
	case errors.Is(err, codec.ErrVersion):
		reason = "version not 1 or 2"
	case n >= codec.HeaderSize && binary.LittleEndian.Uint32(b[12:]) < codec.HeaderSize:
		reason = "size field smaller than the 16-byte header"
	case n >= codec.HeaderSize:
		reason = "size field outside the buffer"
	}
	return envError(reason, off, err)
}

// envelopeError returns the error of an envelope b whose header codec.Parse
// rejected with err or, err nil, whose message m is not an envelope: its
// type is not 200 or its root object does not start inside it.
//
//go:noinline
func envelopeError(m codec.Message, b []byte, err error) error {
	switch {
	case err != nil:
		return headerError(err, b)
	case m.Type() != EnvelopeType:
		return envError("message type is not 200", 7, nil)
	}
	return envError("root offset outside the message", 8, nil)
}

// slotError returns the error of an envelope whose bytes slot at off of
// root is malformed: codec's checked read of the slot says where.
//
//go:noinline
func slotError(reason string, root codec.Object, off int, promise uint32) error {
	_, err := root.CheckedBytes(off)
	return envPromiseError(reason, root.Pos()+off, err, promise)
}

// ParseRequest decodes a request envelope. It checks the message header
// (with codec.Parse: magic, version 1 or 2, size within b), the type 200
// and that the root lies inside the message, requires the whole 28-byte
// fixed section inside the message, and requires cap and payload to lie
// inside it. The extension fields (Timeout, Metadata) are read only when
// present: when they lie before the first tail of cap and payload (see
// fixedEnd); Metadata must then lie inside the message too (its content is
// checked by the server, see rpc.Metadata). Errors are *[EnvelopeError]
// (errors.Is [ErrMalformed]), with the offset where b broke; PromiseID is
// reported in the error when it was readable. Cap and Payload alias b and
// are valid as long as b is unchanged. Never panics; allocates only when
// it fails.
func ParseRequest(b []byte) (Request, error) {
	var r Request
	err := ParseRequestTo(&r, b)
	return r, err
}

// ParseRequestTo is [ParseRequest] that writes the request to *r (every
// field of it, on error too) instead of returning it: a server parsing one
// request per call saves copying the Request twice.
func ParseRequestTo(r *Request, b []byte) error {
	// The canonical layout first (ParsePlainRequest's checks, which this
	// repeats so that the result is written in place), for a buffer
	// of at most 4 GiB: the length of a longer one, shifted into the
	// size field's half of the word compared, would lose its high bits.
	if len(b) >= RequestOverhead && uint64(len(b)) <= math.MaxUint32 &&
		binary.LittleEndian.Uint64(b) == envHeader0 &&
		binary.LittleEndian.Uint64(b[8:]) == rootOffset|uint64(len(b))<<32 {
		f := b[headerSize:RequestOverhead]
		n := len(b) - RequestOverhead
		if binary.LittleEndian.Uint64(f[reqCap:]) == 0 {
			var payload []byte
			switch binary.LittleEndian.Uint64(f[reqPayload:]) {
			case uint64(RequestFixedSize-reqPayload) | uint64(n)<<32:
				if n > 0 {
					payload = b[RequestOverhead:len(b):len(b)]
				}
			case 0:
				if n != 0 {
					return parseRequestTo(r, b)
				}
			default:
				return parseRequestTo(r, b)
			}
			// Field by field: a composite literal is built on the stack
			// and copied with wide loads, which stall on its narrow
			// stores (15 ns a request, measured).
			r.Method = binary.LittleEndian.Uint32(f[reqMethod:])
			r.PromiseID = binary.LittleEndian.Uint32(f[reqPromise:])
			r.Target = binary.LittleEndian.Uint32(f[reqTarget:])
			r.Cap = nil
			r.Payload = payload
			r.Timeout = 0
			r.Metadata = nil
			r.AcceptDeflate = false
			r.PayloadDeflated = false
			return nil
		}
	}
	return parseRequestTo(r, b)
}

// ParsePlainRequest decodes, in a few loads and compares, a request laid
// out exactly as [AppendPlainRequest] writes one (the canonical layout:
// the header with root 16 and a size of len(b), an empty cap slot, the
// payload, if any, right after the 28-byte fixed section up to the end),
// and reports ok false for any other bytes, well-formed or not, leaving
// them to [ParseRequestTo]: what it accepts, ParseRequest accepts too,
// with these values and an empty Cap, Timeout, Metadata and flags. payload
// aliases b (nil when empty, its capacity its length). A read loop calls
// it first and keeps the fields in its own variables (no stores through
// a pointer, no write-barrier checks); it neither allocates nor fails.
func ParsePlainRequest(b []byte) (method, promiseID, target uint32, payload []byte, ok bool) {
	// A buffer over 4 GiB is left to the general parser: the size field
	// cannot hold its length, and the length shifted into the word
	// compared with the root and size fields would lose its high bits.
	if len(b) < RequestOverhead || uint64(len(b)) > math.MaxUint32 {
		return 0, 0, 0, nil, false
	}
	h := (*[RequestOverhead]byte)(b)
	if binary.LittleEndian.Uint64(h[0:]) != envHeader0 ||
		binary.LittleEndian.Uint64(h[8:]) != rootOffset|uint64(len(b))<<32 ||
		binary.LittleEndian.Uint64(h[headerSize+reqCap:]) != 0 {
		return 0, 0, 0, nil, false
	}
	n := len(b) - RequestOverhead
	switch binary.LittleEndian.Uint64(h[headerSize+reqPayload:]) {
	case uint64(RequestFixedSize-reqPayload) | uint64(n)<<32:
		if n > 0 {
			payload = b[RequestOverhead:len(b):len(b)]
		}
	case 0: // the null slot: no payload
		if n != 0 {
			return 0, 0, 0, nil, false
		}
	default:
		return 0, 0, 0, nil, false
	}
	return binary.LittleEndian.Uint32(h[headerSize+reqMethod:]),
		binary.LittleEndian.Uint32(h[headerSize+reqPromise:]),
		binary.LittleEndian.Uint32(h[headerSize+reqTarget:]), payload, true
}

// ParseDeadlineRequest is [ParsePlainRequest] for a request laid out
// exactly as [PutDeadlineRequestHeader] and its payload write one (the
// header with root 16 and a size of len(b), an empty cap slot, the
// 36-byte fixed section ending in the timeout, the payload, if any,
// right after it up to the end), and reports ok false for any other
// bytes, well-formed or not, leaving them to [ParseRequestTo]: what it
// accepts, ParseRequest accepts too, with these values (timeout as read,
// 0 included) and an empty Cap, Metadata and flags. payload aliases b
// (nil when empty, its capacity its length). A server's read loop tries
// it after ParsePlainRequest fails, for a call with a deadline; it
// neither allocates nor fails.
func ParseDeadlineRequest(b []byte) (method, promiseID, target uint32, timeout uint64, payload []byte, ok bool) {
	// Over 4 GiB: left to the general parser (see ParsePlainRequest).
	if len(b) < DeadlineRequestOverhead || uint64(len(b)) > math.MaxUint32 {
		return 0, 0, 0, 0, nil, false
	}
	h := (*[DeadlineRequestOverhead]byte)(b)
	if binary.LittleEndian.Uint64(h[0:]) != envHeader0 ||
		binary.LittleEndian.Uint64(h[8:]) != rootOffset|uint64(len(b))<<32 ||
		binary.LittleEndian.Uint64(h[headerSize+reqCap:]) != 0 {
		return 0, 0, 0, 0, nil, false
	}
	// The payload's slot points right past the timeout (its first tail
	// ends the fixed section there, so the general parse reads the
	// timeout and no field after it), or is null with nothing after the
	// fixed section, which then ends at the message's end.
	n := len(b) - DeadlineRequestOverhead
	switch binary.LittleEndian.Uint64(h[headerSize+reqPayload:]) {
	case uint64(reqExtDeadlineSize-reqPayload) | uint64(n)<<32:
		if n > 0 {
			payload = b[DeadlineRequestOverhead:len(b):len(b)]
		}
	case 0:
		if n != 0 {
			return 0, 0, 0, 0, nil, false
		}
	default:
		return 0, 0, 0, 0, nil, false
	}
	return binary.LittleEndian.Uint32(h[headerSize+reqMethod:]),
		binary.LittleEndian.Uint32(h[headerSize+reqPromise:]),
		binary.LittleEndian.Uint32(h[headerSize+reqTarget:]),
		binary.LittleEndian.Uint64(h[headerSize+reqTimeout:]), payload, true
}

// parseRequestTo is parseRequest into *r (kept out of line: the general
// path is rare).
//
//go:noinline
func parseRequestTo(r *Request, b []byte) error {
	var err error
	*r, err = parseRequest(b)
	return err
}

// parseRequest is ParseRequest for any envelope.
func parseRequest(b []byte) (Request, error) {
	// codec.Parse checks the header; an envelope is of type 200 and its
	// root object starts inside the message.
	m, err := codec.Parse(b)
	root := m.Root()
	msg, at := m.Bytes(), root.Pos()
	if err != nil || m.Type() != EnvelopeType || root.IsNull() || at >= len(msg) {
		return Request{}, envelopeError(m, b, err)
	}
	if at+reqPromise+4 > len(msg) {
		return Request{}, envError("promise_id truncated", len(msg), nil)
	}
	// The fields below lie inside the message once its size allows them:
	// they are read straight from it.
	r := Request{PromiseID: binary.LittleEndian.Uint32(msg[at+reqPromise:])}
	if at+RequestFixedSize > len(msg) {
		return r, envPromiseError("request fixed section truncated", len(msg), nil, r.PromiseID)
	}
	r.Method = binary.LittleEndian.Uint32(msg[at+reqMethod:])
	r.Target = binary.LittleEndian.Uint32(msg[at+reqTarget:])
	// An empty cap, payload or metadata is nil, whether its slot is null
	// or {x, 0}.
	v, ok := m.BytesAt(at + reqCap)
	if !ok {
		return r, slotError("cap outside the message", root, reqCap, r.PromiseID)
	}
	if len(v) != 0 {
		r.Cap = v
	}
	if v, ok = m.BytesAt(at + reqPayload); !ok {
		return r, slotError("payload outside the message", root, reqPayload, r.PromiseID)
	}
	if len(v) != 0 {
		r.Payload = v
	}
	if fe := at + RequestFixedSize; fe < len(msg) {
		// Room for extension fields: where does the fixed section end?
		fe = fixedEnd(msg, at+reqCap, at+reqPayload)
		if at+reqExtDeadlineSize <= fe {
			r.Timeout = binary.LittleEndian.Uint64(msg[at+reqTimeout:])
		}
		if at+reqExtFixedSize <= fe {
			if v, ok = m.BytesAt(at + reqMetadata); !ok {
				return r, slotError("metadata outside the message", root, reqMetadata, r.PromiseID)
			}
			if len(v) != 0 {
				r.Metadata = v
			}
			// The metadata's value may be the first tail (cap and
			// payload empty): the flags word lies before it too.
			if at+reqExtFlagsSize <= fixedEnd(msg[:fe], at+reqMetadata) {
				flags := binary.LittleEndian.Uint32(msg[at+reqFlags:])
				r.AcceptDeflate = flags&reqFlagAcceptDeflate != 0
				r.PayloadDeflated = flags&reqFlagPayloadDeflate != 0
			}
		}
	}
	return r, nil
}

// ParseResponse decodes an answer envelope with the same checks as
// [ParseRequest] (fixed section of 20 bytes, body inside the message).
// The extension fields (NotRun, Metadata) are read only when present:
// when they lie before the first tail (see fixedEnd); Metadata must then
// lie inside the message too (its content is for the client to check).
// Body and Metadata alias b and are valid as long as b is unchanged.
// Never panics; allocates only when it fails.
func ParseResponse(b []byte) (Response, error) {
	var r Response
	err := ParseResponseTo(&r, b)
	return r, err
}

// ParseResponseTo is [ParseResponse] that writes the answer to *r (every
// field of it, on error too) instead of returning it: a client's read
// loop parsing one answer per call saves copying the Response (a copy
// whose halves were just stored as smaller words, which the processor
// cannot forward to the wider loads of the copy: a stall per answer).
func ParseResponseTo(r *Response, b []byte) error {
	// The canonical layout first (ParsePlainResponse's checks, which this
	// repeats so that the result is written in place), for a buffer
	// of at most 4 GiB: the length of a longer one, shifted into the
	// size field's half of the word compared, would lose its high bits.
	if len(b) >= ResponseOverhead && uint64(len(b)) <= math.MaxUint32 &&
		binary.LittleEndian.Uint64(b) == envHeader0 &&
		binary.LittleEndian.Uint64(b[8:]) == rootOffset|uint64(len(b))<<32 {
		f := b[headerSize:ResponseOverhead]
		n := len(b) - ResponseOverhead
		var body []byte
		switch binary.LittleEndian.Uint64(f[respBody:]) {
		case uint64(ResponseFixedSize-respBody) | uint64(n)<<32:
			if n > 0 {
				body = b[ResponseOverhead:len(b):len(b)]
			}
		case 0:
			if n != 0 {
				return parseResponseTo(r, b)
			}
		default:
			return parseResponseTo(r, b)
		}
		// Field by field: a composite literal is built on the stack and
		// copied with wide loads, which stall on its narrow stores.
		r.Status = binary.LittleEndian.Uint32(f[respStatus:])
		r.PromiseID = binary.LittleEndian.Uint32(f[respPromise:])
		r.Body = body
		r.NotRun = false
		r.Metadata = nil
		r.Deflated = false
		r.TakesDeflate = false
		return nil
	}
	return parseResponseTo(r, b)
}

// ParsePlainResponse is [ParsePlainRequest] for an answer laid out
// exactly as [AppendResponseHeader] and its body write one (the header,
// the 20-byte fixed section, the body, if any, right after it up to the
// end; no extension field): ok false for any
// other bytes, which [ParseResponseTo] decides. What it accepts,
// ParseResponse accepts too, with these values and no NotRun, Metadata
// or flags. body aliases b (nil when empty, its capacity its length).
func ParsePlainResponse(b []byte) (status, promiseID uint32, body []byte, ok bool) {
	if len(b) < ResponseOverhead || uint64(len(b)) > math.MaxUint32 {
		return 0, 0, nil, false
	}
	h := (*[ResponseOverhead]byte)(b)
	if binary.LittleEndian.Uint64(h[0:]) != envHeader0 ||
		binary.LittleEndian.Uint64(h[8:]) != rootOffset|uint64(len(b))<<32 {
		return 0, 0, nil, false
	}
	n := len(b) - ResponseOverhead
	switch binary.LittleEndian.Uint64(h[headerSize+respBody:]) {
	case uint64(ResponseFixedSize-respBody) | uint64(n)<<32:
		if n > 0 {
			body = b[ResponseOverhead:len(b):len(b)]
		}
	case 0: // the null slot: no body
		if n != 0 {
			return 0, 0, nil, false
		}
	default:
		return 0, 0, nil, false
	}
	return binary.LittleEndian.Uint32(h[headerSize+respStatus:]),
		binary.LittleEndian.Uint32(h[headerSize+respPromise:]), body, true
}

// parseResponseTo is parseResponse into *r (kept out of line: the general
// path is rare).
//
//go:noinline
func parseResponseTo(r *Response, b []byte) error {
	var err error
	*r, err = parseResponse(b)
	return err
}

// parseResponse is ParseResponse for any envelope.
func parseResponse(b []byte) (Response, error) {
	// codec.Parse checks the header; an envelope is of type 200 and its
	// root object starts inside the message.
	m, err := codec.Parse(b)
	root := m.Root()
	msg, at := m.Bytes(), root.Pos()
	if err != nil || m.Type() != EnvelopeType || root.IsNull() || at >= len(msg) {
		return Response{}, envelopeError(m, b, err)
	}
	if at+respPromise+4 > len(msg) {
		return Response{}, envError("promise_id truncated", len(msg), nil)
	}
	r := Response{PromiseID: binary.LittleEndian.Uint32(msg[at+respPromise:])}
	if at+ResponseFixedSize > len(msg) {
		return r, envPromiseError("response fixed section truncated", len(msg), nil, r.PromiseID)
	}
	r.Status = binary.LittleEndian.Uint32(msg[at+respStatus:])
	body, ok := m.BytesAt(at + respBody)
	if !ok {
		return r, slotError("body outside the message", root, respBody, r.PromiseID)
	}
	if len(body) != 0 { // empty is nil, whether the slot is null or {x, 0}
		r.Body = body
	}
	if fe := fixedEnd(msg, at+respBody); at+respExtFixedSize <= fe {
		flags := binary.LittleEndian.Uint32(msg[at+respFlags:])
		r.NotRun = flags&respFlagNotRun != 0
		r.Deflated = flags&respFlagDeflate != 0
		r.TakesDeflate = flags&respFlagTakesDeflate != 0
		if at+respMDFixedSize <= fe {
			v, ok := m.BytesAt(at + respMetadata)
			if !ok {
				return r, slotError("response metadata outside the message", root, respMetadata, r.PromiseID)
			}
			if len(v) != 0 {
				r.Metadata = v
			}
		}
	}
	return r, nil
}

// envHeader0 is the first 8 bytes of the header every envelope this
// package writes carries, read as a little-endian uint64: the magic,
// version 2, flags 0xC800.
const envHeader0 = uint64('Z') | uint64('A')<<8 | uint64('P')<<16 |
	uint64(EnvelopeVersion)<<32 | uint64(EnvelopeFlags)<<48

// parseCanonicalRequest is ParsePlainRequest as a Request (for the
// tests, which compare it with parseRequest).
func parseCanonicalRequest(b []byte) (r Request, ok bool) {
	r.Method, r.PromiseID, r.Target, r.Payload, ok = ParsePlainRequest(b)
	return r, ok
}

// parseCanonicalResponse is ParsePlainResponse as a Response.
func parseCanonicalResponse(b []byte) (r Response, ok bool) {
	r.Status, r.PromiseID, r.Body, ok = ParsePlainResponse(b)
	return r, ok
}

// fixedEnd returns where the fixed section of an envelope object ends at
// the latest: the start of its first tail (the smallest target of the
// bytes slots at the absolute positions slots, whose values the builder
// appends right after the fixed section; a slot counts when its offset is
// not 0, even with a length of 0), or the message end when those slots
// are all null. Extension fields lie before it; a canonical
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

// PeekEnvelope reads the first two fields of an envelope from head, its
// first bytes only (the rest of the message need not be there): a
// request's method and promise_id, or an answer's status and promise_id
// (both lie at offsets 0 and 4 of the root). It checks what those bytes
// allow: the magic, version 1 or 2, type 200, a root at 16 or past it
// whose first 8 bytes lie inside head, and a size field that covers
// them; ok is false otherwise. A read loop uses it on the head of a frame
// over its maximum frame size (frame.Reader.DiscardTooLarge), to answer
// that call alone. It neither allocates nor fails.
func PeekEnvelope(head []byte) (first, promiseID uint32, ok bool) {
	if len(head) < headerSize || string(head[:4]) != "ZAP\x00" {
		return 0, 0, false
	}
	if v := binary.LittleEndian.Uint16(head[4:]); v != 1 && v != 2 || head[7] != EnvelopeType {
		return 0, 0, false
	}
	root := uint64(binary.LittleEndian.Uint32(head[8:]))
	size := uint64(binary.LittleEndian.Uint32(head[12:]))
	if root < headerSize || root+8 > uint64(len(head)) || root+8 > size {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(head[root:]), binary.LittleEndian.Uint32(head[root+4:]), true
}
