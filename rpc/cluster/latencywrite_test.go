package cluster

import (
	"math"
	"testing"
	"time"
)

// A replica's latency words, which every pick reads on every caller's
// core, are written only when an answer changes them meaningfully: the
// average when it moves by more than 1/32 of itself (of half a
// millisecond below that), the time of the last answer when it moved on
// by latencyAtGrain. Before, each timed answer stored both, and their
// cache line went from core to core with the answers of a steady
// replica.
func TestLatencyStoredOnlyOnChange(t *testing.T) {
	ms := float64(time.Millisecond)
	us := float64(time.Microsecond)
	const t0 = int64(time.Hour)
	for _, tc := range []struct {
		name          string
		avg           float64 // before the answer
		took          float64 // the answer's latency
		after         int64   // the answer's end, after the last one stored
		wantAvg       float64 // the average stored after it
		wantAtChanged bool
	}{
		{"steady slow replica", 5 * ms, 5.1 * ms, int64(100 * time.Microsecond), 5 * ms, false},
		{"slow replica a little slower", 5 * ms, 5.6 * ms, int64(100 * time.Microsecond), 5 * ms, false},
		{"slow replica much slower", 5 * ms, 10 * ms, int64(100 * time.Microsecond), 6.25 * ms, false},
		{"slow replica faster", 5 * ms, 4 * ms, int64(100 * time.Microsecond), 4.5 * ms, false},
		{"steady slow replica, a grain later", 5 * ms, 5.1 * ms, latencyAtGrain, 5 * ms, true},
		{"steady fast replica", 50 * us, 60 * us, int64(time.Millisecond), 50 * us, true},
		{"fast replica faster", 50 * us, 30 * us, 0, 50 * us, false},
		{"fast replica slower", 50 * us, 500 * us, 0, 87.5 * us, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l latency
			l.avg.Store(math.Float64bits(tc.avg))
			l.at.Store(t0)
			l.seen.Store(2)
			end := t0 + tc.after
			l.observe(end-int64(tc.took), end)
			if got := math.Float64frombits(l.avg.Load()); math.Abs(got-tc.wantAvg) > 1 {
				t.Errorf("average %v, want %v", time.Duration(got), time.Duration(tc.wantAvg))
			}
			if changed := l.at.Load() != t0; changed != tc.wantAtChanged {
				t.Errorf("time of the last answer stored: %v, want %v", changed, tc.wantAtChanged)
			}
		})
	}
	// Two first answers are stored as they come, the lower kept.
	var l latency
	l.observe(t0, t0+int64(3*time.Millisecond))
	l.observe(t0, t0+int64(2*time.Millisecond))
	if avg, at := l.get(); avg != 2*ms || at != t0+int64(2*time.Millisecond) {
		t.Errorf("after two answers: %v at %d", time.Duration(avg), at)
	}
}
