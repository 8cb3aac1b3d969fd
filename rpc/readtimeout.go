package rpc

import (
	"fmt"
	"time"
)

// Read deadlines of a server connection's read loop. Three limits share
// the one read deadline of the socket:
//
//   - frame progress (WithReadTimeout, WithMinReadRate): a frame that has
//     begun must finish within readTimeout plus one second per minReadRate
//     bytes of it received, counted from the first time the loop waited
//     inside it;
//   - idle (WithIdleTimeout): no request for idleTimeout while no call runs
//     sends a go-away; the connection closes when the peer acknowledges
//     it or after the shutdown grace;
//   - the grace after that idle go-away.
//
// Times are monoNow values. Setting a deadline costs a timer update, so
// it is set lazily: only when the deadline in force would fire later than
// the limit wants. A deadline that fires early (the limit moved on since
// it was set) is simply set again (deadlineFired), so a wait between
// frames sets no deadline at all once one is armed.
//
// While the connection is on the watchdog's list (it ran calls inline
// lately, see Server.watch), no deadline is set at all: the read loop
// publishes what its wait wants (rdLimit) and the watchdog's scans, which
// come every millisecond or so while calls flow (at most wdSlow apart
// while the connection is listed), end the wait by setting a deadline in
// the past once that time has passed (pokeRead). A deadline on the socket
// is a runtime timer, and while a timer is pending in a P's heap every
// scheduling on that P reads the clock: a busy connection keeps none. The
// scan that takes the connection off the list sets the deadline its wait
// wants (unlistRead), so a connection that went quiet is bounded as
// before and costs no scan.

// armWait sets the read deadline before the loop blocks in Next.
// It returns the time it read (monoNow), 0 when it read none.
func (c *serverConn) armWait() (now int64) {
	o := &c.s.opts
	if o.idleTimeout <= 0 && o.readTimeout <= 0 && c.nJobs == 0 {
		return 0
	}
	now = monoNow()
	if c.active {
		c.active = false
		c.idleSince = now
	}
	if c.r.Buffered() != 0 && o.readTimeout > 0 {
		if c.frameStart == 0 {
			c.frameStart = now
		}
		c.waitStart = 0
		c.deadline(c.frameStart + c.frameAllowance(c.r.Buffered()))
		return now
	}
	c.frameStart = 0
	c.waitStart = now
	c.deadline(c.betweenFrames(now))
	return now
}

// frameAllowance is the time a frame of which n bytes arrived gets from its
// start: the read timeout plus a second per minReadRate bytes.
func (c *serverConn) frameAllowance(n int) int64 {
	o := &c.s.opts
	allow := int64(o.readTimeout)
	if o.minReadRate > 0 {
		allow += int64(n) * int64(time.Second) / int64(o.minReadRate)
	}
	return allow
}

// betweenFrames is the deadline for a wait that begins between frames: the
// idle limit (or none). A frame that begins during the wait ends the wait
// (frame.Reader.Wait, see readLoop) and gets its own deadline, so a quiet
// connection is not woken before its idle limit: 10,000 idle connections
// cost no CPU (BenchmarkIdleCPU). Only while the connection holds jobs or
// runs calls is the wait cut at one read timeout: the wake-up gives the
// jobs back once the connection is quiet, and counts a call still
// running as activity for the idle limit (see deadlineFired). A
// connection that runs one call at a time gives its job back as it waits
// (releaseSpare), so it is not woken before its idle limit at all; one
// that held several jobs is woken a read timeout after it came to hold
// them (trimAt), and again a read timeout later while calls still run
// (each wake-up gives back the jobs left unused, trimJobs), then at its
// idle limit. (10,000 sessions each calling every
// few seconds used to cost 1,000 of these wake-ups a second, and two read
// deadline changes each.)
func (c *serverConn) betweenFrames(now int64) int64 {
	o := &c.s.opts
	at := noDeadline
	switch {
	case c.idleAway != 0:
		at = c.idleAway + int64(o.shutdownGrace)
	case o.idleTimeout > 0:
		at = c.idleSince + int64(o.idleTimeout)
	}
	if c.nJobs > 1 {
		// Several jobs: those left unused go back a read timeout apart
		// (trimJobs), however often calls come.
		if c.trimAt == 0 {
			rt := o.readTimeout
			if rt <= 0 {
				rt = quietWake()
			}
			c.trimAt = now + int64(rt)
		}
		at = min(at, c.trimAt)
	} else {
		c.trimAt = 0
	}
	if o.readTimeout > 0 && (c.nJobs > 0 || c.inflight.Load() > 0) {
		at = min(at, now+int64(o.readTimeout))
	} else if c.nJobs > 0 {
		// No read timeout: the jobs are given back DefaultReadTimeout
		// after the last call all the same. A connection kept the jobs
		// of its busiest moment (up to the in-flight limit, each with
		// buffers of up to 256 KiB) until its idle limit, or for ever
		// without one.
		at = min(at, now+int64(quietWake()))
	}
	return at
}

