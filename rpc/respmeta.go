package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/zapcodec/zapcodec/rpc/internal/respmd"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Response metadata: key/value pairs a unary handler (or a server
// interceptor) sets for its caller, as gRPC-go's grpc.SetHeader and
// grpc.SetTrailer do, sent with the answer in an extension field of the
// response envelope (docs/wire.md §8, "Response: metadata"), in the
// encoding of request metadata. An answer without it is the canonical
// envelope, byte for byte; a canonical client reads the status and the
// body of one with it as usual. A stream handler's go as its trailer, in
// a frame of kind 10 just before the server's end of the stream
// (docs/wire.md §9, "Extension: trailer"), a kind a canonical client
// ignores.

// ErrNoResponseMetadata is returned by [SetResponseMetadata] for a ctx
// that is not a handler's (a unary or a stream handler's): one no server
// made, such as a client's.
var ErrNoResponseMetadata = errors.New("rpc: SetResponseMetadata: ctx is not a handler's")

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
// With a stream handler's ctx (or one derived from it) the pairs are the
// stream's trailer, as gRPC-go's ServerStream.SetTrailer: sent, copied,
// in a frame of their own just before the server's end of the stream,
// clean or error, whether the handler returns or calls
// [Stream.CloseSend]. Once that end is decided (the handler returned or
// called CloseSend, or the stream was aborted) it returns
// [ErrStreamClosed] and sets nothing. A trailer above the server's
// metadata limit turns the end into a 500 that says so, without the
// trailer (CloseSend then returns the error); after a panic the panic's
// 500 stays. The end of a stream aborted from outside (the client's
// cancel, Shutdown's grace, a sender past its window) carries none.
//
// It returns [ErrNoResponseMetadata] for a ctx that is not a handler's,
// and panics on an odd number of strings, as [WithMetadata] does. A
// canonical client ignores response metadata; a zapcodec client reads it
// with [WithResponseMetadata].
func SetResponseMetadata(ctx context.Context, kv ...string) error {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("rpc: SetResponseMetadata: odd number of strings (%d): want key, value pairs", len(kv)))
	}
	j := callJob(ctx)
	if j == nil {
		if st := streamFrom(ctx); st != nil && st.set.sc != nil {
			return st.setTrailer(kv)
		}
		return ErrNoResponseMetadata
	}
	j.rmd = appendPairs(j.rmd, kv)
	j.undo = true // finishAny sends or drops j.rmd
	return nil
}

// appendPairs appends the pairs kv, encoded, to md.
func appendPairs(md []byte, kv []string) []byte {
	for _, s := range kv {
		md = binary.LittleEndian.AppendUint32(md, uint32(len(s)))
		md = append(md, s...)
	}
	return md
}

// setTrailer adds the pairs kv to the trailer of st, a server's stream;
// ErrStreamClosed once the server's end is decided (the handler
// returned, called CloseSend, or the stream was aborted).
func (st *Stream) setTrailer(kv []string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sdone {
		return ErrStreamClosed
	}
	if st.tmd == nil {
		// A buffer of the stream queues' pool, given back once the
		// trailer is written (takeTrailer's caller) or refused: a
		// stream's trailer allocated its pairs' bytes (twice for one
		// pair: the length, then the bytes).
		st.tmd = getQueue()
	}
	st.tmd = appendPairs(st.tmd, kv)
	return nil
}

