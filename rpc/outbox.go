package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	// maxFlushYields bounds the yields of a flusher waiting for more frames.
	maxFlushYields = 4
	// outboxLimit bounds the bytes queued on one connection: an appender
	// that finds this much queued waits (for room, for its ctx, or for the
	// write timeout to break the connection) before adding its frame. One
	// frame is always admitted to an empty queue, so the queue holds at most
	// outboxLimit plus one frame. 4 MiB: 256 callers with 4 KiB requests (or
	// a server's 256 in-flight 4 KiB answers, twice over) fit without
	// waiting for room on a healthy connection, while a peer that stops
	// reading pins a bounded amount.
	outboxLimit = 4 << 20
	// outboxKeep: a queue buffer grown above this (by one huge frame) is
	// dropped after its write instead of being kept for the next batch.
	outboxKeep = outboxLimit
	// cancelPoll is how often a writer whose ctx can be canceled but has no
	// deadline looks at it while its write is blocked.
	cancelPoll = 20 * time.Millisecond
	// outboxMinBuf is the least capacity of a queue buffer, so that a busy
	// connection does not grow its buffers from nothing.
	outboxMinBuf = 32 << 10
	// frameHeader is the transport frame header: u32 length, kind.
	frameHeader = 5
)

// outBufs holds the queue buffers of every outbox: a connection takes one
// when it queues a frame and gives it back once its frames are written, so
// an idle connection holds no write buffer. (A sync.Pool of its own, not
// package pool: these buffers all start at one size, so size classes have
// nothing to sort.)
var outBufs = sync.Pool{New: func() any { return &outBuf{B: make([]byte, 0, outboxMinBuf)} }}

// outBuf is a queue buffer.
type outBuf struct{ B []byte }

// Buffered returns the bytes in b; 0 for nil (no queue buffer).
func (b *outBuf) Buffered() int {
	if b == nil {
		return 0
	}
	return len(b.B)
}

// errHandOff: the writer's ctx ended (or its deadline passed) during its
// write; another goroutine took the rest of the write over.
var errHandOff = errors.New("rpc: write handed off")

// noCtx is the ctx of the outbox's writes that no caller's ctx bounds
// (answers, pings, hand-overs): never done, so they wait for room and
// write until the write timeout decides.
var noCtx = context.Background()

// handOffs counts the writes handed over (for tests).
var handOffs atomic.Int64

// writers counts the outboxes' writer goroutines running (for tests; see
// handToWriter); writersEnded counts the client writers endIdleWriter
// ended.
var writers, writersEnded atomic.Int64

// writerIdle is how long a client's writer goroutine waits for a
// hand-over before the beat ends it (endIdleWriter): an idle connection
// does not keep a goroutine stack for it.
const writerIdle = time.Second

// errWriteTimeout breaks a connection whose peer took no byte for the
// write timeout; it matches os.ErrDeadlineExceeded (timeoutError), and so
// do the errors that wrap it.
var errWriteTimeout error = &timeoutError{"rpc: write timeout: the peer does not read"}

// errWriteTooSlow breaks a connection whose peer took so few bytes of a
// write that its bound in all passed (see writeBound).
var errWriteTooSlow = fmt.Errorf("%w (in all: it takes the bytes slower than %d bytes/s)", errWriteTimeout, minWriteRate)

// minWriteRate is the least rate, in bytes per second, at which a write
// earns more time beyond the write timeout (see writeBound): the rate at
// which a server's read earns it by default (DefaultMinReadRate,
// 16 KiB/s).
const minWriteRate = DefaultMinReadRate

// writeBound is the time a write of n bytes has in all, on either side,
// however its bytes are taken: the write timeout plus a second per
// minWriteRate bytes. So a peer that takes a byte now and then, each
// within the write timeout, cannot hold a write (and everything queued
// behind it) for ever. Only for a write timeout > 0.
func (o *outbox) writeBound(n int) time.Duration {
	return min(o.timeout+time.Duration(n)*(time.Second/minWriteRate), maxLimit)
}

// writeLimit returns the time by which a write of n bytes (the rest of
// it, from now on) must end: writeBound(n) from now. limit is the one the
// write has already (kept), zero none; the zero time without a write
// timeout. A write under socket deadlines (outbox.write) sets it at its
// first clock reading, which the fast path (a write that completes at
// once under a deadline kept from an earlier one) never makes: at its
// start when it arms a deadline then, else when a deadline cut it (a
// write timeout at most after its start) or the beat interrupted it (a
// write timeout or more after its start, see watchWrite). A write the
// watchdog's scans watch counts it from its start (see writeWatched).
func (o *outbox) writeLimit(limit, now time.Time, n int) time.Time {
	if !limit.IsZero() || o.timeout <= 0 {
		return limit
	}
	return now.Add(o.writeBound(n))
}

