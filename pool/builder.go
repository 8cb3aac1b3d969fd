package pool

import (
	"sync"

	"github.com/zapcodec/zapcodec/codec"
)

var builders = sync.Pool{New: func() any { return new(codec.Builder) }}

// GetBuilder returns a codec.Builder from the pool, or a new one. It is not
// ready for use: call Reset(dst) first, which also decides where the message
// goes (for instance a Buffer's B from [Get], or frame.Writer.Begin's
// result). The caller owns the Builder until PutBuilder. A pooled Builder
// keeps the capacity of its internal tail list, so building allocates
// nothing once warm.
func GetBuilder() *codec.Builder { return builders.Get().(*codec.Builder) }

// PutBuilder returns b to the pool; b is gone after the call: neither b nor
// the object and list builders it handed out may be used again. The buffer
// b was writing into is not touched and stays with whoever owns it (Put it
// separately if it came from [Get]). PutBuilder drops the Builder's
// references to that buffer and to the values it recorded
// ([codec.Builder.Release]), so the pool keeps nothing of the caller's
// alive. PutBuilder of nil does nothing.
func PutBuilder(b *codec.Builder) {
	if b == nil {
		return
	}
	b.Release()
	builders.Put(b)
}
