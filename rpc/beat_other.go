//go:build !linux

package rpc

// newBeatClock returns the beat's clock: a runtime ticker (no kernel
// timer is used outside Linux).
func newBeatClock() beatClock { return newTickerClock() }
