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
// outbox.watchWrite), and only a write that is really stuck runs under a
// socket deadline. A blocked read of the kernel timer's descriptor waits
// in the network poller, which the scheduler looks at anyway.
//
// Members are grouped by period (connections made with the same options
// share one), and each group is beaten at its own cadence: a beat visits
// the groups that are due and their members only, so a member with a
// short period does not make the beat visit every connection that often.
// The clock's period is the shortest of the groups' (at least beatMin).
// The goroutine ends when the last member leaves.

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
	b   beater
	g   *beatGroup
	idx int // in g.members; -1 once it left
}

// beatGroup holds the members of one period.
type beatGroup struct {
	every   int64 // ns
	next    int64 // monoNow of the group's next beat
	members []*beatEntry
}

// beatSet is the beat's membership; beats is the process's.
type beatSet struct {
	mu      sync.Mutex
	groups  map[int64]*beatGroup // by period
	n       int                  // members
	running bool                 // the goroutine runs (or is starting)
	every   time.Duration        // the clock's period; 0 while it is stopped
	clk     beatClock            // made on first use
	due     []beater             // the loop's: members due at this beat
}

var beats beatSet

// beatClock wakes the beat's goroutine.
type beatClock interface {
	// set makes wait return every d from now; d == 0 stops it.
	set(d time.Duration)
	// wait blocks until the next expiry.
	wait()
}

// join makes b a member, beaten every d (at least beatMin), and returns
// its entry for leave. Its first beat comes within d.
func (s *beatSet) join(b beater, d time.Duration) *beatEntry {
	d = max(d, beatMin)
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[int64(d)]
	if g == nil {
		if s.groups == nil {
			s.groups = make(map[int64]*beatGroup)
		}
		g = &beatGroup{every: int64(d), next: monoNow() + int64(d)}
		s.groups[int64(d)] = g
	}
	e := &beatEntry{b: b, g: g, idx: len(g.members)}
	g.members = append(g.members, e)
	s.n++
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

// leave ends e's membership (once; later calls do nothing). When the
// last member leaves, the goroutine ends at once rather than at the next
// beat.
func (s *beatSet) leave(e *beatEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, g := e.idx, e.g
	if i < 0 {
		return
	}
	last := len(g.members) - 1
	g.members[i] = g.members[last]
	g.members[i].idx = i
	g.members[last] = nil
	g.members = g.members[:last]
	e.idx = -1
	if last == 0 {
		delete(s.groups, g.every)
	}
	if s.n--; s.n == 0 && s.running {
		s.every = beatMin
		s.clk.set(beatMin) // run sees no member and ends
	}
}

// run is the beat's goroutine: at each expiry of the clock it beats the
// groups that are due, and sets the clock to the shortest period left.
// It ends, stopping the clock, when no member is left.
func (s *beatSet) run() {
	for {
		s.clk.wait()
		now := monoNow()
		s.mu.Lock()
		if s.n == 0 {
			s.clk.set(0)
			s.every, s.running = 0, false
			s.mu.Unlock()
			return
		}
		due := s.due[:0]
		least := int64(1<<63 - 1)
		for _, g := range s.groups {
			least = min(least, g.every)
			if now < g.next {
				continue
			}
			// At the group's own cadence (the clock's wake-ups come
			// late by some µs: counting from now would skip every other
			// one), from now after a long stall (a late beat does not
			// run twice in a row).
			if g.next += g.every; g.next <= now {
				g.next = now + g.every
			}
			for _, e := range g.members {
				due = append(due, e.b)
			}
		}
		if d := time.Duration(least); d != s.every {
			s.every = d
			s.clk.set(d)
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
