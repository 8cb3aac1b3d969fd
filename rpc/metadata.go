package rpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Capability token and metadata of a call.
//
// The client side puts them in the caller's ctx ([WithCap],
// [WithMetadata]); [Client.Call] writes them into the request envelope:
// the token into the canonical cap field, the metadata into a zapcodec
// extension field (docs/wire.md §8, see wire.AppendRequest). The handler side reads
// them from its ctx ([CapFrom], [MetadataFrom]). Both are encoded once,
// when the ctx is made, so a call with a reused ctx copies bytes and
// allocates nothing.
//
// Incoming and outgoing are kept apart, as gRPC's incoming and outgoing
// metadata are: what a call carried is read from the handler's ctx, and
// a call or stream the handler makes with that ctx (or one derived from
// it) carries none of it, only what the handler (or an interceptor) adds
// with WithCap and WithMetadata; so a client's credentials do not reach
// the server's backends by accident. A handler that means to pass a
// header on copies it: WithMetadata(ctx, "traceparent",
// string(MetadataFrom(ctx).Get("traceparent"))).
// TestIncomingMetadataNotForwarded checks it for calls and streams.

// wireKey is the ctx key of a call's *wireOpts.
type wireKey struct{}

// wireOpts is what a client ctx asks the request envelope to carry. It is
// immutable once stored in a ctx.
type wireOpts struct {
	cap []byte    // copied from the caller
	md  []byte    // encoded metadata
	rmd *Metadata // receives the answer's metadata (WithResponseMetadata)
	// rown orders the writes of *rmd by streams (see rmdOwner), shared
	// by the ctxs derived from one WithResponseMetadata.
	rown *rmdOwner
}

// wireInUse is set once a WithCap or WithMetadata ran in this process:
// until then no ctx can hold a *wireOpts, and wireFrom does not look
// (ctx.Value walks the whole chain of a ctx's parents when the key is
// missing, some 25 ns for a request's ctx of 7 layers).
var wireInUse atomic.Bool

// wireFrom returns what ctx asks the request envelope to carry, nil for
// nothing.
func wireFrom(ctx context.Context) *wireOpts {
	if !wireInUse.Load() {
		return nil
	}
	w, _ := ctx.Value(wireKey{}).(*wireOpts)
	return w
}

// WithCap returns a ctx whose calls carry token in the request envelope's
// cap field (docs/wire.md §6), which a canonical server also reads. token is
// copied; an empty token means none (and clears one set by an outer
// WithCap). The handler reads it with [CapFrom].
func WithCap(ctx context.Context, token []byte) context.Context {
	w := &wireOpts{}
	if old := wireFrom(ctx); old != nil {
		*w = *old
	}
	w.cap = nil
	if len(token) > 0 {
		w.cap = append([]byte(nil), token...)
	}
	wireInUse.Store(true) // before any ctx holds w
	return context.WithValue(ctx, wireKey{}, w)
}

// WithMetadata returns a ctx whose calls carry the key/value pairs kv
// (key, value, key, value...) in the request's metadata extension field,
// after any pairs an outer WithMetadata added (so a key may appear more
// than once; [Metadata.Get] returns the first). Keys are compared as
// bytes: use lower case, as HTTP/2 and W3C Trace Context do
// ("traceparent"). The pairs are encoded here, once. WithMetadata panics
// on an odd number of strings, a programming error like an odd argument
// list to slog.
//
// A canonical server ignores metadata; a zapcodec server refuses a call
// whose metadata exceeds its limit ([WithMaxMetadata], 16 KiB by default)
// with status 431, without running it.
func WithMetadata(ctx context.Context, kv ...string) context.Context {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("rpc: WithMetadata: odd number of strings (%d): want key, value pairs", len(kv)))
	}
	w := &wireOpts{}
	if old := wireFrom(ctx); old != nil {
		*w = *old
	}
	n := len(w.md)
	for _, s := range kv {
		n += 4 + len(s)
	}
	md := make([]byte, 0, n)
	md = append(md, w.md...)
	for _, s := range kv {
		md = binary.LittleEndian.AppendUint32(md, uint32(len(s)))
		md = append(md, s...)
	}
	w.md = md
	wireInUse.Store(true) // before any ctx holds w
	return context.WithValue(ctx, wireKey{}, w)
}

