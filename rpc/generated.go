package rpc

import "sync"

// Helpers for the RPC stubs that `zapcodec gen` writes. They are exported
// so that generated packages can share them instead of each declaring its
// own copies; code written by hand has no need for them.

// maxPooledBuffer is the largest buffer PutBuffer keeps; larger ones are
// left to the garbage collector, so that one huge call does not pin its
// memory in the pool.
const maxPooledBuffer = 1 << 20

// buffers holds the request/answer buffers of generated clients.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// GetBuffer is for generated code. It returns a pooled buffer (length 0,
// capacity 512 or more) for encoding one call's request; the caller owns it
// until it hands it back with [PutBuffer].
func GetBuffer() *[]byte { return buffers.Get().(*[]byte) }

// PutBuffer is for generated code. It ends a call made with the buffer bp
// from [GetBuffer]: buf is the request the call encoded into *bp (it may
// have grown out of it) and out the answer the call returned, appended to
// buf[len(buf):]. It keeps buf for the next call, or, when the answer
// outgrew buf's spare room, a new buffer with room for both (none above
// 1 MiB), and puts bp back in the pool; neither buf, out nor *bp may be
// used afterwards. It never keeps out itself: out may be a slice of a
// client interceptor's own, which the interceptor may still use (see
// [ClientInterceptor]).
func PutBuffer(bp *[]byte, buf, out []byte) {
	if cap(out) > cap(buf)-len(buf) {
		if len(buf)+cap(out) > maxPooledBuffer {
			return
		}
		buf = make([]byte, 0, len(buf)+cap(out))
	}
	if cap(buf) > maxPooledBuffer {
		return
	}
	*bp = buf[:0]
	buffers.Put(bp)
}

// ResultPool is for generated code: a pool of result records of type T,
// which a generated server hands to its method and encodes after it
// returns. The zero value is an empty pool, ready to use; it is safe for
// concurrent use.
type ResultPool[T any] struct{ p sync.Pool }

// Get returns a record set to its zero value: a pooled one, or a new one.
func (p *ResultPool[T]) Get() *T {
	if x, ok := p.p.Get().(*T); ok {
		return x
	}
	return new(T)
}

// Put zeroes *x, so that it keeps no reference to what the method put in
// it, and returns it to the pool. x must not be used afterwards.
func (p *ResultPool[T]) Put(x *T) {
	var zero T
	*x = zero
	p.p.Put(x)
}
