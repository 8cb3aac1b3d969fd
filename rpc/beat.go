package rpc

import (
	"sync"
	"time"
)

// The beat: one goroutine per process that runs the periodic checks of
// every connection that joined it (a client's answer check and the watch
// of its writes, see Client.beat), woken by a kernel timer where there is
// one (timerfd on Linux, beat_linux.go), not by a runtime timer.
//
// Why not a runtime timer per connection: while any timer is pending in a
// P's heap, every scheduling on that P reads the clock
// (runtime.(*timers).check), about 30 ns on this class of virtual machine,
// and a connection with calls in flight parks and wakes a goroutine per
// call. A client kept two timers pending for as long as it lived (its
// write deadline and its answer check); with the beat it keeps none while
// it is healthy: a write that has not finished by the time a beat sees it
// for the write timeout is interrupted by a deadline set then (see
// outbox.watch), and only a write that is really stuck runs under a
// socket deadline. A blocked read of the kernel timer's descriptor waits
// in the network poller, which the scheduler looks at anyway.
//
// The beat's period is the shortest asked for by a member (a quarter of
// its timeouts), at least beatMin; each member is beaten when its own
// period has passed. The goroutine ends when the last member leaves.

// beatMin is the shortest period of the beat.
const beatMin = time.Millisecond

// beater is a member of the beat.
type beater interface {
	// beat runs the member's checks at now (monoNow). It must not block
	// (it delays every other member): a check that has to write or close
	// starts a goroutine for it. It may be called once more after the
	// member left.
	beat(now int64)
}

// beatEntry is a member's place in the beat; see beatSet.join.
type beatEntry struct {
	b     beater
	every int64 // ns
	next  int64 // monoNow of the member's next beat
	idx   int   // in beatSet.members; -1 once it left
}

// beatSet is the beat's membership; beats is the process's.
type beatSet struct {
	mu      sync.Mutex
	members []*beatEntry
	running bool          // the goroutine runs (or is starting)
	every   time.Duration // the clock's period; 0 while it is stopped
	clk     beatClock     // made on first use
	due     []beater      // the loop's: members due at this beat
}

var beats beatSet

// beatClock wakes the beat's goroutine.
type beatClock interface {
	// set makes wait return every d from now; d == 0 stops it.
	set(d time.Duration)
	// wait blocks until the next expiry.
	wait()
}

// join makes b a member, beaten every d (at least beatMin) from now on,
// and returns its entry for leave.
func (s *beatSet) join(b beater, d time.Duration) *beatEntry {
	d = max(d, beatMin)
	e := &beatEntry{b: b, every: int64(d), next: monoNow() + int64(d)}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.idx = len(s.members)
	s.members = append(s.members, e)
	if s.clk == nil {
		s.clk = newBeatClock()
	}
	if s.every == 0 || d < s.every {
		s.every = d
		s.clk.set(d)
	}
	if !s.running {
		s.running = true
		go s.run()
	}
	return e
}

// leave ends e's membership (once; later calls do nothing).
func (s *beatSet) leave(e *beatEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := e.idx
	if i < 0 {
		return
	}
	last := len(s.members) - 1
	s.members[i] = s.members[last]
	s.members[i].idx = i
	s.members[last] = nil
	s.members = s.members[:last]
	e.idx = -1
}

// run is the beat's goroutine: at each expiry of the clock it beats the
// members that are due, and adjusts the period to the members left. It
// ends, stopping the clock, when no member is left.
func (s *beatSet) run() {
	for {
		s.clk.wait()
		now := monoNow()
		s.mu.Lock()
		if len(s.members) == 0 {
			s.clk.set(0)
			s.every, s.running = 0, false
			s.mu.Unlock()
			return
		}
		due := s.due[:0]
		least := time.Duration(1<<63 - 1)
		for _, e := range s.members {
			least = min(least, time.Duration(e.every))
			if now >= e.next {
				// At the member's own cadence (the clock's wake-ups
				// come late by some µs: counting from now would skip
				// every other one), from now after a long stall (a
				// late beat does not run twice in a row).
				if e.next += e.every; e.next <= now {
					e.next = now + e.every
				}
				due = append(due, e.b)
			}
		}
		if least != s.every {
			s.every = least
			s.clk.set(least)
		}
		s.due = due
		s.mu.Unlock()
		for i, b := range due {
			b.beat(now)
			due[i] = nil
		}
	}
}

// tickerClock is the beat's clock where no kernel timer serves: a
// runtime ticker (one pending timer for the whole process).
type tickerClock struct{ t *time.Ticker }

func (c *tickerClock) set(d time.Duration) {
	if d == 0 {
		c.t.Stop()
		return
	}
	c.t.Reset(d)
}

func (c *tickerClock) wait() { <-c.t.C }

func newTickerClock() beatClock {
	t := time.NewTicker(time.Hour)
	t.Stop()
	return &tickerClock{t: t}
}
