//go:build zapdebug

package pool

import "github.com/zapcodec/zapcodec/internal/poison"

// checkPut panics, in the zapdebug build with poisoning on, when the whole
// capacity of b still holds the poison an earlier Put wrote: b was Put and
// no Get took it back since (Get marks every buffer it hands out, see
// markGot), so a second Put would let two later Gets hand the same memory
// to two callers. The scan stops at the first byte that is not poison,
// the first one for a buffer that was written after its Get. A caller
// that filled all of a buffer's capacity with poison.Byte itself would be
// taken for a second Put; the message says so.
func checkPut(b *Buffer) {
	if !poison.Enabled() {
		return
	}
	for _, c := range b.B[:cap(b.B)] {
		if c != poison.Byte {
			return
		}
	}
	panic("pool: SizedPool.Put of a buffer that was already Put and not taken back by a Get since (its whole capacity still holds the 0xDB poison of that Put): a second Put would let two later Gets hand the same memory to two callers")
}

// markGot overwrites the first byte of a buffer Get takes from a class
// (contents are unspecified after Get), so that a buffer handed out never
// reads as all poison to checkPut.
func markGot(b *Buffer) {
	if p := b.B[:cap(b.B)]; len(p) > 0 {
		p[0] = ^byte(poison.Byte)
	}
}
