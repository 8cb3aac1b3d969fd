package rpc

import "testing"

// PutBuffer keeps whichever of a call's request and answer buffers has
// more room, so the next call starts with it.
func TestPutBufferKeepsTheLarger(t *testing.T) {
	bp := GetBuffer()
	buf := append((*bp)[:0], "request"...)
	out := make([]byte, 0, 1<<16) // the answer outgrew buf's spare room
	PutBuffer(bp, buf, out)
	if cap(*bp) != 1<<16 || len(*bp) != 0 {
		t.Fatalf("kept len %d cap %d, want the answer's buffer (cap %d), emptied", len(*bp), cap(*bp), 1<<16)
	}
	bp2 := new([]byte)
	small := make([]byte, 3, 600)
	PutBuffer(bp2, small, small[3:])
	if cap(*bp2) != 600 || len(*bp2) != 0 {
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
