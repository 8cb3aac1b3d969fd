package cluster

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// Balancer picks the connection for each call among the connections of
// the admitted replicas. Pick is called by every caller at once: it must
// be safe for concurrent use, must not block, and should not allocate
// (it runs on every call). conns holds at least two connections (with one
// the client does not ask) and must not be kept or changed; Pick returns
// an index into it (one out of range counts as 0). A balancer of its own
// that honours the replicas' weights reads them with [Conn.Weight]; the
// built-in ones use running sums the client keeps.
type Balancer interface {
	Pick(conns []*Conn) int
}

// weightedBalancer is a built-in balancer's pick when the weights differ:
// cum holds the running sums of the connections' weights.
type weightedBalancer interface {
	pickWeighted(conns []*Conn, cum []float64) int
}

// drawWeighted returns the index of a connection drawn with a chance
// proportional to its weight, from the running sums cum.
func drawWeighted(cum []float64) int {
	return searchCum(cum, rand.Float64()*cum[len(cum)-1])
}

// searchCum returns the first index whose running sum exceeds x (the last
// one when none does: x at the very top).
func searchCum(cum []float64, x float64) int {
	lo, hi := 0, len(cum)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cum[m] > x {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// weightAt returns the weight of connection k from the running sums.
func weightAt(cum []float64, k int) float64 {
	if k == 0 {
		return cum[0]
	}
	return cum[k] - cum[k-1]
}

// P2C is the default policy, the power of two choices: two connections
// drawn at random, the cheaper gets the call. On multiplexed connections
// the work in flight is the load (round robin over connections ignores
// it: a replica that answers slowly piles up calls); drawing two instead
// of taking the least loaded of all keeps many clients from herding onto
// the same replica (Mitzenmacher, "The Power of Two Choices in Randomized
// Load Balancing").
//
// The load ([Conn.Load]: calls in flight, open streams and outstanding
// promises) alone cannot see a slow replica when calls come one at a
// time: no connection has a call in flight when the call is picked. So
// P2C also weighs each replica's answer latency ([Conn.Latency], as
// Finagle's peak-EWMA and gRPC's weighted round robin do): a connection
// whose cost, latency × (load + 1), is more than twice the other's
// loses the draw; closer than that, the lower load wins, as it did
// before. Latencies under 1 ms count as 1 ms (below that, answers differ
// by the schedulers' noise more than by the replicas' work). The band
// widens as the costlier one's latency ages without an answer (by one
// band each 10 ms), so that a replica left out for being slow still gets
// a call now and then and one that recovered is found: a caller that
// makes one call at a time sends a replica 20 times slower than the
// others (20 ms against 1 ms or less) about one call in 90 ms, where it
// sent it its share.
//
// With replicas of different weights ([Endpoint], SRV records), the two
// connections are drawn with chances proportional to their weights, and
// their loads are compared relative to their weights (load over weight,
// the weights relative to the heaviest, in the cost too): while the
// replicas keep up, each gets a share of the calls proportional to its
// weight, and a replica twice as heavy takes twice the load before it
// loses a draw.
//
// Its latency constants (the band of 2, the 1 ms floor, the 10 ms fade,
// one call in 8 timed below half a millisecond, the average's weights)
// are not options: they decide only between replicas far apart, where
// the load cannot tell them apart, and within the band the load decides
// as it did without latency, so that no setting of them makes P2C worse
// than load alone on replicas alike. gRPC's weighted round robin exposes
// its periods (blackout, expiration, update) because they must fit the
// interval at which the servers report their load, which P2C, timing
// answers as they come, has none of. A policy that weighs latency
// otherwise is a [Balancer] of its own, reading [Conn.Load],
// [Conn.Latency] and [Conn.Weight].
func P2C() Balancer { return p2c{} }

type p2c struct{}

func (p2c) Pick(conns []*Conn) int {
	n := len(conns)
	i := rand.IntN(n)
	j := rand.IntN(n - 1)
	if j >= i {
		j++
	}
	a, b := conns[i], conns[j]
	if cheaper(&a.r.lat, &b.r.lat, a.load(), b.load(), 1, 1) {
		return j
	}
	return i
}

func (p2c) pickWeighted(conns []*Conn, cum []float64) int {
	i := drawWeighted(cum)
	j := drawWeighted(cum)
	if j == i {
		if j = drawWeighted(cum); j == i {
			// One replica carries most of the weight: the other of the
			// two is drawn alike, so that it still has to win its draw
			// (on a tie, the first drawn wins: shares follow weights).
			if j = rand.IntN(len(conns) - 1); j >= i {
				j++
			}
		}
	}
	a, b := conns[i], conns[j]
	if cheaper(&a.r.lat, &b.r.lat, a.load(), b.load(), weightAt(cum, i), weightAt(cum, j)) {
		return j
	}
	return i
}

// RoundRobin takes the connections in turn, whatever their load. With
// replicas of different weights, each gets a share of the calls
// proportional to its weight, spread evenly over time (the k-th call goes
// where the fractional part of k times the golden ratio falls on the
// running sums of the weights).
func RoundRobin() Balancer { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint32 }

func (r *roundRobin) Pick(conns []*Conn) int {
	return int(r.next.Add(1) % uint32(len(conns)))
}

// golden is the fractional part of the golden ratio: k*golden mod 1 is
// spread evenly over [0, 1) for consecutive k.
const golden = 0.6180339887498949

func (r *roundRobin) pickWeighted(conns []*Conn, cum []float64) int {
	x := float64(r.next.Add(1)) * golden
	x -= math.Floor(x)
	return searchCum(cum, x*cum[len(cum)-1])
}