// Metadata is the key/value metadata a call carried, read in a handler
// with [MetadataFrom]. Its bytes alias the server's per-call buffer: a
// Metadata and the slices its methods return are valid only until the
// handler returns (copy what you keep). The zero Metadata is empty.
//
// Encoding (the value of the request's metadata extension field): pairs
// back to back, each a key then a value, each of those a u32
// little-endian length followed by that many bytes.
type Metadata struct{ b []byte }

// validMetadata reports whether b is a whole number of key/value pairs.
func validMetadata(b []byte) bool {
	items := 0
	for len(b) > 0 {
		if len(b) < 4 {
			return false
		}
		l := binary.LittleEndian.Uint32(b)
		if uint64(l) > uint64(len(b)-4) {
			return false
		}
		b = b[4+l:]
		items++
	}
	return items%2 == 0
}

// nextItem splits the first item (key or value) off b; b must be valid.
func nextItem(b []byte) (item, rest []byte) {
	l := binary.LittleEndian.Uint32(b)
	return b[4 : 4+l : 4+l], b[4+l:]
}

// Get returns the value of the first pair whose key is key, nil when there
// is none (a present empty value is a non-nil empty slice).
func (m Metadata) Get(key string) []byte {
	for b := m.b; len(b) > 0; {
		var k, v []byte
		k, b = nextItem(b)
		v, b = nextItem(b)
		if string(k) == key {
			if v == nil {
				v = []byte{}
			}
			return v
		}
	}
	return nil
}

// Len returns the number of pairs.
func (m Metadata) Len() int {
	n := 0
	for b := m.b; len(b) > 0; n++ {
		_, b = nextItem(b)
		_, b = nextItem(b)
	}
	return n
}

// Range calls f for each pair in order until f returns false.
func (m Metadata) Range(f func(key, value []byte) bool) {
	for b := m.b; len(b) > 0; {
		var k, v []byte
		k, b = nextItem(b)
		v, b = nextItem(b)
		if !f(k, v) {
			return
		}
	}
}

// Size returns the encoded size of the metadata in bytes (what
// [WithMaxMetadata] bounds).
func (m Metadata) Size() int { return len(m.b) }

// callJob returns the call a handler's ctx (or a ctx derived from it)
// belongs to, nil for any other ctx.
func callJob(ctx context.Context) *job {
	j, ok := ctx.(*job)
	if !ok {
		j, _ = ctx.Value(callInfoKey{}).(*job)
	}
	return j
}

// CapFrom returns the capability token (the envelope's cap field) of the
// call a handler's ctx belongs to, nil when the call carried none or ctx
// is not a handler's. The slice aliases the server's per-call buffer and
// is valid only until the handler returns. The token is the handler's to
// read: calls the handler makes with its ctx do not carry it (see
// [WithCap] to send one).
func CapFrom(ctx context.Context) []byte {
	if j := callJob(ctx); j != nil {
		return j.capv
	}
	if st := streamFrom(ctx); st != nil {
		return st.capv
	}
	return nil
}

// MetadataFrom returns the metadata of the call a handler's ctx belongs
// to; it is empty when the call carried none (a canonical client's never
// does) or ctx is not a handler's. Valid only until the handler returns.
// It is the handler's to read: calls the handler makes with its ctx do
// not carry it (see [WithMetadata] to send pairs), as in gRPC, whose
// incoming metadata is not outgoing.
func MetadataFrom(ctx context.Context) Metadata {
	if j := callJob(ctx); j != nil {
		return Metadata{j.mdv}
	}
	if st := streamFrom(ctx); st != nil {
		return Metadata{st.mdv}
	}
	return Metadata{}
}

