//go:build zapdebug

package pool_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/pool"
)

// TestZapdebugTagPoisons: built with -tags zapdebug, Put poisons without
// any test switch (poison.Set) having turned it on: the tag alone does it,
// as the package doc promises.
func TestZapdebugTagPoisons(t *testing.T) {
	var p pool.SizedPool
	b := p.Get(200, 0)
	copy(b.B, "secret")
	stale := b.B[:cap(b.B)]
	p.Put(b)
	for i, c := range stale {
		if c != poison.Byte {
			t.Fatalf("byte %d is %#x after Put, want %#x", i, c, poison.Byte)
		}
	}
}

// TestZapdebugDoublePutPanics: built with -tags zapdebug, a second Put of
// a buffer that no Get took back since panics with a message that says
// so; a buffer Put, taken by a Get and Put again is fine.
func TestZapdebugDoublePutPanics(t *testing.T) {
	var p pool.SizedPool
	b := p.Get(300, 0)
	p.Put(b)
	got := p.Get(300, 0) // b or a new buffer: a sync.Pool may drop b
	p.Put(got)
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "already Put") {
			t.Fatalf("second Put: recovered %v, want a panic saying the buffer was already Put", r)
		}
	}()
	p.Put(got)
}

// TestZapdebugPutGetConcurrent: buffers Put and taken by Gets in many
// goroutines at once are never mistaken for a second Put.
func TestZapdebugPutGetConcurrent(t *testing.T) {
	var p pool.SizedPool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				b := p.Get(64<<(i%4), 0)
				p.Put(b)
			}
		}()
	}
	wg.Wait()
}
