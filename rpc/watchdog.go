package rpc

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/frame"
)

// runInline runs a call on the read loop's goroutine, which saves handing
// it to a worker (a goroutine wake-up per call). While the handler runs,
// c.inl holds its sequence number; the server's watchdog scans, which look
// at the connections that ran calls lately (see wdTick for when they
// come), take the read loop role away from a handler still running at two
// consecutive scans and dispatch it to a worker, which goes on reading: a
// slow handler delays the calls behind it by one to two milliseconds while
// calls flow on other connections or none did lately (by up to about
// wdSlow+3*wdTick when it began just as they stopped: the watchdog's timer
// had backed off), and then runs on as a worker call. The answer of an inline
// call is appended to the outbox and written by the read loop once no
// further request is buffered.
func (c *serverConn) runInline(j *job, g *inlineGuard) int {
	c.seq++
	seq := c.seq
	if g.j != j {
		// Most often the job of the call before (see inlineGuard); the
		// watchdog finds it by inlJob, stored before c.inl.
		g.j = j
		c.inlJob.Store(j)
	}
	c.inl.Store(seq)
	if !c.wdListed.Load() {
		c.s.watch(c)
	}
	if c.s.wdParked.Load() {
		c.s.wakeWatchdog()
	}
	var status uint32
	var body []byte
	// No defer here: the read loop's recovers a panic and sees a
	// runtime.Goexit (readGuarded).
	g.seq = seq
	switch {
	case c.s.opts.observer != nil:
		status, body = c.call(j)
	case j.undo:
		status, body = c.invokeBody(j)
	default:
		// invokeBody for the common call, without its call: no deadline
		// (setExt sets j.undo), so none passed, and no promise target
		// (such a call runs on a worker). A result in j.resp itself
		// (its cap unchanged) that fits a frame, with no error and no
		// response metadata (SetResponseMetadata sets j.undo), needs
		// none of result's work.
		out, err := j.h(j, j.req, j.resp[:0])
		if err == nil && !j.undo && unsafe.SliceData(out) == unsafe.SliceData(j.resp) && cap(out) == cap(j.resp) && c.answerFits(len(out)) {
			status, body = StatusOK, out
		} else {
			status, body = c.result(j, out, err)
		}
	}
	g.seq = 0
	if !c.inl.CompareAndSwap(seq, 0) {
		// Taken over: answer like a worker and leave reading to the
		// goroutine that has the role now. The watchdog counted this
		// call in inflight on its own; doneOne ends it.
		c.waitTaken()
		c.finish(j, status, body, false)
		return reqLost
	}
	// Over, for its ctx: the compare-and-swap cleared c.inl, which
	// job.running looks at after its store to armedAny, looked at below
	// (see armDone). job.live was not set (see inlJob).
	if zapdebug || j.undo || j.armedAny.Load() || len(body) >= frame.DefaultWritevThreshold {
		c.finishAny(j, status, body, true)
		return reqNext
	}
	// Nothing for finishAny to undo or check (see job.undo; armedAny is
	// set by a Done or AfterFunc of the call): the small answer goes to
	// the read loop's buffer. An inline call has no promise table
	// (request sends pipelined calls to workers), and its handler stays
	// set (the next call sets it; putJob clears it).
	if !c.closed.Load() {
		c.inlineAnswer(status, j.pid, body)
	}
	c.spare = j // the read loop's next call takes it without a channel op
	return reqNext
}

// waitTaken is called by the goroutine whose inline call the watchdog
// took over, after its compare-and-swap of c.inl failed and before it
// finishes the call: the watchdog stores the job's live word between its
// compare-and-swap and its store of readerTaken (a few instructions;
// see takingOver), and finish must clear the word after that store, not
// before (a word left set would make the call look live after its end).
func (c *serverConn) waitTaken() {
	if c.inl.Load() == takingOver {
		takenWaits.Add(1)
		for c.inl.Load() == takingOver {
			runtime.Gosched()
		}
	}
}

// takingOverTest, when set (tests), runs in the watchdog's take-over of an
// inline call between its compare-and-swap of c.inl and its store of the
// call's live word; takenWaits counts the goroutines that waited in
// waitTaken (TestTakeoverLiveClearedAfterFinish).
var (
	takingOverTest atomic.Pointer[func(*serverConn)]
	takenWaits     atomic.Int64
)

// dispatch hands j to an idle worker, or starts a new one.
func (s *Server) dispatch(j *job) {
	select {
	case s.work <- j:
	default:
		s.workers.Add(1)
		go s.worker(j)
	}
}

