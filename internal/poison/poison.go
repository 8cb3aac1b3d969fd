// Package poison is the debugging switch behind pooled-memory poisoning:
// with it on, package pool overwrites a buffer given back to it, and
// package frame overwrites a payload when it becomes invalid, so a read
// after the memory was given up sees [Byte] instead of plausible data.
//
// It is on for a whole binary built with the zapdebug tag
// (go test -tags zapdebug ./...) and off otherwise; the module's own tests
// turn it on or off with [Set]. It is internal: users get it through the
// build tag only, so no debugging control sits in a public API.
package poison

import "sync/atomic"

// Byte is the value poisoning writes over memory that was given up: 0xDB,
// chosen because it is neither 0, nor printable ASCII, nor a plausible
// small length, so a late read of a length or a text stands out.
const Byte = 0xDB

var on atomic.Bool

func init() { on.Store(byDefault) }

// Set turns poisoning on or off for the whole process and returns the
// previous setting. Tests use it as
//
//	defer poison.Set(poison.Set(true))
//
// Safe to call at any time, but meant for tests.
func Set(enable bool) (was bool) { return on.Swap(enable) }

// Enabled reports whether poisoning is on: one atomic load.
func Enabled() bool { return on.Load() }

// Fill overwrites the whole capacity of p, p[:cap(p)], with [Byte]. Call it
// only on memory you own and are giving up.
func Fill(p []byte) {
	p = p[:cap(p)]
	for i := range p {
		p[i] = Byte
	}
}