// outbox is the write side of a connection, shared by every goroutine that
// sends on it (callers on a client, workers and the read loop on a
// server).
//
// Appending never waits for the network: frames are appended to a queue
// under mu, and no goroutine ever writes to the socket while holding mu.
// The writer role (writing) is held by one goroutine at a time; it takes
// the whole queue, writes it outside mu, and goes on until it finds the
// queue empty (group commit: frames appended during a write leave together
// in the next one). The goroutine that appends the first frame while
// nobody writes is told to flush (claim); it then takes the writer role.
//
// Bounds:
//   - queued bytes: an appender waits while outboxLimit bytes are queued
//     (backpressure), giving up when its ctx ends;
//   - a writer whose ctx ends while its write is blocked hands the rest of
//     the write to a new goroutine and returns at once (the stream cannot
//     be cut mid-frame, and frames of other calls share the write);
//   - a write that makes no progress for the write timeout breaks the
//     stream: the connection is closed, waiting appenders wake with the
//     error, the read loop sees the close.
//
// Invariant (whenever mu is free): frames are queued only while a
// goroutine is writing or has been told to flush (claimed), or while the
// stream is broken.
type outbox struct {
	nc      net.Conn
	timeout time.Duration // a write without progress for this long breaks the stream; 0 none
	max     int           // largest frame length (kind byte included)
	// Server connections only (nil on a client): the connection's
	// serverConn.wdListed. While it is set, a write without a ctx sets no
	// deadline for the write timeout: the watchdog's scans bound it
	// (writeWatched, writewatch.go). wsince: when that write began or
	// last made progress (monoNow), 0 when none is under way.
	wlisted *atomic.Bool
	wsince  atomic.Int64
	// watchOff, when not nil (a server connection's), is called by the
	// writer role before the first write that the watchdog's scans do
	// not watch (one that began off their list): it sets ww and makes
	// the connection a member of the beat, which closes the connection
	// when a past deadline did not end such a write (see
	// serverConn.beat).
	watchOff func()
	// offList counts the writes of a server connection that began off the
	// watchdog's list, under a write deadline of their own (tests).
	offList atomic.Int64
	// sent, when not nil (a server connection's: its server's
	// Stats.BytesOut), counts the bytes written to nc, frames of every
	// kind.
	sent *atomic.Uint64
	// resumable: a write that failed on a deadline can go on where it
	// stopped (TCP, Unix; see resumableConn). Not over TLS: crypto/tls
	// fails every write after a timed-out one.
	resumable bool
	// socket: nc is a *net.TCPConn or *net.UnixConn, to which
	// net.Buffers writes with one writev and the kernel's count (see
	// writeOnce).
	socket bool
	// soleDL: nothing but the outbox sets nc's write deadline (a
	// client's): a write that fails on a deadline that is not the
	// outbox's is failing for good (see write).
	soleDL bool
	// Beside resumable, in what would be padding (the outbox is part of
	// every connection's struct): under mu.
	claimed  bool // a goroutine was told to flush and has not started
	flushing bool // a goroutine holds the writer role
	wdlCtx   bool // writer role: wdl came from a caller's ctx, not the write timeout
	// wrIdle: no hand-over to the writer goroutine since the beat's last
	// look (endIdleWriter sets it, handToWriter clears it).
	wrIdle bool
	// keepWriter (a client's; set before the first write): the writer
	// goroutine waits between hand-overs until the beat finds it idle;
	// without it (a server's) each hand-over has a goroutine that ends
	// once it has written the queue out (see handToWriter).
	keepWriter bool

	mu    sync.Mutex
	cur   *outBuf // the queue: whole frames, then possibly a begun one; nil when empty
	spare *outBuf // an empty buffer for the next queue, or nil
	// begun is the offset in cur.B of the header begin wrote, -1 when
	// none: the bytes queued before it, under outboxLimit. It and bigWait
	// are 32-bit so that the outbox holds the writer's pointer (wr) in
	// the size it had without it.
	begun   int32
	bigWait int32         // goroutines waiting for the writer role (WriteFrameParts)
	taken   uint64        // times the writer took the queue to write it
	err     error         // sticky: the stream broke
	wake    chan struct{} // closed when room frees, the role is given up or the stream breaks

	// ww, when not nil, is the watch of this outbox's writes by the beat
	// (a client's; see watchWrite): a write that no ctx bounds runs
	// without a deadline on nc. Set before the first write.
	ww *writeWatch
	// onBreak, when not nil, is told the error that broke the stream, by
	// the writer that met it (see broke), in place of broke's Close of
	// nc: a client's fails the client, which closes nc. Called with mu
	// held: it must not block, nor take mu. Set before the first write.
	onBreak func(error)

	// Writer-role state.
	wdl    time.Time // the write deadline set on nc (wdlCtx above)
	vecArr [2][]byte
	vec    net.Buffers

	// wr hands the writer role to the writer goroutine (see
	// handToWriter): one kick per hand-over, closed to end the goroutine
	// (the stream broke, or the beat found it idle). nil while none runs;
	// under mu.
	wr chan struct{}
}

// writeWatch is the state of the beat's watch of an outbox's writes (see
// outbox.watchWrite). Its own allocation, so that a server's connection
// carries it only once it wrote off the watchdog's list (joinBeat).
type writeWatch struct {
	seq uint64 // published writes begun (see write); the writer role's
	// state is seq<<2 | writeBusy while a published write is under way (0
	// when none), with writeKicked added by the beat that interrupted
	// it; kickMu orders the beat's deadline change before the writer's.
	state  atomic.Uint64
	kickMu sync.Mutex
	// The beat's: the state it saw last and since when (monoNow), and the
	// one it last interrupted.
	seen    uint64
	seenAt  int64
	kicking uint64
}

// The flags of writeWatch.state.
const (
	writeBusy   = 1
	writeKicked = 2
)

// kickDeadline is the past write deadline the beat sets on nc to
// interrupt a watched write.
var kickDeadline = time.Unix(1, 0)

// setup prepares the outbox of nc with the given write timeout (0: none)
// and maximum frame length.
func (o *outbox) setup(nc net.Conn, timeout time.Duration, maxFrame int) {
	o.nc, o.timeout, o.max, o.begun = nc, timeout, maxFrame, -1
	o.resumable = resumableConn(nc)
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		o.socket = true
	}
	if o.max <= 0 {
		o.max = frame.DefaultMaxFrameSize
	}
}

// queued returns the bytes of whole frames queued. Called with mu held.
func (o *outbox) queued() int {
	if o.cur == nil {
		return 0
	}
	if o.begun >= 0 {
		return int(o.begun)
	}
	return len(o.cur.B)
}

// waitChan returns the channel the next wake-up closes. Called with mu
// held; allocates only when somebody has to wait.
func (o *outbox) waitChan() chan struct{} {
	if o.wake == nil {
		o.wake = make(chan struct{})
	}
	return o.wake
}

// wakeAll wakes the goroutines waiting on the outbox. Called with mu held.
func (o *outbox) wakeAll() {
	if o.wake != nil {
		close(o.wake)
		o.wake = nil
	}
}

// begin locks the outbox and starts a frame; the caller appends the
// payload to the result and must call end or abandon. While the queue is
// full, begin waits for room (bounded by the write timeout, which breaks a
// connection whose peer stops reading). The result belongs to the outbox:
// it is valid only until end or abandon.
func (o *outbox) begin(kind byte) []byte {
	o.room(noCtx)
	return o.start(kind)
}

// beginCtx is begin that gives up when ctx ends while it waits for room:
// then it returns ctx's error, the outbox unlocked and nothing queued.
func (o *outbox) beginCtx(ctx context.Context, kind byte) ([]byte, error) {
	if err := o.room(ctx); err != nil {
		return nil, err
	}
	return o.start(kind), nil
}