// dispatchStream hands st, a stream whose handler is to run, to an idle
// worker, or starts a new one: a goroutine per stream cost an
// allocation per open (the go statement's arguments), an idle worker's
// hand-over none.
func (s *Server) dispatchStream(st *Stream) {
	select {
	case s.streamWork <- st:
	default:
		s.workers.Add(1)
		go s.streamWorker(st)
	}
}

// worker runs jobs and streams until told to exit; a nil j starts it
// idle.
func (s *Server) worker(j *job) { s.workLoop(j, nil) }

// streamWorker is a worker started for st.
func (s *Server) streamWorker(st *Stream) { s.workLoop(nil, st) }

func (s *Server) workLoop(j *job, st *Stream) {
	defer s.workers.Add(-1)
	for {
		if j != nil {
			if j.reader {
				// Taken from a slow inline handler: the calls already
				// buffered behind it go to workers (see request).
				j.c.spill = true
				j.c.readLoop()
			} else {
				j.c.run(j)
			}
		} else if st != nil {
			st.set.sc.runStream(st)
		}
		s.idleWorker()
		select {
		case j = <-s.work:
			st = nil
		case st = <-s.streamWork:
			j = nil
		case <-s.done:
			j, st = nil, nil
		}
		s.idleWork.Add(-1)
		if j == nil && st == nil {
			return
		}
	}
}

// Watchdog timing. A handler running inline is taken over when it is seen
// at two consecutive scans, which are at least wdTick apart (so after one
// to two wdTick while scans come every wdTick).
//
// Scans come from two places. A read loop about to block (its answers
// written) scans when the last scan is wdTick old (scanDue): while calls
// flow on any connection, that keeps scans about wdTick apart without any
// timer. The watchdog goroutine is the backstop for when they stop (a
// handler stuck on the only busy connection, a quiet server): its timer
// scans every wdTick while no read loop has scanned for two ticks, and
// while they do, it lets them and backs off, doubling its interval up to
// wdSlow. It parks after wdIdleTicks of its own scans in a row without an
// inline handler; a read loop starting one wakes it.
//
// Why not simply tick: a Go timer due within a millisecond or so makes
// every idle thread of the process sleep with a timeout (epoll_wait),
// which arms a kernel timer at each of the many sleep/wake transitions of
// a server answering sparse calls: measured on this (virtual) machine,
// a 1 ms ticker added 4 to 5 µs of server CPU to every call of a
// sequential ping-pong over 10,000 connections (a 10 ms one well under
// 1 µs), which was most of the gap to a plain goroutine-per-connection
// server (docs/BENCHMARK-HISTORY.md, "Many sessions"). And the backstop
// timer itself is not a runtime timer on Linux (see wdTimer): one pending
// in a P's heap makes every scheduling on that P read the clock.
//
// The scans also bound the waits and writes of the listed connections,
// which set no read or write deadline (see serverConn.deadline and
// outbox.writeWatched): a connection stays on the list while such a write
// is under way, the scan that takes one off sets its read deadline, and
// the watchdog parks only once the list is empty.
const (
	wdTick      = time.Millisecond
	wdSlow      = 16 * time.Millisecond
	wdIdleTicks = 100
)

// watchdog hands the read loop of a connection whose inline handler has
// not returned since the previous scan to a worker (see
// serverConn.runInline); see wdTick for when it scans. It runs until the
// server is closing and its last connection is gone: during Shutdown, a
// read loop stuck in a slow handler must still be handed over, or the
// calls behind it would wait for it (and the calls read after the go-away
// would not be refused).
func (s *Server) watchdog() {
	t := newWDTimer()
	defer t.close()
	t.reset(wdTick)
	idle := 0
	every := wdTick
	for {
		t.wait()
		s.mu.Lock()
		conns, closing := len(s.conns), s.closing
		s.mu.Unlock()
		if closing && conns == 0 {
			return
		}
		now := monoNow()
		if now-s.wdByLoop.Load() < 2*int64(wdTick) {
			// Read loops scan as they go: stay out of their way.
			every = min(2*every, wdSlow)
			idle = 0
			t.reset(every)
			continue
		}
		every = wdTick
		if s.scan(now) {
			idle = 0
			t.reset(every)
			continue
		}
		if idle++; idle < wdIdleTicks || closing || s.listed() {
			// A listed connection's read limits are the scans' (see
			// serverConn.deadline): it leaves the list after wdForget
			// quiet scans, and the watchdog parks only after that.
			t.reset(every)
			continue
		}
		idle = 0
		if f := wdBeforePark.Load(); f != nil {
			(*f)(s)
		}
		s.wdParked.Store(true)
		// A read loop that missed the flag: its handler runs, or it
		// joined the list (watch, before it looks at the flag) and its
		// read limits need the scans.
		if s.scan(monoNow()) || s.listed() {
			s.wdParked.Store(false)
		} else {
			select {
			case <-s.wdWake:
			case <-s.done:
			}
			s.wdParked.Store(false)
		}
		t.reset(every)
	}
}

