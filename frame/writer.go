package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"unsafe"

	"github.com/zapcodec/zapcodec/pool"
)

const (
	// minWant is the smallest buffer a Writer asks its pool for: 512 bytes.
	minWant = 512
	// shrinkAfter: the buffer asked for comes down to the largest of this
	// many batches in a row that each used less than a quarter of it.
	shrinkAfter = 16
)

// Writer writes length-prefixed frames to a stream, coalescing them: frames
// accumulate in one buffer and leave in a single Write per Flush (many small
// answers, one syscall). A payload of at least the writev threshold is not
// copied: the pending bytes, its header and the payload go out together in
// one writev on a *net.TCPConn or *net.UnixConn, in two Writes on any other
// writer (a net.Conn wrapper or a tls.Conn included), the second only
// after the first wrote all its bytes.
//
// The buffer is written out by itself when a frame would take it past the
// buffer size; otherwise nothing reaches the stream until Flush. A Writer
// must not be copied and is not safe for concurrent use: callers (rpc)
// serialise access, and a frame from Begin must be ended before any other
// method is called.
//
// Memory: the buffer is pooled. The Writer takes one from the pool when a
// frame is added to an empty Writer (Begin, WriteFrame, WriteFrameParts)
// and gives it back whenever a write leaves nothing pending (Flush, a
// write-out when the buffer is full, a writev, Reset, a write error) or a
// refused or abandoned frame does (ErrFrameTooLarge, ErrNoBegin, a Begin
// not ended), so an idle Writer holds no buffer and costs only its own
// struct (about 200 bytes). The capacity asked for follows the batches
// actually written: the largest recent batch, at least 512 bytes. It goes
// up at once, and down after 16 batches in a row that each used less than
// a quarter of it, to the largest of those 16: after a 16 MiB frame the
// 17th small batch takes a small buffer (a frame that large in every 16
// batches keeps it). A frame
// built with Begin/End larger than the buffer grows it (by append: one
// allocation) and a buffer of that size is asked for next time, so
// repeated large frames allocate nothing once warm. WriteFrame grows the
// buffer at most to the buffer size plus the writev threshold.
//
// After a write to the stream fails, the Writer is broken: the error is
// returned by every later call (part of a frame may have been written).
// Reset makes it usable on a new stream.
type Writer struct {
	_ noCopy

	w         io.Writer
	buf       []byte       // pending bytes: whole frames, then possibly a begun header
	bb        *pool.Buffer // pooled backing of buf; nil when none is held
	bodies    *pool.SizedPool
	want      int // capacity to ask the pool for
	smaller   int // batches in a row much smaller than want
	begun     int // offset in buf of the header Begin wrote; -1 when none
	size      int // write out when buf would exceed this
	threshold int // writev payloads of at least this size
	max       int
	http      bool
	hdrLen    int
	vecArr    [2][]byte
	vec       net.Buffers
	err       error // sticky
	// smallMax is the largest of the batches counted by smaller. Last, so
	// that the fields Begin and End use keep their offsets.
	smallMax int
}

// NewWriter returns a Writer of frames to w. Options: WithBufferSize
// (coalescing buffer, default 64 KiB), WithWritevThreshold (default
// 64 KiB), WithMaxFrameSize (default 16 MiB), WithHTTPFraming.
func NewWriter(w io.Writer, opts ...Option) *Writer {
	o := buildOptions(opts)
	fw := &Writer{
		w:         w,
		size:      o.bufferSize,
		threshold: o.writevThreshold,
		max:       o.maxFrameSize,
		http:      o.http,
		hdrLen:    5,
		begun:     -1,
		bodies:    &bodies,
		want:      minWant,
	}
	if o.http {
		fw.hdrLen = 4
	}
	return fw
}

// Reset drops pending bytes and a begun frame, gives the buffer back,
// clears a sticky error and makes fw write to w, keeping its options.
func (fw *Writer) Reset(w io.Writer) {
	fw.w = w
	fw.buf = fw.buf[:0]
	fw.give()
	fw.begun = -1
	fw.err = nil
}

// Held returns the capacity of the pooled buffer the Writer holds now, 0
// when it holds none: nothing is pending since its last write. For tests
// and metrics.
func (fw *Writer) Held() int {
	if fw.bb == nil {
		return 0
	}
	return cap(fw.buf)
}

// take makes sure the Writer holds a buffer.
func (fw *Writer) take() {
	if fw.bb == nil {
		fw.bb = fw.bodies.Get(fw.want, 0)
		fw.buf = fw.bb.B[:0]
	}
}

// give returns the (empty) buffer to the pool, first updating want from
// the batch just written (n bytes).
func (fw *Writer) give() {
	if fw.bb == nil {
		return
	}
	fw.bb.B = fw.buf[:0] // append may have moved it to a larger array
	fw.bodies.Put(fw.bb)
	fw.bb = nil
	fw.buf = nil
}