// room returns with mu held once a frame may be queued: less than
// outboxLimit is queued (a frame of any size is then admitted, so a large
// frame is not starved by a steady flow of small ones), or the stream is
// broken (end then reports the error). When the queue is full and nobody
// writes (its flusher may be deferring its flush), the caller writes it
// out itself. With ctx, it gives up when ctx ends and returns ctx's error
// without mu.
func (o *outbox) room(ctx context.Context) error {
	for {
		o.mu.Lock()
		if o.err != nil || o.queued() < outboxLimit {
			return nil
		}
		if !o.flushing {
			o.flushing, o.claimed = true, false
			o.mu.Unlock()
			if ctx.Done() != nil && !o.resumable {
				o.handToWriter() // see flushCtx
				continue
			}
			if err := o.drain(ctx, nil, 0); err == errHandOff {
				return handedOver(ctx)
			}
			continue
		}
		ch := o.waitChan()
		o.mu.Unlock()
		if ctx.Done() == nil {
			<-ch
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// start appends a frame header to the queue. Called with mu held.
func (o *outbox) start(kind byte) []byte {
	if o.cur == nil {
		o.cur = o.take()
	}
	o.begun = int32(len(o.cur.B))
	o.cur.B = append(o.cur.B, 0, 0, 0, 0, kind)
	return o.cur.B
}

// take returns an empty queue buffer. Called with mu held.
func (o *outbox) take() *outBuf {
	if b := o.spare; b != nil {
		o.spare = nil
		return b
	}
	return outBufs.Get().(*outBuf)
}

// endFlush ends buf (see end) and, when that made the caller the writer,
// flushes the queue (no ctx: the write timeout bounds it). It returns the
// first error of the two.
func (o *outbox) endFlush(buf []byte) error {
	lead, err := o.end(buf)
	return o.flushIf(lead, err)
}

// flushIf flushes the queue when lead (the caller took the writer role)
// and returns err, or the flush's error when err is nil.
func (o *outbox) flushIf(lead bool, err error) error {
	return o.flushIfCtx(noCtx, lead, err)
}

// flushIfCtx is flushIf bounded by ctx (see flushCtx): when ctx ends
// while the write is blocked, the rest of it goes on in another goroutine
// and the flush's error is ctx's.
func (o *outbox) flushIfCtx(ctx context.Context, lead bool, err error) error {
	if lead {
		if ferr := o.flushCtx(ctx, false); err == nil {
			err = ferr
		}
	}
	return err
}

// end finishes the frame begin started and unlocks. lead reports that the
// caller must now call flush. err is the frame's error (ErrFrameTooLarge:
// nothing was added) or the stream's.
func (o *outbox) end(buf []byte) (lead bool, err error) {
	start := int(o.begun)
	o.begun = -1
	switch n := len(buf) - start - frameHeader + 1; {
	case o.err != nil:
		o.cur.B = buf[:start]
		err = o.err
		o.release() // start took a buffer: a broken stream keeps none (see halt)
	case n > o.max:
		o.cur.B = buf[:start]
		err = fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, o.max)
	default:
		binary.LittleEndian.PutUint32(buf[start:], uint32(n))
		o.cur.B = buf
	}
	lead = o.claim()
	o.mu.Unlock()
	return lead, err
}

// queueRequest queues the frame of request r in one step, when that
// needs no wait: ok false (nothing queued, mu free) when the queue is
// full, the stream broken, stop set, or the frame too large; the caller
// then takes the general way (beginCtx, end), which waits or reports
// the error. lead is end's.
func (o *outbox) queueRequest(r *wire.Request, stop *atomic.Bool) (lead, ok bool) {
	o.mu.Lock()
	return o.queueRequestLocked(r, stop)
}

// queueRequestLocked is queueRequest called with mu held (the client's
// send took it to pop its slot); it unlocks it.
func (o *outbox) queueRequestLocked(r *wire.Request, stop *atomic.Bool) (lead, ok bool) {
	if len(r.Cap) == 0 && len(r.Metadata) == 0 && r.Timeout == 0 && !r.AcceptDeflate && !r.PayloadDeflated {
		// Nearly every call's: AppendRequest's bytes, without its look
		// at those fields.
		return o.queuePlain(r.Method, r.PromiseID, r.Target, r.Payload, stop)
	}
	n := 1 + wire.RequestLen(r) // the frame's length: kind byte and envelope
	if n > o.max {
		o.mu.Unlock()
		return false, false
	}
	// No frame is begun while mu is free: the queue is cur's bytes
	// (queued's other case does not arise).
	if o.err != nil || stop.Load() || o.cur != nil && len(o.cur.B) >= outboxLimit {
		o.mu.Unlock()
		return false, false
	}
	if o.cur == nil {
		o.cur = o.take()
	}
	b := append(binary.LittleEndian.AppendUint32(o.cur.B, uint32(n)), wire.KindRequest)
	o.cur.B = wire.AppendRequest(b, r)
	// claim, without its checks that pass here: o.err was nil under
	// this hold of mu, and the queue has the frame just added.
	if !o.flushing && !o.claimed {
		o.claimed = true
		lead = true
	}
	o.mu.Unlock()
	return lead, true
}

// queuePlain is queueRequest for a request with nothing but its method,
// promise id, target and payload (the canonical envelope,
// wire.AppendPlainRequest's), given as they are: Call's plain call has no
// wire.Request to read them from. It is called with mu held (the caller
// took it: values live across a lock that may block must be kept on the
// stack, and the caller's are already) and unlocks it.
func (o *outbox) queuePlain(method, pid, target uint32, payload []byte, stop *atomic.Bool) (lead, ok bool) {
	n := 1 + wire.RequestOverhead + len(payload) // the frame's length: kind byte and envelope
	// See queueRequest.
	if n > o.max || o.err != nil || stop.Load() || o.cur != nil && len(o.cur.B) >= outboxLimit {
		o.mu.Unlock()
		return false, false
	}
	if o.cur == nil {
		o.cur = o.take()
	}
	// AppendPlainRequest's bytes after one growth for the whole frame:
	// head and envelope through one fixed array, then the payload.
	b, start := o.cur.B, len(o.cur.B)
	if cap(b)-start < 4+n {
		b = slices.Grow(b, 4+n)
	}
	b = b[:start+4+n]
	h := (*[frameHeader + wire.RequestOverhead]byte)(b[start:]) // one bounds check
	binary.LittleEndian.PutUint32(h[:], uint32(n))
	h[4] = wire.KindRequest
	wire.PutPlainRequestHeader((*[wire.RequestOverhead]byte)(h[frameHeader:]), method, pid, target, len(payload))
	copy(b[start+len(h):], payload)
	o.cur.B = b
	if !o.flushing && !o.claimed {
		o.claimed = true
		lead = true
	}
	o.mu.Unlock()
	return lead, true
}

// queueDeadline is queuePlain for a request that also carries a timeout
// (not 0: the time left until its deadline, wire.PutDeadlineRequestHeader's
// envelope), and no target: Call's call with a deadline. Called with mu
// held; it unlocks it.
func (o *outbox) queueDeadline(method, pid uint32, timeout uint64, payload []byte, stop *atomic.Bool) (lead, ok bool) {
	n := 1 + wire.DeadlineRequestOverhead + len(payload) // the frame's length: kind byte and envelope
	// See queueRequest.
	if n > o.max || o.err != nil || stop.Load() || o.cur != nil && len(o.cur.B) >= outboxLimit {
		o.mu.Unlock()
		return false, false
	}
	if o.cur == nil {
		o.cur = o.take()
	}
	b, start := o.cur.B, len(o.cur.B) // see queuePlain
	if cap(b)-start < 4+n {
		b = slices.Grow(b, 4+n)
	}
	b = b[:start+4+n]
	h := (*[frameHeader + wire.DeadlineRequestOverhead]byte)(b[start:]) // one bounds check
	binary.LittleEndian.PutUint32(h[:], uint32(n))
	h[4] = wire.KindRequest
	wire.PutDeadlineRequestHeader((*[wire.DeadlineRequestOverhead]byte)(h[frameHeader:]), method, pid, 0, timeout, len(payload))
	copy(b[start+len(h):], payload)
	o.cur.B = b
	if !o.flushing && !o.claimed {
		o.claimed = true
		lead = true
	}
	o.mu.Unlock()
	return lead, true
}

// abandon drops the frame begin started and unlocks.
func (o *outbox) abandon(buf []byte) {
	o.cur.B = buf[:o.begun]
	o.begun = -1
	if o.err != nil {
		o.release() // see end
	}
	o.mu.Unlock()
}

// lock and unlock bracket the direct writes of outboxFrames (a go-away
// frame, an answer with a large body); unlock reports whether the caller
// must flush.
func (o *outbox) lock() *outboxFrames {
	o.mu.Lock()
	return (*outboxFrames)(o)
}

func (o *outbox) unlock() (lead bool) {
	lead = o.claim()
	o.mu.Unlock()
	return lead
}

// claim makes the caller the flusher when frames wait and nobody writes or
// was told to. Called with mu held.
func (o *outbox) claim() bool {
	if o.flushing || o.claimed || o.err != nil || o.queued() == 0 {
		return false
	}
	o.claimed = true
	return true
}

// flush is called by the goroutine end or unlock made the flusher (a
// goroutine that calls it otherwise does no harm). When others may be
// about to send (other calls are in progress), it first yields, again
// while a yield brought new frames (up to maxFlushYields times), so that
// goroutines already runnable append their frames to the same write. Then
// it writes the queue until it is empty, unless another goroutine is
// writing (that one writes these frames too). It returns the error of its
// own write, or the stream's when it broke before; a write that fails
// breaks the stream (see broke), whichever goroutine runs it: one that
// runs in another goroutine (another caller's, a handed-over one, see
// flushCtx) is not reported here, but to onBreak (a client's fails the
// client).
func (o *outbox) flush(others bool) error {
	return o.flushCtx(noCtx, others)
}

// flushCtx is flush for a caller with a ctx: when ctx ends while the write
// is blocked, the rest of the write goes on in a new goroutine and
// flushCtx returns ctx's error (the frames are not lost; the stream stays
// whole); the same when ctx's deadline passes first (see handedOver). On
// a connection whose writes cannot be cut (not resumable), a caller with
// a ctx that can end does not write at all: the outbox's writer
// goroutine writes the queue (handToWriter), and flushCtx returns nil.
func (o *outbox) flushCtx(ctx context.Context, others bool) error {
	if others {
		// Yield until a yield brings no new frame (at most a few times).
		n := -1
		for range maxFlushYields {
			runtime.Gosched()
			o.mu.Lock()
			b := o.queued()
			o.mu.Unlock()
			if b == n {
				break
			}
			n = b
		}
	}
	o.mu.Lock()
	if o.flushing {
		o.mu.Unlock()
		return nil
	}
	if o.err != nil {
		err := o.err
		o.mu.Unlock()
		return err
	}
	o.flushing, o.claimed = true, false
	o.mu.Unlock()
	if canEnd(ctx) && !o.resumable {
		// A blocked write could not be cut at ctx's end and resumed: let
		// the connection's writer goroutine write, and return now.
		o.handToWriter()
		return nil
	}
	err := o.drain(ctx, nil, 0)
	if err == errHandOff {
		return handedOver(ctx)
	}
	return err
}

// handToWriter gives the writer role, which the caller holds, to a
// writer goroutine, which writes the queue out (drain, without a ctx: the
// write timeout bounds it). It is how a caller whose ctx may end flushes
// a connection whose writes cannot be cut at that end and resumed (TLS,
// see flushCtx): the caller returns at once. Called without mu.
//
// A client's writer goroutine (keepWriter) is started at the first
// hand-over and waits for the next one, so a hand-over costs a wake-up
// and no allocation; it ends when the stream breaks, or when the beat
// finds that no hand-over came for writerIdle (endIdleWriter), and the
// next hand-over starts another (two allocations: the channel and the
// goroutine's). A server hands over only when its queue is full (room):
// each hand-over has a goroutine of its own, which ends once it has
// written the queue out.
func (o *outbox) handToWriter() {
	if !o.keepWriter {
		go o.writeAlone()
		return
	}
	o.mu.Lock()
	if o.err != nil {
		// The stream broke since the caller took the role: nothing is
		// written any more. The role ends here (see endWriter).
		o.flushing = false
		o.endWriter()
		o.wakeAll()
		o.mu.Unlock()
		return
	}
	if o.wr == nil {
		o.wr = make(chan struct{}, 1)
		go o.writer(o.wr)
	}
	o.wrIdle = false
	kick := o.wr
	o.mu.Unlock()
	// Never blocks: the role is one goroutine's at a time, and the
	// writer takes the kick before it drains, so no other is pending.
	// Nor is kick closed meanwhile: the caller holds the role (see
	// endWriter).
	kick <- struct{}{}
}

// endWriter ends a client's writer goroutine: it closes wr, which the
// goroutine takes for its end once it has taken every kick sent before.
// Called with mu held, by the holder of the writer role as it gives the
// role up after the stream broke, or while nobody holds the role (halt,
// endIdleWriter): a holder of the role may be between handToWriter's
// unlock and its kick, and a kick on a closed channel would panic.
func (o *outbox) endWriter() {
	if o.wr != nil {
		close(o.wr)
		o.wr = nil
	}
}

// writer is the loop of a client's writer goroutine (see handToWriter):
// each kick hands it the writer role. It returns once kick is closed (the
// stream broke, or endIdleWriter) and every kick sent before has been
// taken: a kick sent is always drained.
func (o *outbox) writer(kick <-chan struct{}) {
	writers.Add(1)
	defer writers.Add(-1)
	for range kick {
		o.drain(noCtx, nil, 0)
	}
}

// writeAlone is a server's writer goroutine (see handToWriter): it
// writes the queue out and ends.
func (o *outbox) writeAlone() {
	writers.Add(1)
	defer writers.Add(-1)
	o.drain(noCtx, nil, 0)
}

// endIdleWriter is the beat's look at a client's writer goroutine (see
// handToWriter), with since the beat's record of when it last found it
// in use: a goroutine that had no hand-over since the previous look, at
// least writerIdle ago, ends; the next hand-over starts another. Its
// stack is the memory an idle TLS connection would otherwise keep for
// it.
//
// It does not end the goroutine while the writer role is held (or
// claimed): a holder may be in handToWriter between its unlock and its
// kick, and must find the goroutine it read there still taking kicks. A
// holder that took the role after this ends it reads a nil wr under mu
// and starts a new one.
func (o *outbox) endIdleWriter(now int64, since *int64) {
	o.mu.Lock()
	switch {
	case o.wr == nil:
	case o.flushing || o.claimed || !o.wrIdle:
		// In use since the previous look, or now: idle from now at most.
		o.wrIdle, *since = true, now
	case now-*since >= int64(writerIdle):
		o.endWriter()
		o.wrIdle = false
		writersEnded.Add(1)
	}
	o.mu.Unlock()
}

// handedOver returns the error of a caller whose write was handed over
// (errHandOff): ctx's. The write is handed over at ctx's deadline, which
// may pass before ctx reports its end (ctx's own timer runs a few µs
// later, or a goroutine of a derived ctx closes its Done): the caller,
// no longer the writer, then waits for Done, so that its callers see
// ctx's error (and take the write for handed over), as they would at once
// in a select on Done.
func handedOver(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// drain is the writer role's loop, entered with the role held and mu
// free: it writes w.B[off:] first when w is not nil, then the queue, batch
// after batch, until the queue is empty (or a WriteFrameParts waits for the
// role: it takes the role and the queue over); then it gives the role up.
// It returns errHandOff when ctx ended (or its deadline passed) and a new
// goroutine carries on, or the stream's error.
func (o *outbox) drain(ctx context.Context, w *outBuf, off int) error {
	if w == nil {
		o.mu.Lock()
	}
	for {
		if w == nil { // mu held
			if o.err != nil {
				err := o.err
				o.flushing = false
				o.endWriter() // the role ends after the break: see halt
				o.release()   // the buffer just written kept as spare
				o.wakeAll()
				o.mu.Unlock()
				return err
			}
			if o.queued() == 0 || o.bigWait > 0 {
				o.flushing = false
				if o.queued() == 0 {
					o.release()
				}
				o.wakeAll()
				o.mu.Unlock()
				return nil
			}
			// No frame is begun while mu is free: the queue holds whole
			// frames only.
			w, off = o.cur, 0
			o.cur, o.spare = o.spare, nil
			o.taken++
			o.mu.Unlock()
		}
		n, err := o.write(ctx, w.B[off:], nil)
		if err == errHandOff {
			// The rest of w and the role go to a goroutine without ctx.
			handOffs.Add(1)
			go o.drain(noCtx, w, off+n)
			return err
		}
		o.mu.Lock()
		o.recycle(w)
		w = nil
		if err != nil {
			o.broke(err) // the loop's next turn gives the role up
		}
		o.wakeAll() // room freed
	}
}

// recycle gives w back after its write. Called with mu held.
func (o *outbox) recycle(w *outBuf) {
	w.B = w.B[:0]
	if cap(w.B) > outboxKeep {
		return // let a buffer a huge frame grew go
	}
	if o.spare == nil {
		o.spare = w
		return
	}
	outBufs.Put(w)
}

// release gives the outbox's buffers (the queue's and the spare) back to
// the pool: nothing is queued, or the stream broke (the buffer a writer
// has in hand is not among them). Called with mu held.
func (o *outbox) release() {
	if o.cur != nil {
		o.cur.B = o.cur.B[:0]
		if cap(o.cur.B) <= outboxKeep {
			outBufs.Put(o.cur)
		}
		o.cur = nil
	}
	if o.spare != nil {
		outBufs.Put(o.spare)
		o.spare = nil
	}
}

// takenSince reports whether the writer took the queue since taken was
// mark: the frames queued when it was have left it.
func (o *outbox) takenSince(mark uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.taken != mark
}

// failure returns the error that broke the stream, or nil.
func (o *outbox) failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// broke records the stream's first error and closes the connection, so
// that its read loop ends and every waiter learns of it. Called with mu
// held: the Close runs in a goroutine of its own, since it may block (a
// TLS connection whose write failed still sends its close-notify alert,
// with a 5 s deadline, to the peer that stopped reading), and neither the
// outbox's lock nor the writer that met the error may wait for it.
//
// With onBreak (a client's), broke tells it instead, and it closes the
// connection: the writer may be a goroutine no caller waits for (a
// handed-over write, or any write with a ctx on a connection that is not
// resumable, see flushCtx), and the client must fail its calls and
// report Closed now, not once its read loop has seen the Close end (over
// TLS, after that close-notify alert).
func (o *outbox) broke(err error) {
	if o.halt(err) {
		if o.onBreak != nil {
			o.onBreak(err)
			return
		}
		go o.nc.Close()
	}
}

// brokenBy returns the error that broke the stream (see broke), nil while
// it is whole.
func (o *outbox) brokenBy() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// shut breaks the stream from outside the writer role (the connection is
// being closed): the frames queued are dropped, the goroutines waiting for
// room return, and every later frame fails with err (or the error that
// broke the stream first). It does not close the connection: the caller
// does, after it, and a write under way ends with that Close.
func (o *outbox) shut(err error) {
	o.mu.Lock()
	o.halt(err)
	o.wakeAll()
	o.mu.Unlock()
}

// halt records err as the stream's error unless it has one (first
// reports that it had none) and drops the frames queued, which can never
// leave, with the queue buffers: a broken stream keeps none (a writer
// under way gives the one it writes back when it is done, see drain).
// A client's writer goroutine ends now when nobody holds the writer role,
// else when its holder gives the role up (see endWriter). Called with mu
// held, no frame begun.
func (o *outbox) halt(err error) (first bool) {
	first = o.err == nil
	if first {
		o.err = err
	}
	if !o.flushing {
		o.endWriter()
	}
	o.release()
	return first
}

// write writes p, then q (when q is not nil, together in one writev on
// a socket, see writeOnce), as
// the holder of the writer role. It returns the bytes of p written and
// nil, errHandOff when ctx ended (or its deadline passed) first (only
// when q is nil: the caller hands p's rest over), or the error that broke
// the stream.
//
// Deadlines: a write that takes no byte for the write timeout fails with
// errWriteTimeout. With a ctx, the socket's write deadline is also set to
// ctx's deadline (or, for a ctx without one, to cancelPoll ahead, to look
// at it again), so a blocked write returns when ctx ends. With a write
// timeout, the write also has a bound in all (writeLimit), set at its
// first clock reading and kept in the socket's deadline: past it the
// write fails with errWriteTooSlow, however many bytes it took.
//
// Without a ctx, on a watched outbox (a client's), the write sets no
// deadline at all (it takes one left by an earlier write off): the beat
// interrupts it once it has seen it under way for the write timeout (see
// watchWrite). Interrupted, a write that took no byte (or any write over
// TLS, which cannot go on) fails with errWriteTimeout, one that took some
// goes on under a socket deadline as below. So a healthy connection keeps
// no timer pending for its writes. A write with a ctx on a watched
// outbox is seen by the beat too, and interrupted so, though its own
// deadlines normally end it first: a net.Conn that ignores them is
// closed a write timeout after the beat's past deadline did nothing
// too (the caller, whose goroutine is the one in the Write, returns then,
// not at its ctx's end).
//
// On a client (soleDL), a write that fails on a deadline while none of
// the outbox's is due, taking nothing, fails with that error: nothing
// else sets one, so the connection fails every write so (crypto/tls after
// a torn record, inside a wrapper that resumableConn took for a socket).
//
// Without a ctx on an outbox not watched (a server's), the deadline set
// for the timeout by an earlier write is kept; when it expires during a
// later write, that write re-arms it and goes on, so a fast stream of
// writes neither reads the clock nor resets a timer, and a write that
// takes no byte is failed between one and two timeouts after it began.
func (o *outbox) write(ctx context.Context, p, q []byte) (int, error) {
	// cut: a server's write for a ctx that can end (a stream handler's
	// Send, see streamSet.flush) sets no deadline for that ctx. It runs
	// as a write without one, and the ctx's end interrupts it with a past
	// deadline (the stream's AfterFunc, see Stream.writing), after which
	// the rest is handed over (errHandOff). Only where a write cut by a
	// deadline can go on (resumable): elsewhere the server passes no ctx.
	var cut, noEnd bool
	if o.wlisted != nil {
		noEnd = !canEnd(ctx)
		cut = !noEnd && o.resumable
	}
	if o.wlisted != nil && o.timeout > 0 && (noEnd || cut) {
		// A server connection: see writeWatched. wsince is stored before
		// wdListed is read; the scan that takes the connection off the
		// list clears wdListed before it reads wsince: one of the two
		// sees the other.
		start := monoNow()
		o.wsince.Store(start)
		if o.wlisted.Load() {
			n, err := o.writeWatched(ctx, cut, start, p, q)
			o.wsince.Store(0)
			return n, err
		}
		o.wsince.Store(0)
		o.offList.Add(1)
	}
	if o.ww == nil && o.watchOff != nil && o.timeout > 0 {
		// A server's write that no scan watches: its socket deadline
		// bounds it, unless the net.Conn ignores deadlines (a wrapper
		// that drops them, one that holds a lock over Write): the beat
		// watches it too, and closes the connection a write timeout
		// after its own past deadline did nothing.
		o.watchOff()
	}
	var ctxDL time.Time
	var poll, cancelable bool
	if canEnd(ctx) && o.resumable && !cut {
		cancelable = true
		if d, ok := ctx.Deadline(); ok {
			ctxDL = d
		} else {
			poll = true
		}
	}
	if q != nil {
		cancelable = false // a writev of a caller's body is never handed off
		ctxDL, poll = time.Time{}, false
		o.vecArr = [2][]byte{p, q}
		o.vec = o.vecArr[:]
	}
	// The deadline on nc is armed lazily: a deadline set by an earlier
	// write for the write timeout alone is kept (no clock read, no timer
	// change on the fast path). fresh tells that the deadline was armed
	// during this write, so that its expiry means no progress since;
	// the expiry of an older one only starts the count.
	var now, progress time.Time // progress: when the last byte was taken, as far as we know
	// limit: the write's bound in all (writeLimit), set at its first
	// clock reading; zero while none is set.
	var limit time.Time
	fresh := false
	ww := o.ww
	// published: the beat sees the write under way (watchWrite). One
	// without a ctx that can end (watched) sets no deadline: the beat's
	// past one is its only bound. One with such a ctx runs under its own
	// deadlines and is published all the same: over a net.Conn that
	// ignores them (a wrapper that unwraps to a socket with NetConn, so
	// taken for resumable, but drops its write deadlines) it blocked for
	// ever, past its ctx's end and the write timeout; the beat now
	// closes the connection a write timeout after its kick did nothing.
	published := ww != nil && o.timeout > 0
	// A server's published write keeps its socket deadlines (the beat is
	// only its backstop); a client's without a ctx that can end sets
	// none.
	watched := published && !cancelable && o.wlisted == nil
	switch {
	case watched:
		if !o.wdl.IsZero() {
			// Left by a ctx's write or by an interrupted one.
			o.nc.SetWriteDeadline(time.Time{})
			o.wdl, o.wdlCtx = time.Time{}, false
		}
	case cancelable || !o.resumable || o.wdlCtx || o.wdl.IsZero() != (o.timeout <= 0):
		now = time.Now()
		progress = now
		limit = o.writeLimit(limit, now, len(p)+len(q))
		o.arm(now, progress, ctxDL, poll, limit)
		fresh = true
	}
	written := 0
	for {
		if cut && ctx.Err() != nil {
			// After any deadline this write set: a past one the ctx's end
			// set later lands on the write.
			return written, errHandOff
		}
		var w uint64
		if published {
			ww.seq++
			w = ww.seq<<2 | writeBusy
			ww.state.Store(w)
		}
		n, err := o.writeOnce(p, q, written)
		written += n
		if published && !ww.state.CompareAndSwap(w, 0) {
			// The beat saw this write under way for the write timeout
			// and set a past deadline on nc: wait until it is set, so
			// that ours come after it.
			ww.kickMu.Lock()
			ww.state.Store(0)
			ww.kickMu.Unlock()
			o.wdl, o.wdlCtx = kickDeadline, false
			watched, published = false, false // what follows runs under socket deadlines
			switch {
			case err == nil:
				// Done just as the beat came.
				o.nc.SetWriteDeadline(time.Time{})
				o.wdl = time.Time{}
			case !errors.Is(err, os.ErrDeadlineExceeded):
			case n == 0 || !o.resumable:
				// No byte taken since the write began, a write
				// timeout ago or more (or TLS, which cannot go on).
				o.vecArr, o.vec = [2][]byte{}, nil
				return min(written, len(p)), errWriteTimeout
			default:
				// Bytes were taken: from now, the write timeout is
				// counted by a deadline on nc, and the write has its
				// bound in all.
				now = time.Now()
				progress = now
				limit = o.writeLimit(limit, now, len(p)+len(q)-written)
				o.arm(now, progress, ctxDL, poll, limit)
				fresh = true
				continue
			}
		}
		if err == nil {
			o.vecArr, o.vec = [2][]byte{}, nil
			return written, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), err
		}
		if cut && ctx.Err() != nil {
			return written, errHandOff // the past deadline of ctx's end
		}
		now = time.Now()
		if o.wdl.IsZero() || o.wdl.After(now) {
			// Not ours: none is set, or ours is still ahead.
			if o.soleDL && n == 0 {
				// A client's: nothing else sets a deadline on nc (the
				// beat's past one lands before the writer's next one,
				// see watchWrite). A connection that fails a write on a
				// deadline nobody set, taking nothing, fails every
				// write so: crypto/tls inside a wrapper resumableConn
				// was told to see through, after a write a deadline
				// cut. Tried again, it would fail at once, again and
				// again, until the write timeout.
				o.vecArr, o.vec = [2][]byte{}, nil
				return min(written, len(p)), err
			}
			// A past deadline set by someone else (a scan's pokeWrite
			// that landed after the write it was meant for). Ours is
			// set again below, not kept as if in force: else every
			// Write would fail at once until ours looked due for a
			// refresh.
			o.wdl = time.Time{}
		}
		if n > 0 || !fresh {
			progress = now
		}
		if limit = o.writeLimit(limit, now, len(p)+len(q)-written); !limit.IsZero() && !now.Before(limit) {
			// Bytes may have been taken, but too few in all: a peer
			// that takes one now and then must not hold the write
			// (and every call behind it) for ever.
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), errWriteTooSlow
		}
		if cancelable && (ctx.Err() != nil || !ctxDL.IsZero() && !now.Before(ctxDL)) {
			// ctx ended, or its deadline, set on nc, passed before ctx
			// reported its end (its own timer runs a little later, or
			// a ctx's Done may be closed by a goroutine of its own):
			// kept, the past deadline would fail every Write at once
			// until ctx's Err turned; set again, it is the same.
			return written, errHandOff
		}
		if o.timeout > 0 && fresh && (now.Sub(progress) >= o.timeout || !o.resumable) {
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), errWriteTimeout
		}
		if o.timeout <= 0 && !cancelable {
			// A deadline someone else set on nc (not ours): give up.
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), err
		}
		o.arm(now, progress, ctxDL, poll, limit)
		fresh = true
	}
}

