package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Compression of unary calls (docs/wire.md §8, "Compression"): a client
// with WithCompression sets the accept bit in the flags word of its
// requests; a server with WithCompression compresses, with raw DEFLATE
// (compress/flate at flate.BestSpeed), the OK answers to such requests
// whose body is at least its threshold, when that makes them shorter,
// and marks them with bit 1 of the answer's flags word. Its first answer
// to such a request on a connection (and every compressed one) sets bit
// 2 too: it takes compressed requests; the client then compresses the
// payloads of at least its threshold (request flags bit 1). Neither side
// compresses for a peer that did not say it takes it, so a canonical
// peer, or a zapcodec one without the option, never gets a compressed
// body.

// DefaultCompressMin is the smallest answer body a server with
// [WithCompression] compresses when given a threshold <= 0: 1 KiB.
const DefaultCompressMin = 1 << 10

// maxPooledCoders bounds how many compressors, and how many
// decompressors, the process keeps for reuse: a flate.Writer at
// flate.BestSpeed holds about 1.2 MiB (a decompressor about 40 KiB), so
// idle memory stays at most maxPooledCoders of each. How many
// compressors exist at once, idle or working, is bounded too
// (maxCompressors); how many decompressors are at work is not (see
// inflaters for why).
const maxPooledCoders = 4

// maxCompressors is how many compressors the process may hold at once,
// idle or compressing: GOMAXPROCS (compression is work for a processor,
// and more at once gains nothing), at least maxPooledCoders. A payload
// or answer that finds them all at work goes plain: without the bound,
// many answers compressed at once (goroutines preempted in the middle
// of a compression) took 1.2 MiB each.
func maxCompressors() int32 {
	return int32(max(maxPooledCoders, runtime.GOMAXPROCS(0)))
}

// WithCompression turns on the compression of large unary answers, on
// the side it is given to; both sides must have it for any answer to be
// compressed.
//
// On a client, every request (unary calls and promises, not stream
// opens) says that the client takes a compressed answer: the request
// envelope then carries the extension's flags word (20 bytes more than
// the canonical envelope, which a canonical server ignores). Once an
// answer said that the server takes compressed requests, a payload of
// at least minSize bytes is compressed (on the caller's goroutine, into
// a pooled buffer given back once the request is queued; req itself is
// only read) and sent so when that is shorter and a compressor is free
// (see the server's side below); a canonical server never
// says so, and never gets one. The client inflates a compressed answer
// on its read loop, into the buffer the call's answer is appended to,
// and fails the call with an error matching [ErrDecompress] when the
// body does not inflate or inflates past what the client takes: 100
// times the bytes of its frame ([WithMaxInflateRatio]), or the room of
// the call's buffer (its capacity beyond its length) when that is more,
// and never past the largest answer a frame can carry (the maximum frame
// size, [WithFrameOptions]). So the memory compressed answers take
// follows the bytes received, as plain ones' does: a small frame that
// would inflate to gigabytes takes at most 100 times its bytes beyond
// the caller's buffer, fails that call only, and the connection goes
// on; an answer that compresses more than 100 times (long runs of one
// byte) fails too, unless the call's buffer has room for it or the
// client takes a larger ratio. While the read loop inflates,
// the answers behind on the connection wait for it: some 3 ms per MiB
// inflated (16 MiB took 40 to 58 ms on a loaded 2-core machine, against
// a few ms to read it plain), so calls that must not wait behind large
// compressed answers go on a client of their own.
//
// On a server, an OK answer whose body has at least minSize bytes
// (minSize <= 0: [DefaultCompressMin]) is compressed when its request
// said it takes one, and sent compressed only when that is shorter.
// Error answers, refusals and streams are never compressed; response
// metadata goes uncompressed beside the body. The compressed copy is the
// server's (a pooled buffer, held only while the answer is written; the
// compressor itself only while it compresses, and an answer that finds
// every compressor at work, GOMAXPROCS of them at least 4, goes plain): the
// handler's buffers are untouched, and the answer budget
// ([ReserveAnswer]) counts the bytes the handler reserved for its raw
// result, not the compressed copy. The compression runs on the goroutine
// that answers the call, after the handler returned. A compressed
// request is inflated on the connection's read loop into the call's own
// buffer (the handler's req), bounded as a plain payload is, by the
// maximum frame size; one that does not inflate, inflates past that, or
// comes to a server without the option is answered 400 unrun, and the
// connection goes on. That last one carries the not-run flag: the client
// that gets it (a proxy may have sent its call to another server than
// the one that said it takes compressed requests) stops compressing its
// requests until an answer says again that the server takes them, and
// sends the call again, plain, once; not a promise's ([Client.Send]),
// whose payload is not kept: its Wait returns the 400. A server of an
// earlier release answers without the flag, and a canonical server
// behind such a proxy takes the compressed bytes for the payload: a
// client whose calls may reach either keeps the option off. What the
// payload grows by as it is inflated takes the call's answer budget
// ([WithAnswerBudget]) before the memory is allocated, until its answer
// has left, as a [ReserveAnswer] does; it
// may grow by at most the connection's budget (400 past it, when that
// budget is below the largest frame); while a budget is short, the read loop
// gives back what the request took, waits holding none, and inflates it
// again, reading nothing more meanwhile. So small requests that inflate
// to a frame each take at most the connection's budget beside what was
// sent on one connection, and the server's on all of them.
//
// Without the option on either side, every byte on the wire is what it
// was without it. Stream messages are not compressed (a stream message
// has no flags word to mark one compressed; see docs/wire.md §8), and a
// server refuses, 400, a stream open whose payload is marked compressed.
func WithCompression(minSize int) Option {
	if minSize <= 0 {
		minSize = DefaultCompressMin
	}
	return bothOption{
		s: func(o *serverOptions) { o.deflateMin = minSize },
		c: func(o *clientOptions) { o.deflate, o.deflateMin = true, minSize },
	}
}

