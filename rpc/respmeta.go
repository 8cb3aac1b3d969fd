package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Response metadata: key/value pairs a unary handler (or a server
// interceptor) sets for its caller, as gRPC-go's grpc.SetHeader and
// grpc.SetTrailer do, sent with the answer in an extension field of the
// response envelope (docs/wire.md §8, "Response: metadata"), in the
// encoding of request metadata. An answer without it is the canonical
// envelope, byte for byte; a canonical client reads the status and the
// body of one with it as usual. Streams carry none (for now: their end
// frame could, see rpc/DESIGN.md).

// ErrNoResponseMetadata is returned by [SetResponseMetadata] for a ctx
// that is not a unary handler's: a stream handler's (streams carry no
// response metadata) or one no server made.
var ErrNoResponseMetadata = errors.New("rpc: SetResponseMetadata: ctx is not a unary handler's (streams carry no response metadata)")

// ErrResponseMetadata is matched (errors.Is) by the error of a call that
// asked for its answer's metadata ([WithResponseMetadata]) and got
// metadata it refuses: larger than its limit ([WithMaxResponseMetadata])
// or not a whole number of key/value pairs. The handler ran; the answer
// is dropped.
var ErrResponseMetadata = errors.New("rpc: response metadata refused")

// SetResponseMetadata adds the key/value pairs kv (key, value, key,
// value...) to the metadata the answer of the unary call that ctx
// belongs to carries back to its caller, after any pairs set before (a
// key may appear more than once; [Metadata.Get] returns the first). ctx
// is the handler's, or one derived from it; a server interceptor
// ([WithInterceptors]) may set pairs too, before or after it calls next.
// The pairs go with whatever answer the call gets: its result, its error
// (a *[StatusError] or any other), or the 500 of a panic; they are
// copied here. Call it from the handler's goroutine (or the
// interceptor's) before the handler returns: pairs set later, from
// another goroutine, may reach another call's answer.
//
// A handler's pairs above the server's metadata limit ([WithMaxMetadata],
// [DefaultMaxMetadata] by default; the encoded size, as
// [Metadata.Size]) turn its answer into a 500 saying so ("rpc: response
// metadata too large: ..."), logged as a handler error, without the
// metadata. So does an answer whose result and metadata together do not
// fit in a frame (a 500 "rpc: answer too large for a frame ..."); an
// error answer whose text and metadata together do not fit goes without
// the metadata.
//
// It returns [ErrNoResponseMetadata] for a ctx that is not a unary
// handler's (a stream handler's among them), and panics on an odd number
// of strings, as [WithMetadata] does. A canonical client ignores response
// metadata; a zapcodec client reads it with [WithResponseMetadata].
func SetResponseMetadata(ctx context.Context, kv ...string) error {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("rpc: SetResponseMetadata: odd number of strings (%d): want key, value pairs", len(kv)))
	}
	j := callJob(ctx)
	if j == nil {
		return ErrNoResponseMetadata
	}
	for _, s := range kv {
		j.rmd = binary.LittleEndian.AppendUint32(j.rmd, uint32(len(s)))
		j.rmd = append(j.rmd, s...)
	}
	return nil
}

// checkResponseMetadata checks the response metadata j's handler set
// against the server's limit; over it, the call is answered 500 with a
// text that says so (logged as a handler error) and no metadata, and ok
// is false.
func (c *serverConn) checkResponseMetadata(j *job) (status uint32, body []byte, ok bool) {
	lim := c.maxMetadata()
	if n := len(j.rmd); n > lim {
		dropResponseMetadata(j)
		status, body = c.internalError(j, fmt.Errorf("rpc: response metadata too large: %d bytes encoded, over the server's limit of %d bytes (WithMaxMetadata)", n, lim))
		return status, body, false
	}
	return 0, nil, true
}