// arm sets the socket's write deadline for a write at now whose last
// progress was at progress, and which must end by limit (writeLimit;
// zero: no such bound). Held by the writer role.
func (o *outbox) arm(now, progress, ctxDL time.Time, poll bool, limit time.Time) {
	var want time.Time
	if o.timeout > 0 {
		want = progress.Add(o.timeout)
	}
	exact := false
	if !ctxDL.IsZero() && (want.IsZero() || ctxDL.Before(want)) {
		want, exact = ctxDL, true
	}
	if !limit.IsZero() && (want.IsZero() || limit.Before(want)) {
		// Set exactly, and marked as not the write timeout's (wdlCtx):
		// the next write sets its own.
		want, exact = limit, true
	}
	if poll {
		if p := now.Add(cancelPoll); want.IsZero() || p.Before(want) {
			want, exact = p, true
		}
	}
	switch {
	case exact && poll && ctxDL.IsZero() && o.wdlCtx && o.wdl.After(now) && !o.wdl.After(want):
		// A poll deadline set by an earlier write is still ahead and no
		// later than this one would be: it serves (when it fires early,
		// the write loop re-arms). A stream of writes with a cancelable
		// ctx then resets no timer per write.
		return
	case exact:
		if want.Equal(o.wdl) {
			return
		}
	case want.IsZero():
		if o.wdl.IsZero() {
			return
		}
	default:
		// Only the write timeout: refresh lazily.
		if !o.wdl.IsZero() && !o.wdl.After(want) && o.wdl.After(now.Add(o.timeout*3/4)) {
			return
		}
	}
	o.nc.SetWriteDeadline(want)
	o.wdl, o.wdlCtx = want, exact
}