// ErrDecompress matches (errors.Is) the error of a call whose answer came
// compressed and did not inflate: malformed compressed data, bytes after
// the compressed stream, or more bytes than the client takes (a
// decompression bomb: see [WithMaxInflateRatio]). The call fails; the
// connection goes on.
var ErrDecompress = errors.New("rpc: compressed answer did not inflate")

// DefaultMaxInflateRatio is how many times the bytes of its frame a
// compressed answer may inflate to on a client without
// [WithMaxInflateRatio]: 100.
const DefaultMaxInflateRatio = 100

// WithMaxInflateRatio bounds what a compressed answer ([WithCompression])
// may inflate to on this client: n times the bytes of the frame that
// carried it (header included), or the room of the call's buffer (the
// capacity of [Client.Call]'s resp beyond its length; for a generated
// client's calls, the pooled buffer's) when that is more, and never more
// than the largest answer a frame can carry. An answer that inflates past
// it fails its call alone, with an error matching [ErrDecompress] that
// names the bound; the connection and its other calls go on. n below
// [DefaultMaxInflateRatio] (100) counts as it: a zapcodec server sends
// compressed only answers that inflate at most that many times their
// compressed bytes (the others go plain), so that no answer of one fails
// on a client for its ratio.
//
// Why a ratio: a call's answer is the caller's, appended to its buffer,
// and a plain answer costs the client the bytes the server sent. A
// compressed one would otherwise cost what the server declares in a few
// bytes: DEFLATE inflates up to some 1,000 times (16 MiB of zeros is
// 20 KiB at flate.BestSpeed), so a hostile or broken server that
// answered each pending call ([WithMaxPending]; calls and promises not
// yet waited for alike) with a small frame inflating to the largest
// answer made the client hold the pending calls times 16 MiB for the
// tens of KiB it received (16 promises answered so with 4 MiB frames:
// 64 MiB held for 82 KB received, TestCompressionAnswerBombsBounded).
// With the ratio, what the answers inflate to beyond the buffers the
// callers gave is at most n times the bytes received for them, however
// many calls are pending. The room of the call's buffer is memory the
// caller set aside already, so filling it costs nothing new: a caller
// that expects a large, very compressible answer gives its call a buffer
// of that capacity.
//
// Why 100: real payloads compress 3 to 20 times (the getLogs-like
// records of the tests 8.4 times, structured records with varied
// values some 6), and a frame's 40-odd bytes of envelope let any
// answer of up to some 4 KiB through; only long runs of repeated bytes
// pass 100 (the same JSON record over and over: 160; zeros: 800 to
// DEFLATE's most, about 1,032), and a zapcodec server sends those plain.
// A client that takes them compressed from another server without
// buffers for them sets a larger n: 1,032 or more leaves only the
// frame's bound, and the memory a hostile server can make it hold grows
// with n.
func WithMaxInflateRatio(n int) ClientOption {
	n = max(n, DefaultMaxInflateRatio)
	return clientOption(func(o *clientOptions) { o.inflateRatio = n })
}