// dropResponseMetadata drops the response metadata j's handler set, for
// an answer that goes without it; a buffer larger than a connection keeps
// is let go.
func dropResponseMetadata(j *job) {
	j.rmd = j.rmd[:0]
	if cap(j.rmd) > maxKeptBuffer {
		j.rmd = nil
	}
}

// respMDExtra is how many bytes response metadata md adds to an answer
// envelope: its value and the longer fixed section, 0 without any.
func respMDExtra(md []byte) int {
	if len(md) == 0 {
		return 0
	}
	return len(md) + wire.ResponseMetadataOverhead
}

// WithResponseMetadata returns a ctx whose calls store the response
// metadata their answers carry (what the handler set with
// [SetResponseMetadata]) in *md, as gRPC-go's grpc.Header call option
// does. *md is emptied when the call is sent and set when its answer
// arrives, a success or an error (a *[StatusError]); it stays empty for
// an answer without metadata (a canonical server's), for a call that
// fails before its answer (ctx ended, connection closed) and for a
// stream opened with ctx (streams carry none).
//
// Ownership: *md holds its own copy of the bytes, made for this call
// (one allocation per answer that carries metadata): it is the caller's
// and stays valid after the call, until the next call with this ctx
// replaces it. Read *md only after [Client.Call] (or [Promise.Wait] for
// a [Client.Send]) returned; a ctx made by WithResponseMetadata serves
// one call at a time (calls sharing it at once would write *md
// concurrently).
//
// An answer whose metadata exceeds the client's limit
// ([WithMaxResponseMetadata], [DefaultMaxMetadata] by default) or is not a
// whole number of key/value pairs fails the call with an error matching
// [ErrResponseMetadata]; the handler ran. A call that did not ask ignores
// the answer's metadata, as a canonical client does.
//
// Cost: a call without WithResponseMetadata pays nothing for it. Like
// [WithCap] and [WithMetadata], the first use in a process makes every
// later call look its ctx up (see wireInUse).
func WithResponseMetadata(ctx context.Context, md *Metadata) context.Context {
	w := &wireOpts{}
	if old := wireFrom(ctx); old != nil {
		*w = *old
	}
	w.rmd = md
	wireInUse.Store(true) // before any ctx holds w
	return context.WithValue(ctx, wireKey{}, w)
}

// WithMaxResponseMetadata sets the largest encoded response metadata
// (see [Metadata.Size]) the client accepts in an answer to a call that
// asked for it ([WithResponseMetadata]); a larger one fails the call
// with an error matching [ErrResponseMetadata]. Default
// [DefaultMaxMetadata]; n <= 0 means the default. The metadata arrives
// inside the answer's frame, so the frame size limit bounds what is read
// either way; this bounds what is copied for the caller.
func WithMaxResponseMetadata(n int) ClientOption {
	return clientOption(func(o *clientOptions) { o.maxRespMD = n })
}

// takeMetadata gives the response metadata md of the answer delivered to
// s to the call's receiver (s.rmd, not nil), or fails the call when md is
// over the client's limit or does not decode. The read loop calls it
// before it signals s.ch, which orders its writes before the caller's
// reads.
func (c *Client) takeMetadata(s *slot, md []byte) {
	lim := c.opts.maxRespMD
	if lim <= 0 {
		lim = DefaultMaxMetadata
	}
	if len(md) > lim || !validMetadata(md) {
		s.err = refuseMetadata(len(md), lim)
		return
	}
	*s.rmd = Metadata{bytes.Clone(md)}
}

// refuseMetadata returns the error of an answer whose n bytes of metadata
// takeMetadata refuses (over lim, or not whole pairs); out of line, so
// that the error escapes only on this path.
//
//go:noinline
func refuseMetadata(n, lim int) *error {
	err := fmt.Errorf("%w: not a whole number of key/value pairs", ErrResponseMetadata)
	if n > lim {
		err = fmt.Errorf("%w: %d bytes encoded, over the client's limit of %d bytes (WithMaxResponseMetadata)", ErrResponseMetadata, n, lim)
	}
	return &err
}
