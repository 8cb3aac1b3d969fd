package rpc

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Jobs of a server connection. A connection holds jobs only while calls
// flow: the read loop takes one for each call (its spare one, else one from
// the connection's free list, else a new one from the server-wide pool, up
// to the in-flight limit). A connection that holds one job gives it back
// to the pool whenever its read loop waits (releaseSpare); one that holds
// more gives them all back at a wake-up of its read loop (a read timeout
// after it came to hold more than one, DefaultReadTimeout with the read
// timeout off) that finds no call running (releaseJobs), and, at one that
// finds calls running, the jobs that sat unused in the free list since
// the wake-up before (trimJobs): a peer that keeps sending small calls
// does not keep the jobs of an earlier burst. The free list is a slice under a mutex, not a channel
// of in-flight-limit capacity: an idle connection keeps no 2 KiB channel
// buffer.
type jobFree struct {
	mu      sync.Mutex
	jobs    []*job
	low     int           // fewest jobs the list held since the last trimJobs: jobs[:low] sat unused
	waiting bool          // the read loop waits in acquire for a job
	wake    chan struct{} // capacity 1: a job came back while it waited
}

// jobPool holds the jobs of quiet connections, for any connection.
var jobPool sync.Pool

// keptJobBuffer: a job's buffers above this are dropped when it goes back
// to the pool (a connection keeps up to maxKeptBuffer while calls flow).
const keptJobBuffer = 4 << 10

// newJob returns a job bound to c, from the pool when one is there.
func (c *serverConn) newJob() *job {
	j, _ := jobPool.Get().(*job)
	if j == nil {
		j = &job{resp: make([]byte, 0, 512)}
	}
	j.c = c
	j.cc.Store(c)
	return j
}