// errNoGain stops a compression whose output would not be shorter than
// its input.
var errNoGain = errors.New("rpc: compression does not pay")

// deflater is a pooled output of compression: the sink a compressor
// (a flate.Writer, taken only while it compresses: takeCompressor)
// writes into out, which fails once out would reach lim bytes. It is
// held while its output is written (a peer that does not read holds its
// compressed bytes, not a compressor).
type deflater struct {
	out []byte
	lim int
}

// deflaters keeps up to maxPooledCoders idle outputs; compressors keeps
// up to maxPooledCoders idle compressors, and liveCompressors counts
// those that exist (idle ones included), at most maxCompressors.
var (
	deflaters       = make(chan *deflater, maxPooledCoders)
	compressors     = make(chan *flate.Writer, maxPooledCoders)
	liveCompressors atomic.Int32
)

// takeCompressor returns an idle compressor, or a new one while fewer
// than maxCompressors exist, writing to sink; nil when all are at work.
func takeCompressor(sink io.Writer) *flate.Writer {
	select {
	case w := <-compressors:
		w.Reset(sink)
		return w
	default:
	}
	if liveCompressors.Add(1) > maxCompressors() {
		liveCompressors.Add(-1)
		return nil
	}
	w, _ := flate.NewWriter(sink, flate.BestSpeed) // the level is valid: no error
	return w
}

// putCompressor gives w back for reuse, or drops it beyond
// maxPooledCoders idle ones.
func putCompressor(w *flate.Writer) {
	w.Reset(nil) // keep no sink (and its output) alive
	select {
	case compressors <- w:
	default:
		liveCompressors.Add(-1)
	}
}

// Write appends p to d.out, the flate.Writer's output.
func (d *deflater) Write(p []byte) (int, error) {
	if len(d.out)+len(p) >= d.lim {
		return 0, errNoGain
	}
	d.out = append(d.out, p...)
	return len(p), nil
}

// getDeflater takes an idle output, or makes one.
func getDeflater() *deflater {
	select {
	case d := <-deflaters:
		return d
	default:
	}
	return new(deflater)
}

// putDeflater gives d back for reuse, without an output buffer above
// maxKeptBuffer; beyond maxPooledCoders idle ones, d is dropped.
func putDeflater(d *deflater) {
	d.out = d.out[:0]
	if cap(d.out) > maxKeptBuffer {
		d.out = nil
	}
	select {
	case deflaters <- d:
	default:
	}
}

// deflate compresses body into d.out and reports whether the answer
// carrying it is shorter than the plain one (its header takes
// wire.DeflatedOverhead bytes more); false too when every compressor is
// at work (maxCompressors). The compressor goes back before it returns.
func (d *deflater) deflate(body []byte) bool {
	d.out = d.out[:0]
	d.lim = len(body) - wire.DeflatedOverhead
	w := takeCompressor(d)
	if w == nil {
		return false // all at work: this one goes plain
	}
	_, err := w.Write(body)
	if err == nil {
		err = w.Close()
	}
	putCompressor(w)
	return err == nil
}

// inflater is a pooled decompressor and the reader of its input.
type inflater struct {
	src   bytes.Reader
	r     io.ReadCloser // a flate reader over src
	probe [1]byte       // see readInflated
}

