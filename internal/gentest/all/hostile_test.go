package all

import (
	"runtime"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// A hostile message whose Kitchen points at itself (Self) must not make
// DecodeZAP allocate a copy of its data at every level of the cycle: the
// work and memory of a decode stay within a small multiple of the message.
func TestDecodeSelfCycleBounded(t *testing.T) {
	const n = 64 << 10
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(105)
	l := b.StartList(0)
	for range n {
		l.AddUint8Element(0)
	}
	o.SetList(64, l.Finish())
	r := o.Finish()
	o.SetObject(100, r) // Self: the object itself
	b.SetRoot(r)
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}

	var m Kitchen
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := m.DecodeZAP(msg)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a cyclic message decoded without error")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8*uint64(len(msg)) {
		t.Fatalf("DecodeZAP of a %d-byte cyclic message allocated %d bytes (%v)", len(msg), got, err)
	}
	t.Log(err)
}