// putFree gives a job back to its connection (worker side).
func (c *serverConn) putFree(j *job) {
	f := &c.free
	f.mu.Lock()
	f.jobs = append(f.jobs, j)
	w := f.waiting
	f.waiting = false
	f.mu.Unlock()
	if w {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// takeFree pops a job off the free list; nil when it is empty. With wait,
// an empty list records that the read loop is about to wait for one.
func (c *serverConn) takeFree(wait bool) *job {
	f := &c.free
	f.mu.Lock()
	var j *job
	if n := len(f.jobs); n > 0 {
		j = f.jobs[n-1]
		f.jobs[n-1] = nil
		f.jobs = f.jobs[:n-1]
		f.low = min(f.low, n-1)
	} else if wait {
		f.waiting = true
	}
	f.mu.Unlock()
	return j
}

// acquire returns a free job, taking a new one while fewer than the
// in-flight limit exist, else waiting for one (backpressure: the
// connection is not read meanwhile). nil: the connection closed.
func (c *serverConn) acquire() *job {
	// The read loop's spare job (the one its previous inline call
	// ended with) inline, without a call: the common case.
	if j := c.spare; j != nil {
		c.spare = nil
		return j
	}
	return c.acquireMore()
}

// acquireMore is acquire without a spare job.
func (c *serverConn) acquireMore() *job {
	if j := c.takeFree(false); j != nil {
		return j
	}
	if c.nJobs < c.s.opts.maxInFlight {
		c.nJobs++
		j := c.newJob()
		c.linkJob(j, 0)
		if c.cx != nil && c.nJobs > len(c.cx.b) {
			c.rebucket(2 * len(c.cx.b))
		}
		return j
	}
	// The answers written so far need not wait too.
	if err := c.flushOwed(); err != nil {
		c.close(fmt.Errorf("write: %w", err))
		return nil
	}
	c.hold()
	c.armSlotProbe()
	defer c.slotProbe.Stop()
	for {
		if j := c.takeFree(true); j != nil {
			if c.closed.Load() {
				// The connection died while we waited (the job comes back
				// after its answer failed): run nothing more.
				c.spare = j
				return nil
			}
			return j
		}
		select {
		case <-c.free.wake:
		case <-c.done:
			return nil
		}
		// No job came back: the wake-up was most likely slotProbe's.
		if err := socketError(c.nc); err != nil {
			c.close(fmt.Errorf("read: %w (seen while the read loop waited for one of its %d in-flight slots)", err, c.s.opts.maxInFlight))
			return nil
		}
		c.armSlotProbe()
	}
}

// armSlotProbe sets slotProbe to wake the read loop's wait for an
// in-flight slot a read timeout from now (DefaultReadTimeout with the read
// timeout off). While it waits the read loop reads no byte, so nothing
// else would learn that the peer left: with handlers that wait on their
// ctx only, no slot came back, and a connection whose peer had reset it
// stayed, with its read loop, handlers and buffers, for ever
// (TestSlotWaitSeesPeerReset). At each wake-up with no slot, acquire
// looks at the socket's pending error (socketError: a reset, keepalive's
// timeout), reading nothing, and closes the connection on one, which
// cancels the calls' ctx. A peer's half-close sets no error and is no
// leave: the calls in flight, and those still unread, are answered
// (TestSlotWaitHalfCloseAnswered). A connection that is no socket (nor
// TLS over one) has no such look.
func (c *serverConn) armSlotProbe() {
	d := c.s.opts.readTimeout
	if d <= 0 {
		d = DefaultReadTimeout
	}
	if c.slotProbe == nil {
		c.slotProbe = time.AfterFunc(d, func() {
			select {
			case c.free.wake <- struct{}{}:
			default:
			}
		})
	} else {
		c.slotProbe.Reset(d)
	}
}

// releaseJobs gives the connection's jobs back to the server-wide pool.
// The read loop calls it between frames with no call running (no job is
// out), so it holds none while the connection is quiet.
func (c *serverConn) releaseJobs() {
	f := &c.free
	f.mu.Lock()
	jobs := f.jobs
	f.jobs, f.low = nil, 0
	f.mu.Unlock()
	if c.spare != nil {
		jobs = append(jobs, c.spare)
		c.spare = nil
	}
	for _, j := range jobs {
		c.putJob(j)
	}
	c.fitBuckets()
}

// quietWake is the time after which a connection with the read timeout
// off is woken to give its jobs back (betweenFrames): DefaultReadTimeout,
// or quietWakeTest when a test set it.
func quietWake() time.Duration {
	if d := quietWakeTest.Load(); d != 0 {
		return time.Duration(d)
	}
	return DefaultReadTimeout
}

// quietWakeTest, when not 0, replaces DefaultReadTimeout in quietWake (in
// nanoseconds). Only tests set it (TestJobsGivenBackWithoutReadTimeout),
// so that they need not wait 10 s; atomic because connections other tests
// left may read it.
var quietWakeTest atomic.Int64

// jobsBackTest, when set (tests), runs on the read loop of a connection
// just after a wake-up that found it quiet gave its jobs back
// (deadlineFired), so that a test can look at the connection's state
// there.
var jobsBackTest atomic.Pointer[func(*serverConn)]

// trimJobs gives back to the server-wide pool the jobs that sat in the
// free list, never taken, since the last trim (the read loop calls it at
// the wake-up trimAt sets, a read timeout apart, while the connection
// holds more than one job). Without it a connection that once ran many
// calls at once kept every job, each with buffers of up to 256 KiB, for
// as long as one small call came within each read timeout: the quiet
// wake-up that gives them back (releaseJobs) never came
// (TestJobsNotPinnedByTrickle).
func (c *serverConn) trimJobs() {
	f := &c.free
	f.mu.Lock()
	k := min(f.low, len(f.jobs))
	for _, j := range f.jobs[:k] {
		c.putJob(j)
	}
	n := copy(f.jobs, f.jobs[k:])
	clear(f.jobs[n:])
	f.jobs = f.jobs[:n]
	f.low = n
	f.mu.Unlock()
	c.fitBuckets()
}

// releaseSpare gives the connection's only job back to the server-wide pool
// when it is the read loop's spare (no call is out) and its buffers are
// small: the read loop calls it as it waits, so that a connection running
// small calls one at a time holds no job while it waits and needs no
// wake-up to give it back (see betweenFrames). A connection holding more
// jobs, or one with larger buffers (reused while its calls flow), keeps
// them while it waits and gives them back at that wake-up, a read timeout
// later.
func (c *serverConn) releaseSpare() {
	if j := c.spare; c.nJobs == 1 && j != nil && cap(j.req) <= keptJobBuffer && cap(j.resp) <= keptJobBuffer && cap(j.ext) <= keptJobBuffer {
		c.spare = nil
		c.putJob(j)
	}
}

// putJob gives one of the connection's jobs, not in use, to the pool.
func (c *serverConn) putJob(j *job) {
	c.nJobs--
	c.unlinkJob(j)
	j.c, j.h = nil, nil
	j.cc.Store(retiredConn)
	if cap(j.req) > keptJobBuffer {
		j.req = nil
	}
	if cap(j.resp) > keptJobBuffer {
		j.resp = make([]byte, 0, 512)
	}
	if cap(j.ext) > keptJobBuffer {
		j.ext = nil
	}
	if cap(j.rmd) > keptJobBuffer {
		j.rmd = nil
	}
	jobPool.Put(j)
}