// watchWrite is the beat's look at a watched outbox (see write): a
// write it has seen under way, the same one, for the write timeout is
// interrupted with a past write deadline on nc; the writer then decides.
// A write is first seen within a beat of its start, so one that takes no
// byte fails between one timeout and one timeout and two beats after it
// began (a client beats every quarter timeout or more often).
//
// It reports true, once per write, when the write it interrupted is
// still under way a write timeout later: nc's SetWriteDeadline did
// nothing, or has not returned (a wrapper that holds one lock over
// Write and SetWriteDeadline); the caller closes the connection.
func (o *outbox) watchWrite(now int64) (stuck bool) {
	ww := o.ww
	w := ww.state.Load()
	if w&writeBusy == 0 {
		ww.seen = 0
		return false
	}
	if w != ww.seen {
		ww.seen, ww.seenAt = w, now
		return false
	}
	if now-ww.seenAt < int64(o.timeout) || ww.kicking == w {
		return false
	}
	// Seen for the write timeout: the same write, interrupted or not
	// (w and w|writeKicked differ, so seenAt restarted at the kick).
	ww.kicking = w
	if w&writeKicked != 0 {
		return true
	}
	// In a goroutine of its own: the beat must not wait (a net.Conn given
	// to NewClient may take its time to set a deadline). Once per write.
	go func() {
		ww.kickMu.Lock()
		if ww.state.CompareAndSwap(w, w|writeKicked) {
			o.nc.SetWriteDeadline(kickDeadline)
		}
		ww.kickMu.Unlock()
	}()
	return false
}

