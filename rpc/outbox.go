package rpc

import (
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/zapcodec/zapcodec/frame"
)

// maxFlushYields bounds the yields of a flusher waiting for more frames.
const maxFlushYields = 4

// outbox is the write side of a connection, shared by every goroutine that
// sends on it (callers on a client, workers on a server). Frames are
// appended under mu; the goroutine that appends the first frame of a batch
// becomes the flusher and writes, outside mu, everything appended until it
// finds nothing new (group commit): frames appended while a write is on the
// wire leave together in the next write, and no appender ever waits for a
// syscall. Two frame.Writers alternate: appenders fill cur while the
// flusher writes the other one.
//
// Invariant (whenever mu is free): cur holds frames only while flushing is
// true, i.e. some goroutine is bound to write them.
type outbox struct {
	nc      net.Conn
	timeout time.Duration // write deadline per write; 0 none

	mu       sync.Mutex
	cur      *frame.Writer // frames are appended here, under mu
	spare    *frame.Writer // being written by the flusher, or empty
	flushing bool
}

func (o *outbox) init(nc net.Conn, timeout time.Duration, opts ...frame.Option) {
	o.nc, o.timeout = nc, timeout
	o.cur = frame.NewWriter(nc, opts...)
	o.spare = frame.NewWriter(nc, opts...)
}

// begin locks the outbox and starts a frame (see frame.Writer.Begin); the
// caller appends the payload and must call end or endString.
func (o *outbox) begin(kind byte) []byte {
	return o.lock().Begin(kind)
}

// end finishes the frame begin started and unlocks. lead reports that the
// caller must now call flush. err is the frame's error (ErrFrameTooLarge:
// nothing was added) or a write error of the stream.
func (o *outbox) end(buf []byte) (lead bool, err error) {
	err = o.cur.End(buf)
	lead = o.claim()
	o.mu.Unlock()
	return lead, err
}

// abandon drops the frame begin started and unlocks.
func (o *outbox) abandon(buf []byte) {
	o.cur.End(buf[:0]) // shorter than Begin's result: the frame is dropped
	o.mu.Unlock()
}

// lock and unlock bracket direct use of o.cur (WriteFrame); unlock reports
// whether the caller must flush.
func (o *outbox) lock() *frame.Writer {
	o.mu.Lock()
	if o.timeout > 0 {
		// Begin, End and WriteFrame may write to the stream by themselves.
		o.nc.SetWriteDeadline(time.Now().Add(o.timeout))
	}
	return o.cur
}

func (o *outbox) unlock() (lead bool) {
	lead = o.claim()
	o.mu.Unlock()
	return lead
}

// claim makes the caller the flusher when frames wait and nobody flushes.
// Called with mu held.
func (o *outbox) claim() bool {
	if o.flushing || o.cur.Buffered() == 0 {
		return false
	}
	o.flushing = true
	return true
}

// flush is called by the goroutine end or unlock made the flusher. When
// others may be about to send (other calls are in progress), it first
// yields, again while a yield brought new frames (up to maxFlushYields
// times), so that goroutines already runnable (answers being produced,
// callers woken by the same read) append their frames to the same write;
// then it writes batches until none is left. On a write error it gives up
// the role and returns the error: the caller closes the connection.
func (o *outbox) flush(others bool) error {
	if others {
		// Yield until a yield brings no new frame (at most a few times).
		n := -1
		for range maxFlushYields {
			runtime.Gosched()
			o.mu.Lock()
			b := o.cur.Buffered()
			o.mu.Unlock()
			if b == n {
				break
			}
			n = b
		}
	}
	o.mu.Lock()
	for {
		w := o.cur
		if w.Buffered() == 0 {
			o.flushing = false
			o.mu.Unlock()
			return nil
		}
		o.cur, o.spare = o.spare, w
		o.mu.Unlock()
		if o.timeout > 0 {
			o.nc.SetWriteDeadline(time.Now().Add(o.timeout))
		}
		err := w.Flush()
		o.mu.Lock()
		if err != nil {
			o.flushing = false
			o.mu.Unlock()
			return err
		}
	}
}
