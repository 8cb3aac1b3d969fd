package pool

import (
	"math/bits"
	"sync"

	"github.com/valyala/bytebufferpool"
	"github.com/zapcodec/zapcodec/internal/poison"
)

// Buffer is a pooled byte buffer: bytebufferpool's ByteBuffer. Append to B
// directly; its methods come from bytebufferpool. A Buffer from
// [SizedPool.Get] belongs to the caller until it is handed to
// [SizedPool.Put]; after that the Buffer and every slice of B are gone.
type Buffer = bytebufferpool.ByteBuffer

// minClassShift is the smallest capacity class of a SizedPool: 64 bytes.
// Smaller buffers are not kept.
const minClassShift = 6

// SizedPool keeps buffers in power-of-two capacity classes (64 B, 128 B,
// ...), one sync.Pool per class, so a Get is served by a buffer of its own
// class and a warm SizedPool keeps buffers of rare large sizes as well as
// the common small ones (the package doc says why this is not one
// bytebufferpool.Pool). Package frame keeps its frame buffers here. The
// zero value is ready to use; safe for concurrent use; must not be copied
// after first use.
type SizedPool struct {
	classes [64]sync.Pool // of *Buffer; class k holds capacities in [1<<k, 1<<(k+1))
}

// Get returns a buffer whose B has length n (n < 0 counts as 0) and
// capacity at least n; contents unspecified (an earlier user's bytes, or
// zeros): overwrite them. A new backing array gets the power of two at or
// above n (at least 64) as capacity, lowered to capLimit when capLimit >= n
// (a caller with a hard memory bound, such as a maximum frame size, passes
// it; 0 means no limit), or n when that power of two exceeds math.MaxInt.
// A buffer reused from the pool has any capacity of that power of two's
// class, below twice the power of two (so below 4n, or 128 for n under 32),
// whatever capLimit.
// The caller owns the buffer until it passes it to Put.
func (p *SizedPool) Get(n, capLimit int) *Buffer {
	if n < 0 {
		n = 0
	}
	k := classOf(n)
	b, _ := p.classes[k].Get().(*Buffer)
	if b == nil {
		b = new(Buffer)
	} else {
		markGot(b)
	}
	if cap(b.B) < n {
		b.B = make([]byte, n, newCap(n, k, capLimit))
	}
	b.B = b.B[:n]
	return b
}

// newCap returns the capacity of a new backing array for Get(n, capLimit),
// n being in class k: 1<<k, lowered to capLimit when capLimit >= n, or n
// itself when 1<<k does not fit in an int (n above 2^30 where an int has 32
// bits).
func newCap(n, k, capLimit int) int {
	c := n
	if k < bits.UintSize-1 {
		c = 1 << k
	}
	if capLimit >= n && c > capLimit {
		c = capLimit
	}
	return c
}

// Put returns b to the class of its capacity; b is gone after the call:
// the caller must not touch b or any slice of b.B again. Built with
// -tags zapdebug, Put first overwrites the whole capacity of b.B with 0xDB
// bytes (see the package doc), and panics on a second Put of a buffer no
// Get took back since. A buffer under 64 bytes of capacity is not kept.
// Put of nil does nothing.
func (p *SizedPool) Put(b *Buffer) {
	if b == nil {
		return
	}
	// A buffer whose capacity is not a power of two (lowered by a
	// capLimit, or grown by append) goes to the class below, where it
	// satisfies every Get.
	k := bits.Len(uint(cap(b.B))) - 1
	if k >= minClassShift {
		checkPut(b)
	}
	if poison.Enabled() {
		poison.Fill(b.B)
	}
	if k < minClassShift {
		return
	}
	b.B = b.B[:0]
	p.classes[k].Put(b)
}

// classOf returns k such that 1<<k is the smallest power of two >= n, at
// least 1<<minClassShift.
func classOf(n int) int {
	if n <= 1<<minClassShift {
		return minClassShift
	}
	return bits.Len(uint(n - 1))
}
