package rpc

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Read deadlines of a server connection's read loop. These limits share
// the one read deadline of the socket:
//
//   - frame progress (WithReadTimeout, WithMinReadRate): a frame that has
//     begun must finish within readTimeout plus one second per minReadRate
//     bytes of it received, counted from the first time the loop waited
//     inside it;
//   - idle (WithIdleTimeout): no request for idleTimeout while no call runs
//     sends a go-away; the connection closes when the peer acknowledges
//     it or after the shutdown grace;
//   - age (WithMaxConnectionAge): the connection's age, drawn at its
//     accept, sends a go-away too (a timer of its own per connection
//     would have been one more pending for its whole life, on busy
//     connections too, which keep none: see Server.watch);
//   - the wait after the read loop's own go-away (idle or age): the
//     connection closes when no call runs and the peer acknowledged it,
//     or ran no call for the shutdown grace, and at the latest the age's
//     grace after the go-away.
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
	if o.idleTimeout <= 0 && o.readTimeout <= 0 && c.nJobs == 0 && c.away == 0 {
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
		c.deadline(c.ageBound(c.frameStart + c.frameAllowance(c.r.Buffered())))
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
	case c.away > 0:
		at = c.awayLimit(now)
	case o.idleTimeout > 0:
		at = c.idleSince + int64(o.idleTimeout)
	}
	if c.away < 0 {
		at = min(at, -c.away) // the age's go-away
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
		if (c.armed != 0 || c.rdPast) && c.armed != armedWoken {
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
	if c.armed != 0 && c.armed <= at && (!c.rdPast || c.armed == armedWoken) {
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
	if c.armed == armedWoken {
		c.armed = 0 // wakeRead's, seen: the next wait's deadline replaces it
	}
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
			// The age (and its grace) is kept inside a frame too: a
			// connection whose read loop always finds a frame under way
			// as it waits (a peer streaming large messages) must not
			// escape it.
			if c.away < 0 && now >= -c.away {
				c.ageAway(now)
			} else if c.away > 0 && c.graceEnded(now) {
				return false
			}
			if c.closed.Load() {
				return false
			}
			c.deadline(c.ageBound(c.frameStart + allow))
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
	if c.away > 0 {
		return c.awayFired(now)
	}
	if c.away < 0 && now >= -c.away {
		c.ageAway(now)
		if c.closed.Load() {
			return false
		}
		c.deadline(c.betweenFrames(now))
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
	c.away = max(now, 1)
	c.goAway()
	if c.closed.Load() {
		return false
	}
	c.deadline(c.betweenFrames(now))
	return true
}

// awayLimit is when the read loop's wait ends once it sent its own
// go-away (c.away > 0): when the connection may be drained (see
// drained) or, at the latest, at the end of the age's grace. While calls
// run, the last one's end wakes the wait (endUnit, wakeRead); the wait
// also ends a read timeout later (DefaultReadTimeout without one), as
// the waits of a connection running calls do.
func (c *serverConn) awayLimit(now int64) int64 {
	o := &c.s.opts
	at := noDeadline
	switch {
	case c.inflight.Load() != 0:
		rt := o.readTimeout
		if rt <= 0 {
			rt = quietWake()
		}
		at = now + int64(rt)
	case c.acked.Load():
		at = now // drained once the answers are written
	default:
		at = c.quietSince.Load() + int64(o.shutdownGrace)
	}
	if g := o.maxAgeGrace; g > 0 {
		at = min(at, c.away+int64(g))
	}
	return at
}

// awayFired is deadlineFired once the read loop sent its own go-away: it
// closes the connection when it is drained, or when the age's grace
// ended, with what still runs cut (logged).
func (c *serverConn) awayFired(now int64) bool {
	if c.drained(now) {
		c.close(nil)
		return false
	}
	if c.graceEnded(now) {
		return false
	}
	// Not yet (answers are being written: look again a millisecond on).
	c.deadline(max(c.betweenFrames(now), now+int64(time.Millisecond)))
	return true
}

// ageAway sends the go-away of the connection's age (WithMaxConnectionAge),
// due at or before now. The calls and streams in flight go on; awayFired
// closes the connection.
func (c *serverConn) ageAway(now int64) {
	c.away = max(now, 1)
	c.goAway()
}

// graceEnded closes the connection, and reports true, when the age's
// grace after the read loop's own go-away (c.away > 0) has ended: what
// still runs, or is still being written or read, is cut, and that is
// logged and counted as dropped.
func (c *serverConn) graceEnded(now int64) bool {
	g := c.s.opts.maxAgeGrace
	if g <= 0 || now-c.away < int64(g) {
		return false
	}
	n, buffered := c.inflight.Load(), c.r.Buffered()
	if n != 0 || buffered != 0 || !c.outIdle() {
		c.close(fmt.Errorf("max connection age: grace of %v ended %v after the go-away with %d calls or streams still running, %d bytes of a frame received, or answers not written (WithMaxConnectionAge)",
			g, time.Duration(now-c.away).Round(time.Millisecond), n, buffered))
	} else {
		c.close(nil)
	}
	return true
}

// ageBound is at, bounded by the read loop's own go-away: before it, the
// time the age's is due; after it, the end of the age's grace.
func (c *serverConn) ageBound(at int64) int64 {
	switch {
	case c.away < 0:
		return min(at, -c.away)
	case c.away > 0 && c.s.opts.maxAgeGrace > 0:
		return min(at, c.away+int64(c.s.opts.maxAgeGrace))
	}
	return at
}

// wakeRead ends the read loop's wait now, or its next one, so that it
// looks at its limits (a read loop that sent its own go-away waits for
// the last call to end: see awayLimit). It sets a read deadline in the
// past, as pokeRead does, marked armedWoken: a read loop about to set
// the deadline of its next wait, its limits computed before the wake
// (the call still counted), keeps it (deadline, armLocked) instead of
// replacing it, until deadlineFired has seen it.
func (c *serverConn) wakeRead() {
	c.rdMu.Lock()
	if !c.closed.Load() {
		c.armed, c.rdPast = armedWoken, false
		c.nc.SetReadDeadline(pastDeadline)
	}
	c.rdMu.Unlock()
}

// armedWoken is serverConn.armed for wakeRead's deadline (a monoNow
// value long past).
const armedWoken = 1

// connAge is the age of a connection accepted now under
// WithMaxConnectionAge(age, ...): age give or take up to 10 %, uniformly.
func connAge(age time.Duration) time.Duration {
	return ageWithin(age, rand.Uint64())
}

// ageWithin is age moved by up to a tenth of it either way, by u (any
// value, spread over the range).
func ageWithin(age time.Duration, u uint64) time.Duration {
	span := uint64(age / 10)
	return age - time.Duration(span) + time.Duration(u%(2*span+1))
}
