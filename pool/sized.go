package pool

import "math/bits"

// minClassShift is the smallest capacity class of a SizedPool: 64 bytes, the
// smallest size class of bytebufferpool.
const minClassShift = 6

// SizedPool keeps buffers in power-of-two capacity classes (64 B, 128 B,
// ... ), one bytebufferpool per class. bytebufferpool calibrates each pool
// to the lengths it is given back and then drops buffers much larger than
// the common case; with one pool per class every buffer returned to a class
// has the same size class, so a warm SizedPool keeps buffers of rare large
// sizes too (up to 32 MiB, bytebufferpool's largest class; larger buffers
// are not kept once calibrated). Package frame keeps its large frame bodies
// here. The zero value is ready to use; safe for concurrent use; must not be
// copied after first use.
type SizedPool struct {
	classes [64]Pool
}

// Get returns a buffer whose B has length n (n < 0 counts as 0) and
// capacity at least n; contents unspecified. A new backing array gets the
// power of two at or above n (at least 64) as capacity, lowered to capLimit
// when capLimit >= n (a caller with a hard memory bound, such as a maximum
// frame size, passes it; 0 means no limit). The caller owns the buffer until
// it passes it to Put.
func (p *SizedPool) Get(n, capLimit int) *Buffer {
	if n < 0 {
		n = 0
	}
	k := classOf(n)
	b := p.classes[k].Get()
	if cap(b.B) < n {
		c := 1 << k
		if capLimit >= n && c > capLimit {
			c = capLimit
		}
		b.B = make([]byte, n, c)
	}
	b.B = b.B[:n]
	return b
}

// Put returns b to the class of its capacity; b is gone after the call (see
// [Pool.Put]; poisoning applies). Put of nil does nothing.
func (p *SizedPool) Put(b *Buffer) {
	if b == nil {
		return
	}
	c := cap(b.B)
	if c == 0 {
		return
	}
	// A buffer whose capacity is not a power of two (lowered by a
	// capLimit) goes to the class below, where it satisfies every Get.
	k := bits.Len(uint(c)) - 1
	if k < minClassShift {
		return
	}
	// bytebufferpool calibrates on len(B): report the class size.
	b.B = b.B[:1<<k]
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