// wdBeforePark, when set (tests), runs just before a watchdog parks.
var wdBeforePark atomic.Pointer[func(*Server)]

// scanDue is a read loop's share of the watchdog's work, called when it is
// about to block: it scans when the last scan is wdTick old and no other
// scan is under way.
// now is the time the caller read (monoNow), 0 if it read none.
func (s *Server) scanDue(now int64) {
	if now == 0 {
		now = monoNow()
	}
	if now-s.wdLast.Load() < int64(wdTick) || !s.wdMu.TryLock() {
		return
	}
	if now-s.wdLast.Load() >= int64(wdTick) {
		s.scanLocked(now)
		s.wdByLoop.Store(now)
	}
	s.wdMu.Unlock()
}

// scan scans (see scanLocked) and reports whether a handler runs inline.
// Less than wdTick after the previous scan it takes nothing over, but
// still looks at the listed connections: the watchdog parks on its
// answer, and a handler that began since that scan, in a read loop that
// checked wdParked before the watchdog set it, would not wake it.
func (s *Server) scan(now int64) bool {
	s.wdMu.Lock()
	defer s.wdMu.Unlock()
	if now-s.wdLast.Load() < int64(wdTick) {
		for _, c := range s.wdList {
			if v := c.inl.Load(); v != 0 && v != readerTaken {
				return true
			}
		}
		return false
	}
	return s.scanLocked(now)
}

// watch puts c on the watchdog's list. A connection that runs a handler
// inline is on it (runInline calls watch after it sets c.inl, and the
// watchdog takes a connection off only after it clears c.wdListed and
// then still finds c.inl clear: one of the two sees the other), so the
// watchdog looks only at the connections that ran calls lately, never at
// every connection: a scan costs the same with 10 or 10,000 idle ones.
func (s *Server) watch(c *serverConn) {
	s.wdMu.Lock()
	if !c.wdListed.Load() {
		c.wdListed.Store(true)
		c.wdIdle = 0
		s.wdList = append(s.wdList, c)
	}
	s.wdMu.Unlock()
}

// wdForget: a connection that ran no inline call at this many scans in a
// row (none running at the scan, none run since the one before: see
// serverConn.ran) leaves the watchdog's list. A busy one stays on it
// between its calls instead of coming back at each: before ran, one
// answering 64 B calls from 256 callers left and joined the list 300
// times a second, each time with a read deadline set and, while off it,
// a deadline on every read and write (runtime timers).
const wdForget = 3

