package cluster

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The latency P2C weighs (see [P2C]).
const (
	// latencyFade is how fast a replica's average latency loses its
	// weight in a draw while the replica gets no answer: a connection
	// whose cost is k times the other's loses the draw for about
	// (k/latencyBand - 1) × latencyFade after its last answer (a replica
	// of 200 ms a call beside one of 1 ms or less, for about a second; of
	// 20 ms, for 90 ms; of 5 ms, for 15 ms), then competes on load alone
	// until its next answer. So a replica left out for being slow still
	// gets a call now and then, and one that recovered is found.
	latencyFade = 10 * time.Millisecond
	// latencyBand is how many times costlier than the other a connection
	// must be (latency × (load over weight + 1)) for the latency to
	// decide a draw; within it, the load decides, as without latency.
	latencyBand = 2
	// latencyFloor is the least latency a draw sees: below a millisecond,
	// the answers of a replica differ by the noise of the two machines'
	// schedulers more than by the replica's work, and replicas that fast
	// compete on load.
	latencyFloor = float64(time.Millisecond)
	// latencySample: of the calls to a replica known to answer in less
	// than half latencyFloor, one in latencySample on average is timed
	// (see timeNext).
	latencySample = 8
	// latencyStep: an answer moves the stored average only when it moves
	// it by more than 1/latencyStep of the average, or of half
	// latencyFloor when the average is lower (below which the draws see
	// no difference): the words are read by every pick on every caller's
	// core, and a store on each timed answer made their cache line
	// bounce between the cores. A steady latency x so leaves the average
	// between x/1.125 and x/0.9375 (stored at every answer, it tends to
	// x), far inside latencyBand.
	latencyStep = 32
	// latencyAtGrain is how far the time of the last answer may lag
	// before an answer stores its own: the draws weigh the age of a
	// latency in latencyFade units, and a lag of a sixteenth of one
	// widens the band by a sixteenth at most.
	latencyAtGrain = int64(latencyFade / 16)
)

// epoch is the origin of now: time.Since reads the monotonic clock
// alone.
var epoch = time.Now()

// now returns the monotonic time in nanoseconds since epoch, at least 1.
func now() int64 { return max(int64(time.Since(epoch)), 1) }

// latency is a replica's average answer latency: the lower of its first
// two answers', then each answer slower than the average counting a
// quarter, and as at most 4 times the average, and each faster one
// half. One slow answer (a pause of the caller's process, which the
// replica is not to blame for) raises it by 75 % at most, a replica that
// became slow shows it within a few answers (from 0.1 ms to 20 ms a call,
// it is out of most draws after six), and one whose average is too high
// (slow first answers on a loaded machine) loses the excess quickly, in
// the few calls it still gets. Its
// words are read and written without a lock: answers that end at the
// same moment may lose one of their updates, which an average does not
// notice. They are read by every pick, on every caller's core, and
// written only when they change meaningfully (see latencyStep and
// latencyAtGrain), so that a replica whose latency holds steady costs
// its callers no write to a shared cache line per answer.
type latency struct {
	avg  atomic.Uint64 // float64 bits: nanoseconds
	at   atomic.Int64  // now() of the last answer
	seen atomic.Int32  // answers counted, up to 2: known from 2 on
}

// observe adds the latency of an answer to a call sent at start (a
// now()) that came at t.
func (l *latency) observe(start, t int64) {
	d := float64(max(t-start, 0))
	switch l.seen.Load() {
	case 0:
		l.seen.Store(1)
	case 1:
		d = min(d, math.Float64frombits(l.avg.Load()))
		l.seen.Store(2)
	default:
		// Known: the words are written only when they change
		// meaningfully (the hot path of a warm call).
		avg := math.Float64frombits(l.avg.Load())
		if d < avg {
			d = 0.5*avg + 0.5*d
		} else {
			d = 0.75*avg + 0.25*min(d, 4*avg)
		}
		if math.Abs(d-avg) > max(avg, latencyFloor/2)/latencyStep {
			l.avg.Store(math.Float64bits(d))
		}
		if t-l.at.Load() >= latencyAtGrain {
			l.at.Store(t)
		}
		return
	}
	l.avg.Store(math.Float64bits(d))
	l.at.Store(t)
}

// observeAtLeast adds the time a call sent at start was held until t,
// when it was abandoned there (a hedged attempt that lost the race): the
// replica would have answered no sooner, so the time is a lower bound of
// its latency, which raises a known average it exceeds and says nothing
// of one it does not (counted as an answer, it would halve the average
// of a slow replica whose hedge lost soon after it was sent). While the
// average is unknown, it counts as an answer.
func (l *latency) observeAtLeast(start, t int64) {
	if l.seen.Load() >= 2 && float64(t-start) <= math.Float64frombits(l.avg.Load()) {
		return
	}
	l.observe(start, t)
}

// timeNext reports whether the next call is to be timed: every call
// while the average is unknown or at least half latencyFloor, else one
// in latencySample, drawn at random. The two clock readings of a timed
// call cost about as much as the rest of the balancer's work on a call
// to a fast replica; for such a replica the draws need only learn that
// it became slow, which a sample does within a few dozen calls. A slow
// replica's calls are all timed, so that the time of its last answer,
// which the draws weigh (see cheaper), stays fresh.
func (l *latency) timeNext() bool {
	return l.seen.Load() < 2 ||
		math.Float64frombits(l.avg.Load()) >= latencyFloor/2 ||
		rand.Uint32()%latencySample == 0
}

// get returns the average in nanoseconds, 0 when unknown (fewer than two
// answers since the replica was admitted), and the now() of the last
// answer.
func (l *latency) get() (avg float64, at int64) {
	if l.seen.Load() < 2 {
		return 0, 0
	}
	return math.Float64frombits(l.avg.Load()), l.at.Load()
}

// reset forgets the average (a replica admitted again).
func (l *latency) reset() { l.seen.Store(0) }

// cheaper reports whether connection b is to win the draw against
// connection a, given their loads na, nb and weights wa,
// wb. When both latencies are known and one's cost, latency (at least
// latencyFloor) × (load / weight + 1), is more than latencyBand times the other's, the cheaper
// wins, the band widening as the costlier one's last answer ages (by
// one band a latencyFade); else the one of the lower load over weight
// (a on a tie). Weights are relative to the heaviest (at most 1; 1
// without weights), so that replicas idle alike cost alike whatever
// their weights. The costs are compared without dividing.
func cheaper(a, b *latency, na, nb int32, wa, wb float64) bool {
	fa, fb := float64(na), float64(nb)
	la, ta := a.get()
	lb, tb := b.get()
	if la > 0 && lb > 0 {
		la, lb = max(la, latencyFloor), max(lb, latencyFloor)
		// cost = l × (n + w) / w
		ca := la * (fa + wa) * wb
		cb := lb * (fb + wb) * wa
		// The clock is read only when a cost is out of the band before
		// it widens (replicas of like latencies and loads: never).
		if ca > latencyBand*cb && ca > latencyBand*cb*fade(now()-ta) {
			return true
		}
		if cb > latencyBand*ca && cb > latencyBand*ca*fade(now()-tb) {
			return false
		}
	}
	return fb*wa < fa*wb
}

// fade returns how much wider the band is for a latency last refreshed
// age ago: 1 + age/latencyFade.
func fade(age int64) float64 { return 1 + float64(max(age, 0))/float64(latencyFade) }