// settle gives the buffer back when a refused or abandoned frame leaves
// nothing pending, as a write that leaves nothing pending does: an idle
// Writer holds no buffer (also a broken one, whose Begin takes a buffer
// for the caller to append to).
func (fw *Writer) settle() {
	if len(fw.buf) == 0 {
		fw.give()
	}
}

// sized records a batch of n bytes leaving: want follows the batch sizes,
// up at once, and after shrinkAfter batches in a row that each used less
// than a quarter of it, down to the largest of them. It runs once per
// batch written, not per frame.
func (fw *Writer) sized(n int) {
	switch {
	case n > fw.want:
		fw.want = n
		fw.smaller, fw.smallMax = 0, 0
	case n < fw.want/4:
		fw.smaller++
		fw.smallMax = max(fw.smallMax, n)
		if fw.smaller >= shrinkAfter {
			fw.want = max(fw.smallMax, minWant)
			fw.smaller, fw.smallMax = 0, 0
		}
	default:
		fw.smaller, fw.smallMax = 0, 0
	}
}

// Buffered returns the number of bytes of complete frames waiting for
// Flush. A server can flush when it exceeds a target or when no more work
// is queued.
func (fw *Writer) Buffered() int {
	if fw.begun >= 0 {
		return fw.begun
	}
	return len(fw.buf)
}

// WriteFrame appends one frame (header, kind, payload) to the buffer, or,
// when len(payload) is at least the writev threshold, writes the pending
// bytes, the header and the payload at once. It fails with ErrFrameTooLarge
// when the frame exceeds the maximum frame size (nothing is written). In
// HTTP framing kind is ignored.
//
// WriteFrame does not retain payload: it is copied or written before
// WriteFrame returns.
func (fw *Writer) WriteFrame(kind byte, payload []byte) error {
	fw.abandon()
	if fw.err != nil {
		return fw.err
	}
	n := len(payload)
	if !fw.http {
		n++
	}
	if n > fw.max {
		return fmt.Errorf("%w (len:%d max:%d)", ErrFrameTooLarge, n, fw.max)
	}
	if len(payload) >= fw.threshold {
		fw.take()
		fw.buf = fw.appendHeader(fw.buf, kind, n)
		return fw.writev(payload)
	}
	if len(fw.buf) > 0 && len(fw.buf)+fw.hdrLen+len(payload) > fw.size {
		if err := fw.flush(); err != nil {
			return err
		}
	}
	fw.take()
	fw.buf = fw.appendHeader(fw.buf, kind, n)
	fw.buf = append(fw.buf, payload...)
	return nil
}

// WriteFrameParts is WriteFrame for a payload given in two parts, head
// then body (an envelope header and a large body the caller does not want
// copied): the frame is the same as WriteFrame(kind, head+body). When
// len(body) is at least the writev threshold, the pending bytes, the frame
// header and head go out with body, which is not copied, as a large
// payload of WriteFrame does (one writev on a TCP or Unix socket, two
// Writes elsewhere: see [Writer]); otherwise both parts are copied into
// the buffer. Neither slice is retained after WriteFrameParts returns.
func (fw *Writer) WriteFrameParts(kind byte, head, body []byte) error {
	fw.abandon()
	if fw.err != nil {
		return fw.err
	}
	n := len(head) + len(body)
	if !fw.http {
		n++
	}
	if n > fw.max {
		return fmt.Errorf("%w (len:%d max:%d)", ErrFrameTooLarge, n, fw.max)
	}
	if len(body) >= fw.threshold {
		fw.take()
		fw.buf = fw.appendHeader(fw.buf, kind, n)
		fw.buf = append(fw.buf, head...)
		return fw.writev(body)
	}
	if len(fw.buf) > 0 && len(fw.buf)+fw.hdrLen+len(head)+len(body) > fw.size {
		if err := fw.flush(); err != nil {
			return err
		}
	}
	fw.take()
	fw.buf = fw.appendHeader(fw.buf, kind, n)
	fw.buf = append(fw.buf, head...)
	fw.buf = append(fw.buf, body...)
	return nil
}

// Begin starts a frame of the given kind whose payload the caller appends
// straight into the output buffer, with no intermediate copy:
//
//	buf := w.Begin(kind)
//	buf = append(buf, ...) // or: builder.Reset(buf); ...; buf = builder.Finish()
//	err := w.End(buf)
//
// The result holds the pending frames and the new frame's header; append
// the payload after its end and never change the bytes already in it. The
// result belongs to the Writer: it is valid only until End, and the caller
// must not keep it (or what it appended to it) after End. The payload
// starts at offset len(result), so a codec.Builder Reset on the result
// writes the message at the right place.
//
// Calling any method other than End abandons the begun frame.
func (fw *Writer) Begin(kind byte) []byte {
	fw.abandon()
	if fw.err == nil && len(fw.buf) >= fw.size {
		fw.flush() // sets fw.err on failure; End reports it
	}
	fw.take()
	fw.begun = len(fw.buf)
	fw.buf = fw.appendHeader(fw.buf, kind, 0)
	return fw.buf
}