// scanLocked takes over the read loops stuck in a handler since the
// previous scan and reports whether any connection runs a handler inline.
// It looks at the connections on the watchdog's list only (see watch).
// A scan less than wdTick after the previous one does nothing (it reports
// what that one found), so that two consecutive scans are at least wdTick
// apart. Called with wdMu held.
func (s *Server) scanLocked(now int64) (any bool) {
	if now-s.wdLast.Load() < int64(wdTick) {
		return s.wdBusy
	}
	s.wdLast.Store(now)
	s.wdScans++
	list := s.wdList
	for i := 0; i < len(list); i++ {
		c := list[i]
		s.wdLooks++
		if at := c.rdLimit.Load(); at != 0 && now >= at && c.rPoking.CompareAndSwap(false, true) {
			// Its read loop's wait is due (readtimeout.go): ended by a
			// goroutine of its own, as pokeWrite does, so that a
			// net.Conn slow to set a deadline stops no scan.
			go func() {
				c.pokeRead(now)
				c.rPoking.Store(false)
			}()
		}
		c.pokeWrite(now) // a write that took no byte for the write timeout (writewatch.go)
		v := c.inl.Load()
		if v == 0 || v == readerTaken {
			if r := c.ran.Load(); r != c.wdRan {
				// Inline calls ran since the last scan, between its
				// looks: busy, it stays (each call is far shorter than
				// the scans' interval, which would see none running).
				c.wdRan = r
				c.wdIdle = 0
				continue
			}
			if c.wdIdle++; c.wdIdle < wdForget {
				continue
			}
			c.wdListed.Store(false)
			if v := c.inl.Load(); v != 0 && v != readerTaken {
				c.wdListed.Store(true) // an inline call began meanwhile
				c.wdIdle = 0
				i-- // look at it again as busy
				continue
			}
			if (c.out.wsince.Load() != 0 || c.wPoking.Load()) && !c.closed.Load() {
				// A write is under way that sets no deadline (it read
				// wdListed before it was cleared): the scans bound it
				// until it ends, and then the connection leaves. (Or a
				// past write deadline is being set for one: once off
				// the list, the next write would not expect it.) Not
				// once the connection is closed: nothing is left for
				// the scans to do (see pokeWrite).
				c.wdListed.Store(true)
				c.wdIdle = wdForget - 1
				continue
			}
			if !c.rPoking.CompareAndSwap(false, true) {
				// A read deadline is being set for it (pokeRead's
				// goroutine, or the last unlisting's): it stays on the
				// list until that is done.
				c.wdListed.Store(true)
				c.wdIdle = wdForget - 1
				continue
			}
			// Off the list: its read deadline is its own again, set by a
			// goroutine of its own, as pokeRead's, so that a net.Conn
			// slow to set a deadline stops no scan (and no other
			// connection's inline call, which waits for wdMu to list).
			go func() {
				c.unlistRead()
				c.rPoking.Store(false)
			}()
			c.wdUnlists.Add(1)
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			list = list[:last]
			i--
			continue
		}
		c.wdIdle = 0
		any = true
		if v != c.wdSeen {
			c.wdSeen = v
			continue
		}
		// The stuck call's unit of inflight is added before the
		// take-over: once the compare-and-swap succeeds the handler may
		// return and end it (doneOne) at once, and a count that fell to
		// zero meanwhile would let Shutdown or EOF close the connection
		// before the answers it holds are written.
		c.inflight.Add(1)
		if c.inl.CompareAndSwap(v, takingOver) {
			if h := takingOverTest.Load(); h != nil {
				(*h)(c)
			}
			// The stuck call now ends on its own (see runInline), as a
			// worker's: its job's live word is set, as request sets a
			// worker call's, for a cancel that the new read loop reads
			// and for its ctx (job.running). The job is the one stored
			// in inlJob before c.inl held v, and the read loop wrote
			// its pid before that. The call's finish clears the word
			// after this store (waitTaken), not before.
			if j := c.inlJob.Load(); j != nil {
				j.live.Store(1<<32 | uint64(j.pid))
			}
			c.inl.Store(readerTaken)
			if s.takeoverHook != nil {
				s.takeoverHook(c)
			}
			if c.rjob == nil {
				c.rjob = &job{c: c, reader: true}
			}
			s.dispatch(c.rjob)
		} else {
			// Not under wdMu: it may close the connection.
			go c.doneOne()
		}
	}
	s.wdList = list
	s.wdBusy = any
	return any
}

// listed reports whether any connection is on the watchdog's list.
func (s *Server) listed() bool {
	s.wdMu.Lock()
	defer s.wdMu.Unlock()
	return len(s.wdList) != 0
}

// wakeWatchdog unparks the watchdog.
func (s *Server) wakeWatchdog() {
	if s.wdParked.CompareAndSwap(true, false) {
		select {
		case s.wdWake <- struct{}{}:
		default:
		}
	}
}

// reapWorkers ends half of the idle workers every second, so that a burst
// does not leave its goroutines behind forever. It keeps no timer while
// fewer than two workers are idle (half of one is none): it parks, and the
// worker that makes two idle wakes it (see worker). A pending runtime
// timer is not free: while one waits in a P's heap, every scheduling on
// that P reads the clock (DESIGN.md), and a server answering calls inline
// has no idle worker at all.
func (s *Server) reapWorkers() {
	every := time.Second
	if d := reapEveryTest.Load(); d != 0 {
		every = time.Duration(d)
	}
	t := time.NewTimer(every)
	t.Stop()
	defer t.Stop()
	for {
		if s.idleWork.Load() < 2 {
			s.reapParked.Store(true)
			if s.idleWork.Load() < 2 { // else a worker that missed the flag
				select {
				case <-s.reapWake:
					s.reapWakes.Add(1)
				case <-s.done:
					return
				}
			}
			s.reapParked.Store(false)
			continue // look again: the wake may be an old one
		}
		t.Reset(every)
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		for n := s.idleWork.Load() / 2; n > 0; n-- {
			select {
			case s.work <- nil:
			default:
				n = 0
			}
		}
	}
}

// reapEveryTest, when not 0, replaces the reaper's second (in
// nanoseconds), read as a server's reaper starts (its first Serve). Only
// tests set it
// (TestReaperParksAndWakes), so that they need not wait seconds.
var reapEveryTest atomic.Int64

// idleWorker counts a worker that begins waiting for a job, and wakes the
// parked reaper when it makes two idle.
func (s *Server) idleWorker() {
	if s.idleWork.Add(1) >= 2 && s.reapParked.Load() {
		select {
		case s.reapWake <- struct{}{}:
		default:
		}
	}
}