// inflaters keeps up to maxPooledCoders idle decompressors; more may
// be at work at once, one per inflation in progress, and beyond those
// kept idle they are dropped.
//
// How many are at work is not bounded, as compressors are
// (maxCompressors), by choice. A decompressor takes about 44 KiB
// (flate.NewReader and its first Read: 44,626 B), 1/27 of a compressor,
// and is held only while its inflation computes: the input is a frame in
// memory already, so an inflation waits for nothing (a request whose
// answer budget is short gives its decompressor back before its read
// loop waits: inflateRequest). Every inflation runs on a connection's
// read loop, one at a time on each, so those at work are at most the
// connections inflating at that moment, each holding beside it the frame
// it received and what the inflation grows to (the answer budget's, or
// the client's inflate ratio's). A bound could not send the excess plain,
// as a compressor's does: an inflation cannot be skipped, so past the
// bound a read loop would wait or fail the call. Waiting makes every
// connection's compressed calls wait behind the bombs of another peer
// (16 MiB inflated in 40 to 58 ms on a loaded 2-core machine, see
// WithCompression), and failing makes a peer's bombs fail other peers' calls:
// both let one peer affect other connections, which costs more than 44
// KiB per connection that is inflating.
var inflaters = make(chan *inflater, maxPooledCoders)

// inflate appends to dst the raw DEFLATE stream src inflated, at most
// limit bytes of it; on error (an error matching ErrDecompress) it
// returns dst as it was given, grown perhaps.
func inflate(dst, src []byte, limit int) ([]byte, error) {
	return inflateCharged(dst, src, limit, nil)
}

// errInflateBudget stops an inflation whose grow (inflateCharged) said
// no: the answer budget is short (inflateRequest).
var errInflateBudget = errors.New("rpc: the answer budget is short of room for an inflated request")

// inflateCharged is inflate asking grow, when not nil, before the buffer
// grows past its capacity on entry: grow gets the capacity, beyond
// len(dst) on entry, that the output is to have, and a false from it
// stops the inflation with errInflateBudget.
func inflateCharged(dst, src []byte, limit int, grow func(int) bool) ([]byte, error) {
	var z *inflater
	select {
	case z = <-inflaters:
	default:
		z = new(inflater)
	}
	z.src.Reset(src)
	if z.r == nil {
		z.r = flate.NewReader(&z.src)
	} else if err := z.r.(flate.Resetter).Reset(&z.src, nil); err != nil {
		return dst, fmt.Errorf("%w: %v", ErrDecompress, err) // never: Reset without a dictionary does not fail
	}
	out, err := z.readInflated(dst, limit, grow)
	if err == nil && z.src.Len() != 0 {
		err = fmt.Errorf("%w: %d bytes after the compressed stream", ErrDecompress, z.src.Len())
	}
	z.src.Reset(nil) // keep nothing of src
	select {
	case inflaters <- z:
	default:
	}
	if err != nil {
		return out[:len(dst)], err
	}
	return out, nil
}

