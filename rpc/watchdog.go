package rpc

import (
	"time"
)

// runInline runs a call on the read loop's goroutine, which saves handing
// it to a worker (a goroutine wake-up per call). While the handler runs,
// c.inl holds its sequence number; the server's watchdog, which looks at
// every connection each tick (see Server.watchdog), takes the read loop
// role away from a handler still running at two consecutive ticks and
// dispatches it to a worker, which goes on reading: a slow handler delays
// the calls behind it by a tick or two at most, and then runs on as a
// worker call. The answer of an inline call is appended to the outbox and
// written by the read loop once no further request is buffered.
func (c *serverConn) runInline(j *job) int {
	c.seq++
	seq := c.seq
	c.inl.Store(seq)
	if !c.wdListed.Load() {
		c.s.watch(c)
	}
	if c.s.wdParked.Load() {
		c.s.wakeWatchdog()
	}
	status, body := c.call(j)
	if !c.inl.CompareAndSwap(seq, 0) {
		// Taken over: answer like a worker and leave reading to the
		// goroutine that has the role now. The watchdog counted this
		// call in inflight on its own; doneOne ends it.
		c.finish(j, status, body, false)
		return reqLost
	}
	c.finish(j, status, body, true)
	return reqNext
}

// dispatch hands j to an idle worker, or starts a new one.
func (s *Server) dispatch(j *job) {
	select {
	case s.work <- j:
	default:
		s.workers.Add(1)
		go s.worker(j)
	}
}

// worker runs jobs until told to exit; a nil j starts it idle.
func (s *Server) worker(j *job) {
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
		}
		s.idleWork.Add(1)
		select {
		case j = <-s.work:
		case <-s.done:
			j = nil
		}
		s.idleWork.Add(-1)
		if j == nil {
			return
		}
	}
}

// Watchdog timing: a handler running inline is taken over when it is seen
// at two consecutive ticks (after one to two ticks); the watchdog parks
// after wdIdleTicks ticks without any inline handler.
const (
	wdTick      = time.Millisecond
	wdIdleTicks = 100
)

// watchdog hands the read loop of a connection whose inline handler has
// not returned since the previous tick to a worker (see
// serverConn.runInline). It runs until the server is closing and its last
// connection is gone: during Shutdown, a read loop stuck in a slow handler
// must still be handed over, or the calls behind it would wait for it
// (and the calls read after the go-away would not be refused).
func (s *Server) watchdog() {
	t := time.NewTicker(wdTick)
	defer t.Stop()
	idle := 0
	for {
		<-t.C
		busy, conns, closing := s.scanInline()
		if closing && conns == 0 {
			return
		}
		if busy {
			idle = 0
			continue
		}
		if idle++; idle < wdIdleTicks || closing {
			continue
		}
		idle = 0
		t.Stop()
		s.wdParked.Store(true)
		if busy, _, _ := s.scanInline(); busy { // a read loop that missed the flag
			s.wdParked.Store(false)
		} else {
			select {
			case <-s.wdWake:
			case <-s.done:
			}
			s.wdParked.Store(false)
		}
		t.Reset(wdTick)
	}
}

// watch puts c on the watchdog's list. A connection that runs a handler
// inline is on it (runInline calls watch after it sets c.inl, and the
// watchdog takes a connection off only after it clears c.wdListed and
// then still finds c.inl clear: one of the two sees the other), so the
// watchdog looks only at the connections that ran calls lately, never at
// every connection: its tick costs the same with 10 or 10,000 idle ones.
func (s *Server) watch(c *serverConn) {
	s.wdMu.Lock()
	if !c.wdListed.Load() {
		c.wdListed.Store(true)
		c.wdIdle = 0
		s.wdList = append(s.wdList, c)
	}
	s.wdMu.Unlock()
}

// wdForget: a connection seen without an inline handler at this many
// ticks in a row leaves the watchdog's list (a busy one stays on it
// between its calls instead of coming back at each).
const wdForget = 3

// scanInline takes over the read loops stuck in a handler and reports
// whether any connection runs a handler inline, how many connections are
// open and whether the server is closing. It looks at the connections on
// the watchdog's list only (see watch).
func (s *Server) scanInline() (any bool, conns int, closing bool) {
	s.mu.Lock()
	conns, closing = len(s.conns), s.closing
	s.mu.Unlock()
	s.wdMu.Lock()
	defer s.wdMu.Unlock()
	s.wdScans++
	list := s.wdList
	for i := 0; i < len(list); i++ {
		c := list[i]
		s.wdLooks++
		v := c.inl.Load()
		if v == 0 || v == readerTaken {
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
		if c.inl.CompareAndSwap(v, readerTaken) {
			// The stuck call now ends on its own (see runInline).
			c.inflight.Add(1)
			s.dispatch(&c.rjob)
		}
	}
	s.wdList = list
	return any, conns, closing
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
// does not leave its goroutines behind forever.
func (s *Server) reapWorkers() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
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
