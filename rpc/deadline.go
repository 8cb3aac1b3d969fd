package rpc

import (
	"context"
	"time"
)

// Deadlines on the wire.
//
// Client: a call whose ctx has a deadline carries the time left, in
// microseconds, in the request's timeout extension field (wire.AppendRequest);
// relative, so the two hosts' clocks need not agree. A call (or stream
// open) whose deadline has passed is not sent: it fails with
// context.DeadlineExceeded. The time the request
// spends in the client's queue and on the network is not counted: the
// server's deadline is a little later than the caller's.
//
// Server: the read loop turns the timeout into a deadline on its
// monotonic clock when it parses the request (job.dl). Just before the
// handler would run (after any wait for a pipelined promise or for a free
// job), a call whose deadline has passed is answered 504 with the not-run
// flag, without running it; it is not retryable (errors.Is
// context.DeadlineExceeded, not ErrGoAway). The handler's ctx reports the
// deadline (Deadline, Err) at the cost of a clock read. Its Done channel
// is armed lazily: a call with a deadline whose handler never calls Done
// costs no timer at all; the first Done of such a call arms the job's own
// timer (allocated once per job, then Reset), registers the job with its
// connection (so that the connection's end closes the channel too), and
// the call's end disarms it. The channel is reused by the job's next call
// unless it was closed.

// monoEpoch anchors the monotonic clock the server's deadlines use: a wall
// clock step cannot move them.
var monoEpoch = time.Now()

// monoNow is the monotonic time in ns since monoEpoch (always > 0 after
// the first nanosecond).
func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// monoTime is the time.Time of a monoNow value (with a monotonic reading).
func monoTime(t int64) time.Time { return monoEpoch.Add(time.Duration(t)) }

// maxTimeoutMicros bounds a timeout read from the wire so that the
// deadline cannot overflow (about 146 years).
const maxTimeoutMicros = 1 << 62 / 1000

// deadlineAfter is the deadline of a call with the given timeout that
// arrives at now.
func deadlineAfter(now int64, micros uint64) int64 {
	return now + int64(min(micros, maxTimeoutMicros))*int64(time.Microsecond)
}

// timeoutMicros is what a request carries for a ctx deadline dl: the time
// left in whole microseconds, at least 1 (0 would mean no deadline).
// passed reports that no time is left: the client does not send such a
// call (it fails with context.DeadlineExceeded, as gRPC-go's does, even
// while the ctx's Done is not closed yet, its timer late): sent with 1 µs,
// it could still find its deadline ahead on the server and run there.
func timeoutMicros(dl time.Time) (micros uint64, passed bool) {
	left := time.Until(dl)
	if left <= 0 {
		return 1, true
	}
	return max(uint64(left/time.Microsecond), 1), false
}

// deadlineRefusal is the body of the 504 answer to a call whose deadline
// had passed before it could run.
const deadlineRefusal = "deadline exceeded before the call ran"

// expired reports whether the call's deadline has passed.
func (j *job) expired() bool {
	dl := j.dl.Load()
	return dl != 0 && passed(dl)
}

// passed reports whether the monoNow time dl has come. Kept out of line
// so that expired, asked once per call, inlines: most calls have no
// deadline and read no clock.
//
//go:noinline
func passed(dl int64) bool { return monoNow() >= dl }

// armDone returns the call's done channel, arming it on the call's first
// Done (see the comment at the top of this file).
func (j *job) armDone() <-chan struct{} {
	j.dmu.Lock()
	defer j.dmu.Unlock()
	if j.armed {
		return j.dch
	}
	// Before the look at the call's state (running), which finish, or
	// runInline's compare-and-swap of c.inl, clears before it looks at
	// armedAny: one of the two sees the other's store. The deadline is
	// read after that look: the read loop stores it before it makes the
	// call look running (live, c.inl), so a running call's is seen.
	j.armedAny.Store(true)
	run := j.running()
	dl := j.dl.Load()
	if dl == 0 && !run {
		// A late Done (see job.cc) that read the deadline, or the
		// liveness, of a call now over: that call's ctx is done. Nothing
		// is armed, so the job's next call finds its channel as it
		// should.
		return closedDone
	}
	c := j.conn()
	j.armed, j.dconn = true, c
	if j.dch == nil {
		j.dch = make(chan struct{})
	}
	// No AfterFunc is registered before the first arm: fire has nothing
	// to run here.
	if c.ctx.Err() != nil || j.canceled.Load() {
		j.fire()
		return j.dch
	}
	if dl != 0 {
		d := time.Duration(dl - monoNow())
		if d <= 0 {
			j.fire()
			return j.dch
		}
		if j.dtimer == nil {
			j.dtimer = time.AfterFunc(d, j.expire)
		} else {
			j.dtimer.Reset(d)
		}
	}
	c.dmu.Lock()
	if c.stopArm == nil {
		// The connection's end (or its base context's) closes the
		// channels of its armed calls; registered once per connection.
		c.stopArm = context.AfterFunc(c.ctx, c.fireArmed)
	}
	dead := c.armDead
	if !dead {
		c.armedJobs = append(c.armedJobs, j)
		j.darm = int32(len(c.armedJobs))
	}
	c.dmu.Unlock()
	if dead {
		j.runAfter(j.fire()) // nothing registered yet, see above
	}
	return j.dch
}

