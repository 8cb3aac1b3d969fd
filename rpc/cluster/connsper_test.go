package cluster

import (
	"math"
	"testing"
)

// WithConnsPerReplica holds a count beyond MaxConnsPerReplica to it: a
// huge one (a careless computation) made Dial panic, making room for
// that many connections per replica at once (with MaxInt, makeslice:
// len out of range).
func TestConnsPerReplicaBounded(t *testing.T) {
	for _, n := range []int{1, 3, MaxConnsPerReplica, MaxConnsPerReplica + 1, math.MaxInt} {
		if got, want := buildOptions([]Option{WithConnsPerReplica(n)}).connsPer, min(n, MaxConnsPerReplica); got != want {
			t.Errorf("WithConnsPerReplica(%d): %d connections, want %d", n, got, want)
		}
	}
}
