package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// writeWatched is outbox.write for a server connection on the watchdog's
// list, without a ctx (or with one it sets no deadline for: cut, below):
// no write deadline is set. The write timeout is
// enforced by the watchdog's scans, which set a write deadline in the past
// (pokeWrite) once wsince is the write timeout old; the write then looks
// at what happened: bytes taken are progress (wsince moves on and the
// write goes on), none for the write timeout fails it with
// errWriteTimeout, and a deadline that came too early (a scan that read
// wsince of an earlier write) is cleared and the write goes on, its write
// timeout counted from then. A write that takes no byte therefore fails
// between one write timeout and that plus the scans' interval (at most
// wdSlow) after its last progress (or after a deadline that came early).
//
// The write also has a bound in all (writeBound, counted from start, its
// reading of monoNow as it began): a peer that takes a byte now and then,
// each within the write timeout, held it for ever, since every byte taken
// restarted the count. At each deadline the write looks at the bound:
// past it, the write fails with errWriteTooSlow; due before the scans'
// next poke (a write timeout from then), a deadline on the socket at the
// bound ends the write there. Such a deadline, a runtime timer, is set
// only by a write that has run a write timeout already: the write that
// completes at once, or within a write timeout, reads no clock and sets
// no deadline for it.
//
// Over TLS, where a write cut by a deadline cannot go on (crypto/tls
// fails every later one), the scans' deadline fails the write: each
// write must end within the write timeout, as with a deadline on the
// socket. (A scan's deadline that came too early, meant for the write
// before, which had then run for the write timeout, fails the next one.)
//
// Why: a deadline on the socket is a runtime timer, and while a timer is
// pending in a P's heap, every scheduling on that P reads the clock
// (DESIGN.md). A busy connection used to keep its write deadline pending
// for good.
//
// With cut (a stream handler's Send, see outbox.write), ctx's end
// interrupts the write with a past deadline, and the write returns
// errHandOff: the rest goes on in another goroutine. ctx is looked at
// after every change of the deadline here, so that such a past deadline
// is not lost under it.
func (o *outbox) writeWatched(ctx context.Context, cut bool, start int64, p, q []byte) (int, error) {
	if !o.wdl.IsZero() {
		// Set by an earlier write while the connection was not listed.
		o.nc.SetWriteDeadline(time.Time{})
		o.wdl, o.wdlCtx = time.Time{}, false
	}
	if q != nil {
		o.vecArr = [2][]byte{p, q}
		o.vec = o.vecArr[:]
	}
	written := 0
	for {
		if cut && ctx.Err() != nil {
			o.vecArr, o.vec = [2][]byte{}, nil
			return written, errHandOff
		}
		n, err := o.writeOnce(p, q, written)
		written += n
		if err == nil {
			o.vecArr, o.vec = [2][]byte{}, nil
			return written, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), err
		}
		if !o.resumable {
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), errWriteTimeout
		}
		now := monoNow()
		end := start + int64(o.writeBound(len(p)+len(q)))
		if now >= end {
			// Bytes may have been taken, but too few in all.
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), errWriteTooSlow
		}
		if n == 0 && now-o.wsince.Load() >= int64(o.timeout) {
			o.vecArr, o.vec = [2][]byte{}, nil
			return min(written, len(p)), errWriteTimeout
		}
		// Bytes were taken, or the deadline came early (a scan's, meant
		// for the write before): the write timeout counts from now, and
		// a scan pokes again when it is due (see pokeWrite). The past
		// deadline is replaced by none, or by the bound in all when the
		// scans would poke after it: noted in wdl as not the write
		// timeout's, so that the next write clears it or sets its own.
		o.wsince.Store(now)
		var dl time.Time
		if end-now < int64(o.timeout) {
			dl = monoTime(end)
		}
		o.nc.SetWriteDeadline(dl)
		o.wdl, o.wdlCtx = dl, !dl.IsZero()
	}
}

// pokeWrite ends a write of c's outbox that has made no progress for the
// write timeout (a scan calls it for a listed connection; see
// writeWatched). The deadline is set by a goroutine of its own, one at a
// time per connection (wPoking): a scan holds the watchdog's lock, and a
// net.Conn slow to set a deadline (a wrapper given to Serve by its
// listener) must not stop the scans and every connection that begins to
// run calls inline. The connection stays on the list until that deadline
// is set (see scanLocked): it lands while the connection's writes are
// watched ones, which take a deadline that came early for what it is.
//
// One poke per stall: once its goroutine has begun to set the deadline
// (wPokedAt, later than the stall's wsince), the scans wait. A write still
// stuck a write timeout after that (a net.Conn whose SetWriteDeadline does
// nothing, or waits for the Write) closes the connection, which ends a
// write on the transports that honor Close; a closed connection leaves
// the list whether its write ended or not (see scanLocked): the scans can
// do no more for it.
func (c *serverConn) pokeWrite(now int64) {
	ws := c.out.wsince.Load()
	if ws == 0 || now-ws < int64(c.out.timeout) || c.closed.Load() {
		return
	}
	if at := c.wPokedAt.Load(); at > ws {
		if now-at >= int64(c.out.timeout) && c.wClosing.CompareAndSwap(false, true) {
			// Not under the watchdog's lock: close takes the server's.
			go c.close(errDeadlineIgnored)
		}
		return
	}
	if c.wPoking.CompareAndSwap(false, true) {
		c.writePokes.Add(1)
		go func() {
			c.wPokedAt.Store(monoNow())
			c.nc.SetWriteDeadline(pastDeadline)
			c.wPoking.Store(false)
		}()
	}
}

// errDeadlineIgnored: a write made no progress for a write timeout after
// a past write deadline was set on the connection to end it.
var errDeadlineIgnored = fmt.Errorf("%w (a past write deadline did not end the write)", errWriteTimeout)

// joinBeat makes c a member of the beat, which watches its writes that
// the watchdog's scans do not (those that begin while c is off their
// list: a worker's answer, a stream's message, a go-away). Such a write
// sets a write deadline of its own; over a net.Conn that ignores it (a
// wrapper whose SetWriteDeadline does nothing) it blocked for ever. The
// beat sets a past deadline on a write it sees under way for the write
// timeout, and closes the connection a write timeout after that did
// nothing (see beat). Called by the writer role, once, before c's first
// such write: a connection that never writes off the list (nor goes
// away) costs the beat nothing.
func (c *serverConn) joinBeat() {
	c.out.ww = &writeWatch{}
	c.beatE.Store(beats.join(c, max(c.out.timeout/4, 1)))
	if c.closed.Load() {
		// close may have looked before the store: one of the two
		// leaves (leave is idempotent).
		if e := c.beatE.Swap(nil); e != nil {
			beats.leave(e)
		}
	}
}

// beat is the beat's look at c's write under way, if any (see
// outbox.watchWrite): one still stuck a write timeout after the past
// deadline the beat set closes the connection.
func (c *serverConn) beat(now int64) {
	if c.closed.Load() {
		return
	}
	if c.out.watchWrite(now) && c.wClosing.CompareAndSwap(false, true) {
		// close takes the server's lock and may wait: not on the beat.
		go c.close(errDeadlineIgnored)
	}
}