// DefaultMaxMetadata is the largest encoded metadata a server accepts by
// default (see [WithMaxMetadata]). 16 KiB holds any set of tracing and
// auth headers (a W3C traceparent is 55 bytes, tracestate at most 512);
// nginx reads request headers into 8 KiB buffers and net/http allows
// 1 MiB of them.
const DefaultMaxMetadata = 16 << 10

// WithMaxMetadata sets the largest encoded metadata (see [Metadata.Size])
// a call may carry. A larger one is answered 431 with the not-run flag and
// its handler does not run (not retryable: it would be refused again); the
// answer's text gives the metadata's encoded size and the limit.
// Metadata that does not decode into key/value pairs is answered 400.
// Default DefaultMaxMetadata; n <= 0 means the default. The metadata
// arrives inside the request frame, so the frame size limit
// (see [WithFrameOptions]) bounds what is read either way; this bounds what a
// handler is given.
func WithMaxMetadata(n int) ServerOption {
	return serverOption(func(o *serverOptions) { o.maxMetadata = n })
}

// metadataTooLarge writes into buf the body of the 431 answer to metadata
// of n encoded bytes over the server's limit lim (the limit is on the
// encoded size, key/value pairs and their lengths together, not on the
// number of pairs), and returns it as a string that aliases buf: the
// caller writes it out before buf goes, so that a refusal allocates
// nothing.
func metadataTooLarge(buf *[metadataTextSize]byte, n, lim int) string {
	b := append(buf[:0], "metadata too large: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " bytes encoded, over the server's limit of "...)
	b = strconv.AppendInt(b, int64(lim), 10)
	b = append(b, " bytes"...)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// metadataTextSize holds metadataTooLarge's text with two 19-digit numbers.
const metadataTextSize = 128

// maxMetadata is the server's limit on encoded metadata, both what a
// call carries and what its handler sets for the answer
// ([WithMaxMetadata]).
func (c *serverConn) maxMetadata() int {
	if lim := c.s.opts.maxMetadata; lim > 0 {
		return lim
	}
	return DefaultMaxMetadata
}

// malformedMetadata is the body of the 400 answer to metadata that does
// not decode into key/value pairs.
const malformedMetadata = "malformed metadata"

// checkMetadata checks a request's metadata against the server's limit
// and its encoding; when it fails, it answers the call (from the read
// loop) and reports false.
func (c *serverConn) checkMetadata(r *wire.Request) bool {
	lim := c.maxMetadata()
	if len(r.Metadata) > lim {
		var text [metadataTextSize]byte
		c.answerDirect(r, StatusMetadataTooLarge, metadataTooLarge(&text, len(r.Metadata), lim), true)
		return false
	}
	if !validMetadata(r.Metadata) {
		c.answerDirect(r, StatusBadRequest, malformedMetadata, false)
		return false
	}
	return true
}

// setExt stores a request's extension values in its job: the deadline
// from the timeout, copies of cap and metadata (the frame's bytes are
// reused after the read loop moves on). arrived is when the request was
// parsed (monoNow), for the deadline.
func (j *job) setExt(r *wire.Request, arrived int64) {
	j.undo = true // finish looks at what this sets (finishAny)
	// The caller takes a compressed answer, which this server may send
	// (WithCompression); finish clears it.
	j.deflate = r.AcceptDeflate && j.c.s.opts.deflateMin > 0
	if r.Timeout != 0 {
		j.dl.Store(deadlineAfter(arrived, r.Timeout))
	}
	if n := len(r.Cap) + len(r.Metadata); n > 0 {
		j.ext = append(append(j.ext[:0], r.Cap...), r.Metadata...)
		if len(r.Cap) > 0 {
			j.capv = j.ext[:len(r.Cap):len(r.Cap)]
		}
		if len(r.Metadata) > 0 {
			j.mdv = j.ext[len(r.Cap):n:n]
		}
	}
}