// End finishes the frame Begin started: buf must be the slice Begin
// returned with the payload appended. The length is patched in place in
// buf's header. It fails with ErrNoBegin when no frame was begun or buf
// does not start with what Begin returned (a shorter slice, or one that
// does not hold the pending frames and the header), and with
// ErrFrameTooLarge when the payload exceeds the maximum frame size; on
// failure the begun frame is dropped and the pending frames are kept.
// The Writer takes buf over as its buffer: do not use buf after End.
// When the buffer has reached the buffer size it is written out.
func (fw *Writer) End(buf []byte) error {
	start := fw.begun
	if start < 0 {
		return ErrNoBegin
	}
	fw.begun = -1
	if fw.err != nil {
		fw.buf = fw.buf[:start]
		fw.give()
		return fw.err
	}
	if len(buf) < start+fw.hdrLen || unsafe.SliceData(buf) != unsafe.SliceData(fw.buf) && !movedCopy(buf, fw.buf[:start+fw.hdrLen]) {
		fw.buf = fw.buf[:start]
		fw.settle()
		return ErrNoBegin
	}
	n := len(buf) - start - fw.hdrLen
	if !fw.http {
		n++
	}
	if n > fw.max {
		fw.buf = fw.buf[:start]
		fw.settle()
		return fmt.Errorf("%w (len:%d max:%d)", ErrFrameTooLarge, n, fw.max)
	}
	if fw.http {
		binary.BigEndian.PutUint32(buf[start:], uint32(n))
	} else {
		binary.LittleEndian.PutUint32(buf[start:], uint32(n))
	}
	fw.buf = buf
	if len(fw.buf) >= fw.size {
		return fw.flush()
	}
	return nil
}

// movedCopy reports whether b, which does not share begun's array, starts
// with a copy of begun, what Begin returned: append moved it to a larger
// array. b is at least as long as begun. A call apart, so that End's
// common case (the payload appended in place) is one pointer comparison.
//
//go:noinline
func movedCopy(b, begun []byte) bool { return bytes.Equal(b[:len(begun)], begun) }

// Flush writes the buffered frames in one Write. A begun frame is
// abandoned.
func (fw *Writer) Flush() error {
	fw.abandon()
	if fw.err != nil {
		return fw.err
	}
	return fw.flush()
}

// abandon drops a begun frame; a Writer left with nothing pending gives its
// buffer back.
func (fw *Writer) abandon() {
	if fw.begun >= 0 {
		fw.buf = fw.buf[:fw.begun]
		fw.begun = -1
		fw.settle()
	}
}

func (fw *Writer) appendHeader(b []byte, kind byte, n int) []byte {
	if fw.http {
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	return append(b, kind)
}

func (fw *Writer) flush() error {
	if len(fw.buf) == 0 {
		fw.give()
		return nil
	}
	err := writeAll(fw.w, fw.buf)
	fw.sized(len(fw.buf))
	fw.buf = fw.buf[:0]
	fw.give()
	if err != nil {
		fw.err = err
	}
	return err
}

// writev writes the pending bytes (ending with payload's header) and
// payload together: one writev on a TCP or Unix socket, two checked Writes
// elsewhere.
func (fw *Writer) writev(payload []byte) error {
	var err error
	if isSocket(fw.w) {
		fw.vecArr[0] = fw.buf
		fw.vecArr[1] = payload
		fw.vec = fw.vecArr[:]
		want := int64(len(fw.buf) + len(payload))
		var n int64
		n, err = fw.vec.WriteTo(fw.w)
		if err == nil && n < want {
			err = io.ErrShortWrite
		}
		fw.vecArr = [2][]byte{}
		fw.vec = nil
	} else {
		// net.Buffers would also do two Writes here, but without
		// noticing a short one: it wrote the payload after a short
		// write of the bytes before it, where the peer reads them (a
		// net.Conn wrapper, a tls.Conn), and a negative count made it
		// panic.
		err = writeAll(fw.w, fw.buf)
		if err == nil {
			err = writeAll(fw.w, payload)
		}
	}
	fw.sized(len(fw.buf))
	fw.buf = fw.buf[:0]
	fw.give()
	if err != nil {
		fw.err = err
	}
	return err
}

// isSocket reports whether net.Buffers writes to w with one writev and
// counts what the kernel took: a *net.TCPConn or *net.UnixConn.
func isSocket(w io.Writer) bool {
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// errWriteCount: the underlying writer returned a count outside 0..len(p).
var errWriteCount = errors.New("frame: underlying writer returned an invalid count")

// writeAll writes p with one Write and turns a short write without an error
// into io.ErrShortWrite, and a count outside 0..len(p) into an error.
func writeAll(w io.Writer, p []byte) error {
	n, err := w.Write(p)
	switch {
	case n < 0 || n > len(p):
		return errWriteCount
	case err == nil && n < len(p):
		err = io.ErrShortWrite
	}
	return err
}
