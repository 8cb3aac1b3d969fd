package cluster

import (
	"math/rand/v2"
	"sync/atomic"
)

// Balancer picks the connection for each call among the connections of
// the admitted replicas. Pick is called by every caller at once: it must
// be safe for concurrent use, must not block, and should not allocate
// (it runs on every call). conns holds at least two connections (with one
// the client does not ask) and must not be kept or changed; Pick returns
// an index into it (one out of range counts as 0).
type Balancer interface {
	Pick(conns []*Conn) int
}

// P2C is the default policy, the power of two choices: two connections
// drawn at random, the one with the lower load ([Conn.Load]: calls in
// flight, open streams and outstanding promises) gets the call. On
// multiplexed connections the work in flight is the load (round robin over
// connections ignores it: a replica that answers slowly piles up calls);
// drawing two instead of taking the least loaded of all keeps many
// clients from herding onto the same replica (Mitzenmacher, "The Power of
// Two Choices in Randomized Load Balancing").
func P2C() Balancer { return p2c{} }

type p2c struct{}

func (p2c) Pick(conns []*Conn) int {
	n := len(conns)
	i := rand.IntN(n)
	j := rand.IntN(n - 1)
	if j >= i {
		j++
	}
	if conns[j].load() < conns[i].load() {
		return j
	}
	return i
}

// RoundRobin takes the connections in turn, whatever their load.
func RoundRobin() Balancer { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint32 }

func (r *roundRobin) Pick(conns []*Conn) int {
	return int(r.next.Add(1) % uint32(len(conns)))
}
