package pool

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
)

// TestPutSmallNotKept: a buffer under 64 bytes of capacity is not kept
// (the doc's promise), so no later Get hands it out.
func TestPutSmallNotKept(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p SizedPool
	small := map[*Buffer]bool{}
	for _, c := range []int{0, 1, 32, 63} {
		b := &Buffer{B: make([]byte, 0, c)}
		small[b] = true
		p.Put(b)
	}
	for range 100 {
		for _, n := range []int{0, 1, 63, 64} {
			b := p.Get(n, 0)
			if small[b] {
				t.Fatalf("Get(%d) handed out a buffer of capacity %d, under 64", n, cap(b.B))
			}
			p.Put(b)
		}
	}
}

// TestCapacityBound: whatever was Put, grown by append far past its class
// or lowered by a limit, every Get(n, limit) has length n and a capacity
// of at least n: a new array's as Get documents, a reused one below twice
// the power of two at or above n (so an oversized buffer is handed only
// to a Get of its own class, never to a small one).
func TestCapacityBound(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p SizedPool
	r := rand.New(rand.NewPCG(1, 2))
	var held []*Buffer
	for i := range 20000 {
		n := r.IntN(1 << (6 + r.IntN(12)))
		limit := 0
		if r.IntN(3) == 0 {
			limit = n + r.IntN(n+1)
		}
		b := p.Get(n, limit)
		k := classOf(n)
		if len(b.B) != n || cap(b.B) < n || cap(b.B) >= 2<<k && cap(b.B) != newCap(n, k, limit) {
			t.Fatalf("#%d Get(%d, %d): len %d cap %d (class %d)", i, n, limit, len(b.B), cap(b.B), k)
		}
		if r.IntN(4) == 0 {
			b.B = append(b.B, make([]byte, r.IntN(1<<18))...) // grown past its class
		}
		held = append(held, b)
		if len(held) > 8 || r.IntN(2) == 0 {
			j := r.IntN(len(held))
			p.Put(held[j])
			held = append(held[:j], held[j+1:]...)
		}
	}
}

// TestOwnership: the buffers handed out and not yet Put never share
// memory: goroutines each fill theirs with their own byte and find it
// intact before Put. Run with -race as well.
func TestOwnership(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p SizedPool
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 2000 {
				b := p.Get(1+r.IntN(5000), 0)
				full := b.B[:cap(b.B)]
				for i := range full {
					full[i] = byte(g)
				}
				for _, c := range full {
					if c != byte(g) {
						errs <- "a buffer held by one caller was written by another"
						return
					}
				}
				p.Put(b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestPoisonSmallAndGrown: with poisoning on, Put overwrites the whole
// capacity of every buffer given back, also one too small to keep and one
// grown past its class by append.
func TestPoisonSmallAndGrown(t *testing.T) {
	defer poison.Set(poison.Set(true))
	var p SizedPool
	small := &Buffer{B: []byte("tiny")}
	grown := p.Get(100, 0)
	grown.B = append(grown.B, make([]byte, 1000)...)
	for _, b := range []*Buffer{small, grown} {
		full := b.B[:cap(b.B)]
		for i := range full {
			full[i] = 'x'
		}
		p.Put(b)
		for i, c := range full {
			if c != poison.Byte {
				t.Fatalf("cap %d: byte %d is %#x after Put, want poison", cap(full), i, c)
			}
		}
	}
}