// passed closes the call's Done once its deadline has passed (Err found
// it so): armed, it fires now, not when its timer runs; not armed yet,
// armDone fires it at once.
func (j *job) passed() {
	j.dmu.Lock()
	if !j.armed {
		j.dmu.Unlock()
		j.armDone()
		return
	}
	run := j.fire() // nil when fired already
	j.dmu.Unlock()
	j.runAfter(run)
}

// closedDone is a closed channel: the Done of a call that is over.
var closedDone = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// fire closes the armed channel once and returns the AfterFunc callbacks
// to run (after j.dmu is released: run them with runAfter); j.dmu held.
func (j *job) fire() []afterFunc {
	if j.fired {
		return nil
	}
	j.fired = true
	close(j.dch)
	run := j.afs
	j.afs = nil
	j.afWG.Add(len(run))
	return run
}

// runAfter runs the callbacks fire returned; the call's end waits for them
// (endDeadline), so the job's Err is the call's while they run.
func (j *job) runAfter(run []afterFunc) {
	for _, a := range run {
		a.f()
		j.afWG.Done()
	}
}

// afterFunc is a callback registered with job.AfterFunc.
type afterFunc struct {
	f  func()
	id uint32
}

// AfterFunc makes the handler's ctx an afterFuncer for the context
// package: context.WithCancel, WithTimeout... on a call's ctx with a
// deadline register their cancellation here instead of starting a
// goroutine that would watch the reused job past the call. f runs once
// the call's Done is closed (in its own goroutine if it already is); stop
// unregisters it and reports whether it had not started.
func (j *job) AfterFunc(f func()) (stop func() bool) {
	if j.dl.Load() == 0 && !j.running() {
		return context.AfterFunc(j.conn().ctx, f)
	}
	j.Done() // arms
	j.dmu.Lock()
	defer j.dmu.Unlock()
	if j.fired || !j.armed {
		j.afWG.Add(1)
		go func() {
			defer j.afWG.Done()
			f()
		}()
		return func() bool { return false }
	}
	j.afID++
	id := j.afID
	j.afs = append(j.afs, afterFunc{f, id})
	return func() bool {
		j.dmu.Lock()
		defer j.dmu.Unlock()
		for i, a := range j.afs {
			if a.id == id {
				j.afs = append(j.afs[:i], j.afs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// expire is the job's timer function. A late fire meant for an earlier
// call of the job finds the current call's deadline still ahead and
// re-arms for it, or finds nothing armed.
func (j *job) expire() {
	j.dmu.Lock()
	if !j.armed || j.fired || j.dl.Load() == 0 {
		// Nothing armed, or armed for a call without a deadline (a
		// caller's cancel may end it, cancel.go): a late fire meant for
		// an earlier call of the job.
		j.dmu.Unlock()
		return
	}
	if d := time.Duration(j.dl.Load() - monoNow()); d > 0 {
		j.dtimer.Reset(d)
		j.dmu.Unlock()
		return
	}
	run := j.fire()
	j.dmu.Unlock()
	j.runAfter(run)
}

// endDeadline ends the deadline of a call that had one: it disarms the
// done channel (keeping it for the next call unless it was closed) and
// clears the deadline. The job's owner calls it when the call is answered.
func (j *job) endDeadline() {
	j.dmu.Lock()
	j.armedAny.Store(false)
	if j.armed {
		if j.dtimer != nil {
			j.dtimer.Stop() // nil when Done was first called after the deadline
		}
		c := j.dconn
		c.dmu.Lock()
		if i := j.darm; i > 0 {
			last := len(c.armedJobs) - 1
			moved := c.armedJobs[last]
			c.armedJobs[i-1] = moved
			moved.darm = i
			c.armedJobs[last] = nil
			c.armedJobs = c.armedJobs[:last]
			j.darm = 0
		}
		c.dmu.Unlock()
		if j.fired || len(j.afs) > 0 {
			// Closed, or an AfterFunc registered on it outlives the call
			// (dropped below: a ctx the handler derived and did not
			// cancel, a client's watch of the call's ctx, ctxwatch.go):
			// the next call gets a channel of its own. Reused, the
			// channel would tell whoever registered that the next call's
			// ctx is theirs, and its end would not reach them.
			j.dch = nil
		}
		j.armed, j.fired, j.dconn = false, false, nil
		clear(j.afs) // contexts derived and not canceled by the handler
		j.afs = j.afs[:0]
	}
	j.dmu.Unlock()
	// Callbacks of a fire still running read the call's Err: the
	// deadline stays until they are done.
	j.afWG.Wait()
	j.dl.Store(0)
}

// fireArmed closes the done channels of the connection's armed calls; it
// runs once, when the connection's context is done.
func (c *serverConn) fireArmed() {
	c.dmu.Lock()
	jobs := c.armedJobs
	c.armedJobs = nil
	c.armDead = true
	for _, j := range jobs {
		j.darm = 0
	}
	c.dmu.Unlock()
	for _, j := range jobs {
		j.dmu.Lock()
		var run []afterFunc
		if j.armed && j.dconn == c {
			run = j.fire()
		}
		j.dmu.Unlock()
		j.runAfter(run)
	}
}