// outboxFrames writes whole frames into the outbox while its mu is held
// (between outbox.lock and outbox.unlock).
type outboxFrames outbox

// WriteFrame queues one frame (a go-away). It is not bounded by the queue
// limit: only control frames use it. payload is copied.
func (f *outboxFrames) WriteFrame(kind byte, payload []byte) error {
	return f.WriteFrameParts(kind, payload, nil)
}

// WriteFrameParts queues the frame kind, head+body. A body of at least
// frame.DefaultWritevThreshold bytes is not copied: the caller takes the
// writer role (waiting for the current writer to finish its batch) and
// writes the queue, the frame's header, head and body in one writev (two
// Writes on a net.Conn that is not a socket, see writeOnce), then
// goes on writing what was queued meanwhile; body is not used after
// WriteFrameParts returns. mu is held on return.
func (f *outboxFrames) WriteFrameParts(kind byte, head, body []byte) error {
	o := (*outbox)(f)
	if o.err != nil {
		return o.err
	}
	n := len(head) + len(body) + 1
	if n > o.max {
		return fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, o.max)
	}
	if len(body) < frame.DefaultWritevThreshold {
		if o.cur == nil {
			o.cur = o.take()
		}
		o.cur.B = binary.LittleEndian.AppendUint32(o.cur.B, uint32(n))
		o.cur.B = append(o.cur.B, kind)
		o.cur.B = append(o.cur.B, head...)
		o.cur.B = append(o.cur.B, body...)
		return nil
	}
	// Wait for the writer role.
	o.bigWait++
	for o.flushing && o.err == nil {
		ch := o.waitChan()
		o.mu.Unlock()
		<-ch
		o.mu.Lock()
	}
	o.bigWait--
	if o.err != nil {
		return o.err
	}
	o.flushing, o.claimed = true, false
	w := o.cur
	if w == nil {
		w = o.take()
	}
	o.cur = nil
	o.taken++
	w.B = binary.LittleEndian.AppendUint32(w.B, uint32(n))
	w.B = append(w.B, kind)
	w.B = append(w.B, head...)
	o.mu.Unlock()
	_, err := o.write(noCtx, w.B, body)
	o.mu.Lock()
	o.recycle(w)
	if err != nil {
		o.broke(err)
		o.flushing = false
		o.endWriter() // see halt
		o.wakeAll()
		return err
	}
	o.wakeAll()
	o.mu.Unlock()
	err = o.drain(noCtx, nil, 0) // what was queued meanwhile; gives the role up
	o.mu.Lock()
	return err
}