// takeTrailer takes the trailer st's handler set, nil for none, and the
// text of the 500 its end becomes when the trailer is above the server's
// metadata limit or does not fit in a frame ("" when it fits). The
// caller gives md back (putQueue) once it is written.
func (c *serverConn) takeTrailer(st *Stream) (md []byte, tooLarge error) {
	st.mu.Lock()
	md, st.tmd = st.tmd, nil
	st.mu.Unlock()
	if len(md) == 0 {
		putQueue(md)
		return nil, nil
	}
	if lim := c.maxMetadata(); len(md) > lim {
		putQueue(md)
		return nil, fmt.Errorf("rpc: response metadata too large: %d bytes encoded, over the server's limit of %d bytes (WithMaxMetadata)", len(md), lim)
	}
	if n := 1 + wire.StreamMsgOverhead + len(md); n > c.streams.out.max {
		putQueue(md)
		return nil, fmt.Errorf("rpc: response metadata too large for a frame: %d bytes encoded, over the frame limit of %d bytes", len(md), c.streams.out.max-1-wire.StreamMsgOverhead)
	}
	return md, nil
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
// an answer without metadata (a canonical server's) and for a call that
// fails before its answer (ctx ended, connection closed).
//
// A stream opened with ctx ([Client.OpenStream]) gets its trailer in *md
// the same way, as gRPC-go's ClientStream.Trailer: emptied at the open,
// set when the server's end arrives with a trailer before it (see
// [SetResponseMetadata]). Read it only after [Stream.Recv] returned the
// end: io.EOF or the error end's *[StatusError]; it stays empty for a
// stream ended otherwise (canceled, the connection closed). A ctx (one
// made by WithResponseMetadata) serves one call or stream at a time;
// the streams opened with it that the caller never gets are no
// exception: *md is for the last stream opened with ctx, so a stream a
// stream interceptor opened and dropped (opening another), or one its
// chain canceled before an open was sent again (by rpc/cluster, on
// another connection), never writes it after the next open emptied it.
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
// [ErrResponseMetadata]; the handler ran. For a stream, Recv returns that
// error in place of the end. A call or stream that did not ask ignores
// the metadata, as a canonical client does; an answer whose metadata
// slot points outside its message is a malformed envelope all the same,
// and fails the call with [ErrMalformed] whether it asked or not (the
// envelope is checked before the call is matched).
//
// Cost: a call without WithResponseMetadata pays nothing for it. Like
// [WithCap] and [WithMetadata], the first use in a process makes every
// later call look its ctx up (see wireInUse).
func WithResponseMetadata(ctx context.Context, md *Metadata) context.Context {
	wo := &struct { // one allocation for both
		w wireOpts
		o rmdOwner
	}{}
	w := &wo.w
	if old := wireFrom(ctx); old != nil {
		*w = *old
	}
	w.rmd, w.rown = md, &wo.o
	wireInUse.Store(true) // before any ctx holds w
	return context.WithValue(ctx, wireKey{}, w)
}

func init() {
	respmd.Receiver = func(ctx context.Context) any {
		if w := wireFrom(ctx); w != nil && w.rmd != nil {
			return w.rmd
		}
		return nil
	}
}

// rmdOwner orders the writes of a WithResponseMetadata receiver by the
// streams opened with it (the ctxs derived from one WithResponseMetadata
// share it). A stream's open empties the receiver and takes the next
// turn (gen), and its end writes its trailer there only while no later
// open took the receiver, both under mu: a stream opened with the
// caller's ctx but never returned to the caller (a client stream
// interceptor opened it, then another, which it returned, or an open
// sent again by rpc/cluster elsewhere after the first connection's chain
// canceled it) leaves the receiver to the stream that came after it,
// whose open, on any connection, its end neither races nor follows.
type rmdOwner struct {
	mu  sync.Mutex
	gen uint64
}

// claimReceiver makes s, a client's stream being opened, the stream that
// the receiver md (owned by o) is for, and empties md.
func (s *Stream) claimReceiver(md *Metadata, o *rmdOwner) {
	o.mu.Lock()
	o.gen++
	s.rmd, s.rown, s.rgen = md, o, o.gen
	*md = Metadata{}
	o.mu.Unlock()
}

// WithMaxResponseMetadata sets the largest encoded response metadata
// (see [Metadata.Size]) the client accepts in an answer to a call, or a
// stream's trailer, that asked for it ([WithResponseMetadata]); a larger
// one fails the call (the stream's Recv at its end) with an error
// matching [ErrResponseMetadata]. Default
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
	b, refusal := c.respMetadata(md)
	if refusal != nil {
		s.err = refusal
		return
	}
	*s.rmd = Metadata{b}
}

