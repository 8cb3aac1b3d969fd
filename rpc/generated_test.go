package rpc

import (
	"testing"
	"unsafe"
)

// PutBuffer keeps a buffer with room for a call's request and answer, so
// the next call starts with it: the request's buffer when the answer fit
// in its spare room, else a new one, never the answer's own memory (a
// client interceptor may answer with a slice it keeps).
func TestPutBufferKeepsRoom(t *testing.T) {
	bp := GetBuffer()
	buf := append((*bp)[:0], "request"...)
	out := make([]byte, 0, 1<<16) // the answer outgrew buf's spare room
	PutBuffer(bp, buf, out)
	if cap(*bp) < len(buf)+cap(out) || len(*bp) != 0 {
		t.Fatalf("kept len %d cap %d, want an empty buffer of cap %d or more", len(*bp), cap(*bp), len(buf)+cap(out))
	}
	if unsafe.SliceData((*bp)[:1]) == unsafe.SliceData(out[:1]) {
		t.Fatal("kept the answer's own memory")
	}
	bp2 := new([]byte)
	small := make([]byte, 3, 600)
	PutBuffer(bp2, small, small[3:])
	if cap(*bp2) != 600 || len(*bp2) != 0 || unsafe.SliceData(*bp2) != unsafe.SliceData(small) {
		t.Fatalf("kept len %d cap %d, want the request's buffer", len(*bp2), cap(*bp2))
	}
}

// A buffer above 1 MiB is not pooled: bp is left as it was.
func TestPutBufferDropsHuge(t *testing.T) {
	bp := &[]byte{}
	PutBuffer(bp, make([]byte, 0, maxPooledBuffer+1), nil)
	if cap(*bp) != 0 {
		t.Fatalf("a %d-byte buffer was kept", maxPooledBuffer+1)
	}
	PutBuffer(bp, make([]byte, 8, 16), make([]byte, 0, maxPooledBuffer))
	if cap(*bp) != 0 {
		t.Fatalf("a buffer for a %d-byte answer was kept", maxPooledBuffer)
	}
}

type result struct {
	N    int
	Tags []string
}

// ResultPool hands out zeroed records: Put clears what the method set.
func TestResultPoolZeroes(t *testing.T) {
	var p ResultPool[result]
	r := p.Get()
	if r.N != 0 || r.Tags != nil {
		t.Fatalf("new record %+v", r)
	}
	r.N, r.Tags = 7, []string{"x"}
	p.Put(r)
	if r.N != 0 || r.Tags != nil {
		t.Fatalf("Put left %+v", r)
	}
	if got := p.Get(); got.N != 0 || got.Tags != nil {
		t.Fatalf("pooled record %+v", got)
	}
}
