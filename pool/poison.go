package pool

import "sync/atomic"

// PoisonByte is the value poisoning writes over memory that was returned:
// 0xDB, chosen because it is neither 0, nor printable ASCII, nor a plausible
// small length, so a late read of a length or a text stands out.
const PoisonByte = 0xDB

var poison atomic.Bool

func init() { poison.Store(poisonDefault) }

// SetPoison turns poisoning of returned memory on or off for the whole
// process and returns the previous setting. Tests use it as
//
//	defer pool.SetPoison(pool.SetPoison(true))
//
// It is a debugging aid: safe to call at any time, but meant for tests.
func SetPoison(on bool) (was bool) { return poison.Swap(on) }

// Poisoning reports whether poisoning is on (the zapdebug build tag turns it
// on at start-up; [SetPoison] changes it).
func Poisoning() bool { return poison.Load() }

// Poison overwrites the whole capacity of p, p[:cap(p)], with [PoisonByte].
// Package frame calls it on a payload that is about to become invalid when
// [Poisoning] is on. Only call it on memory you own and are giving up.
func Poison(p []byte) {
	p = p[:cap(p)]
	for i := range p {
		p[i] = PoisonByte
	}
}