// respMetadata returns the caller's copy of the response metadata md of
// an answer or a stream's trailer, or md's refusal when it is over the
// client's limit ([WithMaxResponseMetadata]) or not whole pairs.
func (c *Client) respMetadata(md []byte) ([]byte, *error) {
	lim := c.opts.maxRespMD
	if lim <= 0 {
		lim = DefaultMaxMetadata
	}
	if len(md) > lim || !validMetadata(md) {
		return nil, refuseMetadata(len(md), lim)
	}
	return bytes.Clone(md), nil
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

// closeSendTrailer writes the trailer of s, a server's stream whose
// handler called CloseSend, just before its end. A trailer above the
// limits (see takeTrailer) is not sent: the end goes as a 500 saying so,
// written here, and its error is returned (CloseSend's). A trailer not
// queued because the stream's ctx ended is kept for the end the handler's
// return sends.
func (s *Stream) closeSendTrailer() error {
	c := s.set.sc
	md, tooLarge := c.takeTrailer(s)
	if tooLarge != nil {
		text := c.handlerError("rpc: stream handler error", s.method, "stream", s.id, tooLarge)
		s.mu.Lock()
		s.acct.status = StatusInternal // the end the observer sees, whatever the handler returns
		s.mu.Unlock()
		s.set.writeEnd(s.ctx, s.id, StatusInternal, text)
		return tooLarge
	}
	if len(md) == 0 {
		return nil
	}
	err := s.set.writeFrame(s.ctx, wire.KindStreamTrailer, s.id, md, false)
	if err != nil && err == s.ctx.Err() {
		// Not queued (the ctx ended while it waited for room, or wrote
		// the queue to make some): the end is owed (CloseSend), and
		// endStream sends the trailer just before it (and gives its
		// buffer back).
		s.mu.Lock()
		s.tmd = md
		s.mu.Unlock()
		return err
	}
	putQueue(md) // copied into the write queue, or not sent
	return err
}

// onTrailer handles a kind 10 frame (a stream's trailer) on a client:
// kept, copied, for a stream whose open asked for it (WithResponseMetadata)
// until the server's end gives it to the caller, or refused (over the
// client's limit, not whole pairs), its error then Recv's at the end. A
// stream that did not ask ignores it, as a canonical client does; so does
// one that is not open. A second trailer replaces the first.
func (t *streamSet) onTrailer(p []byte) {
	id, md, err := wire.ParseStreamTrailer(p)
	if err != nil {
		return
	}
	s := t.lookup(id)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rmd == nil || s.rdone {
		return
	}
	s.tmd, s.terr = nil, nil
	b, refusal := t.cl.respMetadata(md)
	if refusal != nil {
		s.terr = *refusal
		return
	}
	s.tmd = b
}

// onTrailerTooLarge is onTrailer for a trailer of the stream id over
// the client's maximum frame size, read past (oversize.go): the stream's
// end, which follows, fails with err, as for a trailer refused; nothing
// when no such stream is open or its caller asked for no response
// metadata (it loses nothing).
func (t *streamSet) onTrailerTooLarge(id uint32, err error) {
	s := t.lookup(id)
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.rmd != nil && !s.rdone {
		s.tmd, s.terr = nil, err
	}
	s.mu.Unlock()
}

// giveTrailer hands the trailer of s, a client's stream that the server
// ended, to the caller's receiver and returns the error Recv returns in
// place of end (io.EOF or the error end's): the trailer's refusal, if
// any. The read loop calls it before the end is seen by Recv, which
// orders its write of *s.rmd before the caller's reads. A stream that
// ended otherwise first (canceled: by its caller, or by the chain of
// interceptors that opened it and did not return it; its connection
// closed) gives nothing: Recv does not return this end. Nor does one
// whose receiver a later open took (see rmdOwner). Both are decided
// under locks that the cancel (s.mu) and the later open (the owner's)
// take too, so a trailer is written before them or not at all.
func (s *Stream) giveTrailer(end error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rmd == nil || s.rdone {
		return end
	}
	if s.terr != nil {
		return s.terr
	}
	if s.tmd != nil {
		o := s.rown
		o.mu.Lock()
		if o.gen == s.rgen {
			*s.rmd = Metadata{s.tmd}
		}
		o.mu.Unlock()
		s.tmd = nil
	}
	return end
}