// readInflated appends what z.r yields to dst until io.EOF: at most
// limit bytes, growing dst in steps that never take it past limit+1
// bytes beyond its length on entry. A full dst is grown only once a
// byte is known to follow (z.probe): a caller's buffer of the answer's
// size is not grown just to learn that the stream has ended.
func (z *inflater) readInflated(dst []byte, limit int, grow func(int) bool) ([]byte, error) {
	start := len(dst)
	r := z.r
	for {
		end := start + limit + 1 // one byte past the limit tells a bomb
		if len(dst) == cap(dst) {
			n, err := r.Read(z.probe[:])
			if n == 0 {
				switch {
				case err == io.EOF:
					return dst, nil
				case err != nil:
					return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
				}
				continue
			}
			if len(dst)-start >= limit {
				return dst, &pastLimit{limit}
			}
			// By hand: append's growth (and slices.Grow's) may take
			// the buffer a quarter past the limit.
			size := len(dst) + min(max(len(dst)-start, 4<<10), end-len(dst))
			if grow != nil && !grow(size-start) {
				return dst, errInflateBudget
			}
			grown := make([]byte, len(dst), size)
			copy(grown, dst)
			dst = append(grown, z.probe[0])
			if err == io.EOF {
				return dst, nil
			}
			continue
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+n]
		switch {
		case len(dst)-start > limit:
			return dst, &pastLimit{limit}
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
	}
}

// pastLimit is the error of an inflation stopped one byte past its
// limit (readInflated): a bomb, or more than this side takes.
type pastLimit struct{ limit int }

func (e *pastLimit) Error() string {
	return fmt.Sprintf("%v: it inflates past %d bytes, the most this side takes", ErrDecompress, e.limit)
}

func (e *pastLimit) Unwrap() error { return ErrDecompress }

// inflateLimit is the most a compressed answer that came in a frame of
// frameLen bytes may inflate to on c, into a call's buffer with room
// spare bytes of capacity ([WithMaxInflateRatio]): the client's ratio
// times frameLen, or room when that is more, at most the largest answer
// a frame can carry. byRatio says that the ratio and the room bound it,
// not the frame.
func (c *Client) inflateLimit(frameLen, room int) (limit int, byRatio bool) {
	most := c.r.MaxFrameSize() - 1 - wire.ResponseOverhead
	k := c.opts.inflateRatio
	if frameLen > most/k { // k*frameLen > most, without overflowing
		return most, false
	}
	if limit = max(k*frameLen, room); limit >= most {
		return most, false
	}
	return limit, true
}

// deliverFlagged is the client's read loop's delivery (readFrames) for
// an answer whose body is compressed (r.Deflated: the body is inflated
// into the call's buffer, or the call fails) or that says the server
// takes compressed requests (r.TakesDeflate, noted for the client's
// later calls). frameLen is the length of the frame that carried it,
// header included. It reports false when the answer is still to be
// delivered as any other (its body is not compressed).
func (c *Client) deliverFlagged(r *wire.Response, frameLen int) bool {
	if r.TakesDeflate && c.opts.deflate && !c.zipReq.Load() {
		c.zipReq.Store(true)
	}
	if !r.Deflated {
		return false
	}
	s := c.claim(r.PromiseID)
	if s == nil {
		return true
	}
	if !c.opts.deflate {
		failDelivered(s, fmt.Errorf("%w: a compressed answer to a call that did not accept one", ErrProtocol))
		return true
	}
	var err error
	limit, byRatio := c.inflateLimit(frameLen, cap(s.resp)-len(s.resp))
	if s.resp, err = inflate(s.resp, r.Body, limit); err != nil {
		if _, past := err.(*pastLimit); past && byRatio {
			err = fmt.Errorf("%w: more than %d times the %d bytes of its frame (rpc.WithMaxInflateRatio) and than the room of the call's buffer",
				err, c.opts.inflateRatio, frameLen)
		}
		failDelivered(s, err)
		return true
	}
	s.status, s.notRun = r.Status, r.NotRun
	if len(r.Metadata) > 0 && s.rmd != nil {
		c.takeMetadata(s, r.Metadata)
	}
	s.ch <- struct{}{}
	return true
}

// waitZipped is wait for a unary call whose payload went compressed (in
// slot s, sent by send with target, req and resp). When the server
// refused it 400 with the not-run flag, as one without [WithCompression]
// does (errNoDeflate), the call had no effect: answerFailed stopped the
// client's compression of requests, and the call goes again, plain, once.
// The server that said it takes compressed requests need not be the one
// that got this call: a proxy may send a connection's calls to several.
func (c *Client) waitZipped(ctx context.Context, done <-chan struct{}, s *slot, method, target uint32, req, resp []byte) ([]byte, error) {
	out, err := c.wait(ctx, done, s, resp)
	if se, ok := err.(*StatusError); !ok || !se.refused || se.Code != StatusBadRequest {
		return out, err
	}
	if s, err = c.send(ctx, done, done, method, target, req, resp, true); err != nil {
		return resp, err
	}
	return c.wait(ctx, done, s, resp)
}

// failDelivered fails the call of s, claimed for its answer, with err
// (out of line: only a failing call moves err to the heap).
//
//go:noinline
func failDelivered(s *slot, err error) {
	s.err = &err
	s.ch <- struct{}{}
}

// writeDeflated writes the answer of a call whose request takes a
// compressed one: compressed, or plain with the flag that tells the
// client that this server takes compressed requests (the connection's
// first such answer, zipTold), and reports true; false (nothing written)
// when it is to be written as any other: not compressed (not OK, below
// the threshold, or not shorter compressed) and the client told already.
// Every compressed answer carries that flag too.
func (c *serverConn) writeDeflated(status, pid uint32, body, md []byte, inReader bool) bool {
	if c.closed.Load() {
		return false
	}
	tell := !c.zipTold.Load() && c.zipTold.CompareAndSwap(false, true)
	if tell && !c.answerFits(len(body)+wire.DeflatedOverhead+respMDExtra(md)) {
		// The flags word would take the answer past the largest frame:
		// a later answer tells.
		c.zipTold.Store(false)
		tell = false
	}
	if status != StatusOK || len(body) < c.s.opts.deflateMin {
		if tell {
			c.writeFlagged(false, status, pid, body, md, inReader)
		}
		return tell
	}
	d := getDeflater()
	defer putDeflater(d)
	switch {
	case d.deflate(body) && len(body)/DefaultMaxInflateRatio <= len(d.out):
		// Sent compressed only when it inflates at most
		// DefaultMaxInflateRatio times its bytes, which every zapcodec
		// client takes (WithMaxInflateRatio): a body that compresses
		// more (long runs of one byte) goes plain.
		c.writeFlagged(true, status, pid, d.out, md, inReader)
	case tell:
		c.writeFlagged(false, status, pid, body, md, inReader)
	default:
		return false
	}
	return true
}

// writeFlagged writes an answer with the flags word: its body compressed
// (deflated: wire.AppendDeflatedHeader) or not
// (wire.AppendTakesDeflateHeader).
func (c *serverConn) writeFlagged(deflated bool, status, pid uint32, body, md []byte, inReader bool) {

	var lead bool
	var err error
	if len(md) == 0 && len(body) >= frame.DefaultWritevThreshold {
		// Not copied into the queue: written with its header (see
		// writeAnswer), before the caller gives the body back.
		var hb [wire.ResponseOverhead + wire.DeflatedOverhead]byte
		head := appendFlagged(hb[:0], deflated, status, pid, len(body), 0)
		err = c.out.lock().WriteFrameParts(wire.KindResponse, head, body)
		lead = c.out.unlock()
	} else {
		buf := c.out.begin(wire.KindResponse)
		buf = appendFlagged(buf, deflated, status, pid, len(body), len(md))
		buf = append(append(buf, body...), md...)
		lead, err = c.out.end(buf)
	}
	c.finishWrite(lead, err, status, inReader)
}

// appendFlagged appends the header of writeFlagged's answer.
func appendFlagged(dst []byte, deflated bool, status, pid uint32, bodyLen, mdLen int) []byte {
	if deflated {
		return wire.AppendDeflatedHeader(dst, status, pid, bodyLen, mdLen)
	}
	return wire.AppendTakesDeflateHeader(dst, status, pid, bodyLen, mdLen)
}

// deflateRequest compresses the payload of r, a request to a server that
// takes compressed requests, when that makes it shorter: r.Payload is
// then the compressed bytes, held by the returned output, which the
// caller gives back (putDeflater) once the request is queued.
func deflateRequest(r *wire.Request) *deflater {
	d := getDeflater()
	if d.deflate(r.Payload) {
		r.Payload, r.PayloadDeflated = d.out, true
	}
	return d
}

// inflateRequest inflates the compressed payload of r into j.req, and
// points r.Payload at it; when that fails (or this server does not take
// compressed requests: it never said it does; that answer alone carries
// the not-run flag), it answers the call 400 from the read loop, keeps j
// for the next call, and returns reqNext.
// The bytes the payload grows by are the server's, not the peer's: they
// take the call's answer budget as the buffer grows, before they are
// allocated (inflateBudget), until its answer has left; it returns
// reqClosed when the connection closed during a wait for that budget;
// -1 when the call is to run.
func (c *serverConn) inflateRequest(j *job, r *wire.Request) int {
	var err error
	refused := c.s.opts.deflateMin == 0
	if refused {
		err = errNoDeflate
	} else {
		// Bounded as a plain payload is, by the largest frame's, and
		// grown by at most the connection's answer budget: past it, the
		// bytes would be held beyond what the budgets count.
		b := inflateBudget{c: c, sent: len(r.Payload), most: int64(c.s.opts.connAnswerBudget)}
		limit := min(c.r.MaxFrameSize()-1-wire.RequestOverhead, b.sent+c.s.opts.connAnswerBudget)
		for {
			j.req, err = inflateCharged(j.req[:0], r.Payload, limit, b.grow)
			if err != errInflateBudget {
				break
			}
			// Short: what the request took goes back, with its buffer,
			// and the read loop waits, holding nothing, for twice what
			// it reached (two read loops that each waited holding part
			// of a budget could wait for each other for ever), then
			// inflates it again.
			want := min(2*b.reached, b.most)
			b.release()
			if cap(j.req) > maxKeptBuffer {
				j.req = nil
			}
			if !c.waitBudget(want) {
				c.spare = j
				return reqClosed
			}
			b.held = want
		}
		if err == nil {
			j.reserved = uint32(b.held)
			r.Payload = j.req
			// j.req may have grown past maxKeptBuffer, and j.reserved
			// goes back when the answer leaves (finishAny).
			j.undo = true
			return -1
		}
		b.release()
	}
	if cap(j.req) > maxKeptBuffer {
		j.req = nil
	}
	c.spare = j
	c.promiseFailed(r.PromiseID)
	// The not-run flag on the refusal of a server without the option
	// (and on it alone) tells a zapcodec client to send the call again
	// plain (Client.waitZipped): behind a proxy, the server that said it
	// takes compressed requests may be another than this one.
	c.answerDirect(r, StatusBadRequest, err.Error(), refused)
	return reqNext
}

// errNoDeflate is the error (400, with the not-run flag) of a compressed
// request to a server without [WithCompression].
var errNoDeflate = errors.New("rpc: compressed payload, which this server does not take (rpc.WithCompression)")

// inflateBudget is the answer budget ([WithAnswerBudget]) a compressed
// request takes on its connection and server as it is inflated: what
// its buffer grows to beyond the sent bytes, at most the connection's
// budget. Without it a peer that pipelined small requests which each
// inflate to a frame had the server hold the in-flight limit times the
// largest frame (256 times 16 MiB) for a few KiB sent, and so did
// peers that each sent one on connections of their own.
type inflateBudget struct {
	c       *serverConn
	sent    int   // the compressed payload's length
	most    int64 // the connection's budget: no request takes more
	held    int64 // taken from both budgets
	reached int64 // what the last refused growth wanted
}

// grow takes from the budgets, without waiting, what an output of n
// bytes holds beyond the bytes sent and b holds already; false when
// either is short (or calls wait for it).
func (b *inflateBudget) grow(n int) bool {
	need := min(int64(n-b.sent), b.most)
	if need <= b.held {
		return true
	}
	more := need - b.held
	cb, sb := b.c.answerBudget(), &b.c.s.ansBudget
	if !cb.take(more) {
		b.reached = need
		return false
	}
	if !sb.take(more) {
		cb.release(more)
		b.reached = need
		return false
	}
	b.held = need
	return true
}

// release gives back what b holds.
func (b *inflateBudget) release() {
	if b.held > 0 {
		b.c.answerBudget().release(b.held)
		b.c.s.ansBudget.release(b.held)
		b.held = 0
	}
}

// waitBudget takes n bytes of the connection's and the server's answer
// budgets for a request, on the read loop, waiting while they are
// short (the answers the read loop owes go out first, and the
// connection counts as busy meanwhile, as in answerRoom). It reports
// false when the connection closed first.
func (c *serverConn) waitBudget(n int64) bool {
	if err := c.flushOwed(); err != nil {
		c.close(fmt.Errorf("write: %w", err))
		return false
	}
	c.hold()
	s := c.s
	cb := c.answerBudget()
	if cb.acquire(c.ctx, n, false, &s.ansWaits) != nil {
		return false
	}
	if s.ansBudget.acquire(c.ctx, n, false, &s.ansWaits) != nil {
		cb.release(n)
		return false
	}
	return true
}