// writeOnce makes one attempt at the rest of a write, of p and then q
// (when not nil: a large answer body, written as it is, after p), written
// bytes of them written already, and returns the bytes it wrote. On a TCP or Unix socket p and
// q go out together, through o.vec (set up for them), in one writev,
// whose count is the kernel's. On any other net.Conn (a wrapper, a
// tls.Conn), where net.Buffers would Write each buffer without a look at
// the counts (q after a short write of p, and a count of -1 made it
// panic), p's rest goes out in one checked Write and q's in another once
// p is all written. A write that returns early without an error counts as
// io.ErrShortWrite.
func (o *outbox) writeOnce(p, q []byte, written int) (int, error) {
	var n int
	var err error
	switch {
	case q == nil:
		// writeChecked's, inline (an interface call is too costly for
		// it to be inlined): the path of every write but a large body's.
		rest := p[written:]
		n, err = o.nc.Write(rest)
		if uint(n) > uint(len(rest)) {
			n, err = 0, badWriteCount(n, len(rest))
		} else if err == nil && n < len(rest) {
			err = io.ErrShortWrite
		}
	case o.socket:
		var m int64
		m, err = o.vec.WriteTo(o.nc)
		if err == nil && len(o.vec) != 0 {
			err = io.ErrShortWrite
		}
		n = int(m)
	default:
		if written < len(p) {
			n, err = o.writeChecked(p[written:])
		}
		if err == nil {
			var m int
			m, err = o.writeChecked(q[written+n-len(p):])
			n += m
		}
	}
	if o.sent != nil && n > 0 {
		o.sent.Add(uint64(n))
	}
	return n, err
}

// errWriteCount breaks a connection whose net.Conn's Write returned a
// count outside 0..len(p): a wrapper that breaks io.Writer's contract.
// What it wrote is unknown, and the count cannot be used to go on.
var errWriteCount = errors.New("rpc: the connection's Write returned an invalid count")

// writeChecked writes b with one Write of nc: a count outside 0..len(b)
// is errWriteCount (with a count of 0), a short write without an error
// io.ErrShortWrite.
func (o *outbox) writeChecked(b []byte) (int, error) {
	n, err := o.nc.Write(b)
	if uint(n) > uint(len(b)) {
		return 0, badWriteCount(n, len(b))
	}
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return n, err
}

// badWriteCount is the error of a Write that returned count n for size
// bytes (see writeChecked).
func badWriteCount(n, size int) error {
	return fmt.Errorf("%w (%d for %d bytes)", errWriteCount, n, size)
}