// noDeadline is the deadline of a wait no limit bounds.
const noDeadline = int64(1<<63 - 1)

// deadline makes the coming wait end no later than at: by the watchdog's
// scans while the connection is on their list, else by the read deadline.
func (c *serverConn) deadline(at int64) {
	c.rdMu.Lock()
	if at == noDeadline {
		c.rdLimit.Store(0)
	} else {
		c.rdLimit.Store(at)
	}
	if c.wdListed.Load() {
		// The scans watch the wait: no timer.
		if c.armed != 0 || c.rdPast {
			c.nc.SetReadDeadline(time.Time{})
			c.armed, c.rdPast = 0, false
		}
	} else {
		c.armLocked(at)
	}
	c.rdMu.Unlock()
}

// armLocked makes the read deadline fire no later than at. Called with
// rdMu held.
func (c *serverConn) armLocked(at int64) {
	if c.armed != 0 && c.armed <= at && !c.rdPast {
		return // fires earlier: deadlineFired sets it again then
	}
	c.armed, c.rdPast = at, false
	if at == noDeadline {
		c.armed = 0
		c.nc.SetReadDeadline(time.Time{})
		return
	}
	c.nc.SetReadDeadline(monoTime(at))
}

// pokeRead ends the read loop's wait when the time it wants has come (a
// scan calls it for a listed connection): it sets a read deadline in the
// past, and deadlineFired looks at the limits.
func (c *serverConn) pokeRead(now int64) {
	c.rdMu.Lock()
	if at := c.rdLimit.Load(); at != 0 && now >= at && c.wdListed.Load() && !c.rdPast {
		c.rdPast = true
		c.readPokes.Add(1)
		c.nc.SetReadDeadline(pastDeadline)
	}
	c.rdMu.Unlock()
}

// unlistRead sets the read deadline the read loop's wait wants, once the
// watchdog has taken the connection off its list (c.wdListed cleared
// first: a wait that begins after this sees it and sets its own).
func (c *serverConn) unlistRead() {
	c.rdMu.Lock()
	// Listed again meanwhile (it runs in a goroutine of its own, see
	// scanLocked): the scans watch the wait.
	if at := c.rdLimit.Load(); at != 0 && !c.wdListed.Load() {
		c.armLocked(at)
	}
	c.rdMu.Unlock()
}

// pastDeadline is a deadline that has passed: a read or write under it
// fails at once.
var pastDeadline = time.Unix(1, 0)

// deadlineFired handles a read deadline that expired while Next waited. It
// reports whether the loop goes on reading; when not, the connection is
// closed.
func (c *serverConn) deadlineFired() bool {
	o := &c.s.opts
	now := monoNow()
	c.rdMu.Lock()
	c.rdPast = true // the deadline in force has passed: deadline sets or clears it
	c.rdMu.Unlock()
	c.s.readWakes.Add(1)
	defer func() { c.waitStart = 0 }()
	if n := c.r.Buffered(); n != 0 && o.readTimeout > 0 {
		if c.frameStart == 0 {
			// The frame began during a wait that started between frames:
			// its clock starts with that wait (it cannot have begun
			// earlier; its bytes earn it time as usual).
			c.frameStart = now
			if c.waitStart != 0 {
				c.frameStart = c.waitStart
			}
		}
		allow := c.frameAllowance(n)
		if now-c.frameStart < allow {
			c.deadline(c.frameStart + allow)
			return true
		}
		c.close(fmt.Errorf("read timeout: frame not finished %v after it began (%d bytes received; WithReadTimeout %v, WithMinReadRate %d B/s)",
			time.Duration(now-c.frameStart).Round(time.Millisecond), n, o.readTimeout, o.minReadRate))
		return false
	}
	busy := c.inflight.Load() > 0
	if !busy {
		// Quiet between frames with no call running: hold no jobs.
		c.releaseJobs()
		c.trimAt = 0
		if f := jobsBackTest.Load(); f != nil {
			(*f)(c)
		}
	} else if c.trimAt != 0 && now >= c.trimAt {
		c.trimJobs()
		c.trimAt = 0
	}
	if c.idleAway != 0 {
		// Waiting for the peer to acknowledge the idle go-away.
		if !busy && now-c.idleAway >= int64(o.shutdownGrace) && c.outIdle() {
			c.close(nil)
			return false
		}
		c.deadline(max(c.betweenFrames(now), now+int64(time.Millisecond)))
		return true
	}
	if busy {
		c.idleSince = now // a running call is activity
	}
	if o.idleTimeout <= 0 || now-c.idleSince < int64(o.idleTimeout) {
		c.deadline(c.betweenFrames(now))
		return true
	}
	// Idle: ask the peer to go away rather than close under a call it may
	// be sending right now; calls that cross the go-away are refused.
	c.idleAway = now
	c.goAway()
	if c.closed.Load() {
		return false
	}
	c.deadline(c.betweenFrames(now))
	return true
}
