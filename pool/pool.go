package pool

import (
	"github.com/valyala/bytebufferpool"
)

// Buffer is a pooled byte buffer. Append to B directly (the encoders of
// package codec write into it); its methods come from bytebufferpool. A
// Buffer from [Get] or [Pool.Get] belongs to the caller until it is handed
// to [Put] or [Pool.Put]; after that the Buffer and every slice of B are
// gone.
type Buffer = bytebufferpool.ByteBuffer

// Pool is a pool of byte buffers. Its zero value is ready to use. Distinct
// pools keep buffers of different typical sizes apart (package frame keeps
// one for large frame bodies), so a caller asking for 1 MiB does not get
// the 200-byte buffer another caller returned. A Pool is safe for concurrent
// use and must not be copied after first use.
type Pool struct {
	p bytebufferpool.Pool
}

// Get returns a buffer with len(B) == 0 from the pool, or a new one. The
// caller owns it until it passes it to Put.
func (p *Pool) Get() *Buffer { return p.p.Get() }

// GetLen returns a buffer whose B has length n (n < 0 counts as 0). The
// contents of B are unspecified (old data of an earlier user, or zeros);
// overwrite them. When the pooled buffer is too small, a new backing array
// of exactly n bytes is allocated. The caller owns the buffer until it
// passes it to Put.
func (p *Pool) GetLen(n int) *Buffer {
	b := p.p.Get()
	if n < 0 {
		n = 0
	}
	if cap(b.B) < n {
		b.B = make([]byte, n)
	}
	b.B = b.B[:n]
	return b
}

// Put returns b to the pool; b is gone after the call: the caller must not
// touch b or any slice of b.B again. With poisoning on (see [SetPoison])
// the whole capacity of b.B is overwritten with [PoisonByte] first. Put of
// nil does nothing.
func (p *Pool) Put(b *Buffer) {
	if b == nil {
		return
	}
	if poison.Load() {
		Poison(b.B)
	}
	p.p.Put(b) // resets b.B to length 0
}

// defaultPool is the pool behind the package-level functions.
var defaultPool Pool

// Get returns a buffer with len(B) == 0 from the default pool. The caller
// owns it until it passes it to [Put].
func Get() *Buffer { return defaultPool.Get() }

// GetLen is [Pool.GetLen] on the default pool.
func GetLen(n int) *Buffer { return defaultPool.GetLen(n) }

// Put returns b to the default pool; b is gone after the call (see
// [Pool.Put]).
func Put(b *Buffer) { defaultPool.Put(b) }
