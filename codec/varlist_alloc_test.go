//go:build !race

package codec_test

import (
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// TestVarListAllocs: reading and building variable-element scalar lists
// allocates nothing once the buffer has the capacity.
func TestVarListAllocs(t *testing.T) {
	msg := varListMessage(func(l *codec.ListBuilder) {
		for i := range 100 {
			l.AddUint32Element(uint32(i))
		}
	})
	l := rootList(t, msg)
	if n := testing.AllocsPerRun(100, func() {
		for i := range l.Len() {
			sink += uint64(l.VarUint32(i)) + uint64(len(l.VarFixed(i, 4)))
		}
		for it := l.Iter(); it.Next(); {
			sink += uint64(it.Uint32())
		}
		in, _ := codec.VarListOf(msg[16:])
		sink += uint64(in.Len())
	}); n != 0 {
		t.Errorf("reads: %v allocs", n)
	}
	buf := make([]byte, 0, 4096)
	var b codec.Builder
	if n := testing.AllocsPerRun(100, func() {
		b.Reset(buf[:0])
		lb := b.StartList(0)
		for i := range 100 {
			lb.AddUint32Element(uint32(i))
			lb.AddUint8Element(1)
			lb.AddUint16Element(2)
			lb.AddUint64Element(3)
			lb.AddTextElement("abc")
		}
		lr := lb.Finish()
		o := b.StartObject(8)
		o.SetList(0, lr)
		b.SetRoot(o.Finish())
		buf = b.Finish()
	}); n != 0 {
		t.Errorf("build: %v allocs", n)
	}
}
