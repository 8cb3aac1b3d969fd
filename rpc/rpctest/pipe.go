package rpctest

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultBufferSize is the bytes each direction of a [Pipe] (and of a
// [Listener]'s connections) holds when [Options].BufferSize is 0: 64 KiB,
// about what a loopback TCP socket buffers, so that peers which write
// from their reading goroutines (a go-away's acknowledgement, a ping's
// answer) do not wait for each other.
const DefaultBufferSize = 64 << 10

// Options configures a [Listener] ([NewListenerWithOptions]) or a [Pipe].
// The zero value gives the defaults.
type Options struct {
	// BufferSize is how many bytes each direction of a connection holds
	// that its reader has not read yet: a Write returns once its bytes
	// are in the buffer, and waits only while the buffer is full. The
	// buffer grows with the bytes written, up to BufferSize. 0 means
	// [DefaultBufferSize]; a negative value means 1 byte (every write
	// waits for the reader, byte by byte, close to net.Pipe).
	BufferSize int
}

func (o Options) bufferSize() int {
	switch {
	case o.BufferSize == 0:
		return DefaultBufferSize
	case o.BufferSize < 0:
		return 1
	}
	return o.BufferSize
}

// Pipe returns the two ends of an in-memory, full-duplex connection whose
// directions each buffer up to o.BufferSize bytes. Unlike net.Pipe, a
// Write returns once its bytes are buffered: it waits for the reader only
// while the buffer is full. The rest follows net.Pipe:
//
//   - Deadlines (SetDeadline, SetReadDeadline, SetWriteDeadline) work: a
//     Read or Write waiting when its deadline passes, or called after
//     it, fails with an error matching os.ErrDeadlineExceeded (a
//     net.Error whose Timeout is true). A Write cut so returns the bytes
//     it buffered.
//   - Close of an end makes that end's Reads, Writes and deadline
//     setters fail with io.ErrClosedPipe (waiting ones too). The other
//     end reads what was buffered before the Close, then io.EOF; its
//     Writes fail with io.ErrClosedPipe. Close is idempotent.
//   - Writes are atomic to each other: concurrent Writes do not
//     interleave their bytes.
//
// There is no half-close (CloseWrite). The ends' addresses are network
// "pipe", addresses "pipe"; a [Listener]'s name the listener and the
// dial (see [Listener.Dial]).
func Pipe(o Options) (net.Conn, net.Conn) {
	a, b := newPipe(o.bufferSize(), pipeAddr("pipe"), pipeAddr("pipe"))
	return a, b
}

// newPipe returns the ends of a pipe whose directions hold size bytes;
// a's address is aAddr, b's is bAddr.
func newPipe(size int, aAddr, bAddr net.Addr) (*pipeConn, *pipeConn) {
	ab, ba := &pipeBuf{size: size}, &pipeBuf{size: size}
	a := &pipeConn{in: ba, out: ab, local: aAddr, remote: bAddr}
	b := &pipeConn{in: ab, out: ba, local: bAddr, remote: aAddr}
	return a, b
}

// pipeConn is one end of a Pipe: it reads from in and writes to out.
type pipeConn struct {
	in, out       *pipeBuf
	local, remote net.Addr
	wmu           sync.Mutex // one Write at a time: writes do not interleave
	rd, wd        deadline
	closeOnce     sync.Once
}

// pipeBuf is one direction of a pipe: a ring of up to size bytes that
// grows with what is written.
type pipeBuf struct {
	mu      sync.Mutex
	ring    []byte
	head, n int // the unread bytes: ring[head:], wrapping, n of them
	size    int
	rclosed bool // the reading end was closed: writes fail
	wclosed bool // the writing end was closed: reads drain, then io.EOF
	// wake, when not nil, is closed (and cleared) at the next change of
	// the buffer's state; waiters take it under mu.
	wake chan struct{}
}

// waitChan returns the channel closed at the buffer's next change. Called
// with mu held.
func (b *pipeBuf) waitChan() <-chan struct{} {
	if b.wake == nil {
		b.wake = make(chan struct{})
	}
	return b.wake
}

// changed wakes the waiters of the buffer. Called with mu held.
func (b *pipeBuf) changed() {
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

// take moves unread bytes to p and returns how many. Called with mu held.
func (b *pipeBuf) take(p []byte) int {
	n := 0
	for n < len(p) && b.n > 0 {
		k := copy(p[n:], b.ring[b.head:min(b.head+b.n, len(b.ring))])
		n += k
		b.n -= k
		b.head += k
		if b.head == len(b.ring) {
			b.head = 0
		}
	}
	if b.n == 0 {
		b.head = 0
	}
	return n
}

// put buffers what of p fits and returns how many bytes that is. Called
// with mu held.
func (b *pipeBuf) put(p []byte) int {
	if want := min(b.n+len(p), b.size); want > len(b.ring) {
		b.grow(max(want, min(2*len(b.ring), b.size)))
	}
	n := 0
	for n < len(p) && b.n < len(b.ring) {
		tail := b.head + b.n
		if tail >= len(b.ring) {
			tail -= len(b.ring)
		}
		end := len(b.ring)
		if tail < b.head {
			end = b.head
		}
		k := copy(b.ring[tail:end], p[n:])
		n += k
		b.n += k
	}
	return n
}

// grow makes the ring size bytes long, the unread bytes first. Called
// with mu held.
func (b *pipeBuf) grow(size int) {
	r := make([]byte, size)
	n := b.take(r)
	b.ring, b.head, b.n = r, 0, n
}

// Read reads what the other end wrote, waiting while nothing is buffered
// (see [Pipe] for its errors).
func (c *pipeConn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	return n, c.opError("read", err)
}

func (c *pipeConn) read(p []byte) (int, error) {
	b := c.in
	for {
		b.mu.Lock()
		switch {
		case b.rclosed:
			b.mu.Unlock()
			return 0, io.ErrClosedPipe
		case c.rd.passed():
			b.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		case b.n > 0:
			n := b.take(p)
			b.changed()
			b.mu.Unlock()
			return n, nil
		case b.wclosed:
			b.mu.Unlock()
			return 0, io.EOF
		case len(p) == 0:
			b.mu.Unlock()
			return 0, nil
		}
		wake := b.waitChan()
		b.mu.Unlock()
		select {
		case <-wake:
		case <-c.rd.wait():
		}
	}
}

// Write buffers p for the other end, waiting while the buffer is full
// (see [Pipe] for its errors).
func (c *pipeConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	n, err := c.write(p)
	c.wmu.Unlock()
	return n, c.opError("write", err)
}

func (c *pipeConn) write(p []byte) (int, error) {
	b := c.out
	n := 0
	for {
		b.mu.Lock()
		switch {
		case b.wclosed, b.rclosed:
			b.mu.Unlock()
			return n, io.ErrClosedPipe
		case c.wd.passed():
			b.mu.Unlock()
			return n, os.ErrDeadlineExceeded
		case n == len(p):
			b.mu.Unlock()
			return n, nil
		case b.n < b.size:
			n += b.put(p[n:])
			b.changed()
			b.mu.Unlock()
			if n == len(p) {
				// Done: not a look at the ends again, which the reader
				// may have closed by now, having read these bytes.
				return n, nil
			}
			continue
		}
		wake := b.waitChan()
		b.mu.Unlock()
		select {
		case <-wake:
		case <-c.wd.wait():
		}
	}
}

// opError wraps an error of op other than io.EOF and io.ErrClosedPipe in
// a *net.OpError, as net.Pipe does.
func (c *pipeConn) opError(op string, err error) error {
	if err == nil || err == io.EOF || err == io.ErrClosedPipe {
		return err
	}
	return &net.OpError{Op: op, Net: "pipe", Source: c.local, Addr: c.remote, Err: err}
}

// Close closes this end: its Reads and Writes fail with io.ErrClosedPipe;
// the other end reads what is buffered, then io.EOF, and its Writes fail.
// Waiting Reads and Writes of both ends return. It returns nil, also when
// called again.
func (c *pipeConn) Close() error {
	c.closeOnce.Do(func() {
		c.in.mu.Lock()
		c.in.rclosed = true
		c.in.changed()
		c.in.mu.Unlock()
		c.out.mu.Lock()
		c.out.wclosed = true
		c.out.changed()
		c.out.mu.Unlock()
		c.rd.stop()
		c.wd.stop()
	})
	return nil
}

// closed reports whether Close was called on this end.
func (c *pipeConn) closed() bool {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	return c.in.rclosed
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both deadlines; see [Pipe]. After Close it fails with
// io.ErrClosedPipe.
func (c *pipeConn) SetDeadline(t time.Time) error {
	if c.closed() {
		return io.ErrClosedPipe
	}
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline sets the read deadline; see [Pipe].
func (c *pipeConn) SetReadDeadline(t time.Time) error {
	if c.closed() {
		return io.ErrClosedPipe
	}
	c.rd.set(t)
	return nil
}

// SetWriteDeadline sets the write deadline; see [Pipe].
func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	if c.closed() {
		return io.ErrClosedPipe
	}
	c.wd.set(t)
	return nil
}

// deadline is one deadline of a pipeConn: a channel closed when it has
// passed, which waiters select on. Its zero value is no deadline.
type deadline struct {
	mu    sync.Mutex
	ch    chan struct{} // closed when passed; nil until first needed
	timer *time.Timer
	gen   uint64 // counts set: a timer of an older set does nothing
}

// set moves the deadline to t (the zero time: none).
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.ch == nil || isClosed(d.ch) {
		d.ch = make(chan struct{})
	}
	if t.IsZero() {
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		close(d.ch)
		return
	}
	gen, ch := d.gen, d.ch
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		if d.gen == gen {
			close(ch)
		}
		d.mu.Unlock()
	})
}

// wait returns a channel closed when the deadline passes: the one a
// later set closes, so that a deadline set while a Read or Write waits
// wakes it.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

// passed reports whether the deadline has passed.
func (d *deadline) passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch != nil && isClosed(d.ch)
}

// stop stops the deadline's timer (at Close).
func (d *deadline) stop() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.mu.Unlock()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

var _ net.Conn = (*pipeConn)(nil)
