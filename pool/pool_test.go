package pool_test

import (
	"bytes"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
	"github.com/zapcodec/zapcodec/pool"
)

func TestPoisonAfterPut(t *testing.T) {
	defer poison.Set(poison.Set(true))
	var p pool.SizedPool
	b := p.Get(100, 0)
	b.B = append(b.B[:0], "secret data"...)
	stale := b.B // a use-after-Put bug keeps this
	p.Put(b)
	if want := bytes.Repeat([]byte{poison.Byte}, len(stale)); !bytes.Equal(stale, want) {
		t.Fatalf("stale view after Put = %q, want poison", stale)
	}
	full := stale[:cap(stale)]
	for i, c := range full {
		if c != poison.Byte {
			t.Fatalf("byte %d of the capacity not poisoned: %#x", i, c)
		}
	}
}

func TestNoPoisonWhenOff(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p pool.SizedPool
	b := p.Get(100, 0)
	b.B = append(b.B[:0], "data"...)
	stale := b.B
	p.Put(b)
	if string(stale) != "data" {
		t.Fatalf("poisoning off but Put changed the bytes: %q", stale)
	}
}

func TestSizedPool(t *testing.T) {
	defer poison.Set(poison.Set(false))
	var p pool.SizedPool
	tests := []struct {
		n, limit, wantCap int
	}{
		{0, 0, 0}, // no backing array needed
		{-5, 0, 0},
		{64, 0, 64},
		{65, 0, 128},
		{5000, 0, 8192},
		{5000, 6000, 6000},
		{5000, 4000, 8192}, // limit below n: ignored
		{1 << 20, 0, 1 << 20},
	}
	for _, tt := range tests {
		var fresh pool.SizedPool
		b := fresh.Get(tt.n, tt.limit)
		wantLen := max(tt.n, 0)
		if len(b.B) != wantLen || cap(b.B) != tt.wantCap {
			t.Errorf("Get(%d, %d): len %d cap %d, want len %d cap %d", tt.n, tt.limit, len(b.B), cap(b.B), wantLen, tt.wantCap)
		}
		fresh.Put(b)
	}
	// A buffer comes back for any length of its class.
	b := p.Get(5000, 0)
	b.B[0] = 'x'
	p.Put(b)
	b2 := p.Get(4097, 0)
	if len(b2.B) != 4097 || cap(b2.B) < 4097 {
		t.Fatalf("Get(4097): len %d cap %d", len(b2.B), cap(b2.B))
	}
	p.Put(b2)
	// A capacity lowered by a limit is filed one class down and still
	// satisfies every Get of that class.
	b = p.Get(3000, 3000)
	p.Put(b)
	for _, n := range []int{2049, 2048, 1025} {
		b := p.Get(n, 0)
		if len(b.B) != n || cap(b.B) < n {
			t.Fatalf("Get(%d) after a limited Put: len %d cap %d", n, len(b.B), cap(b.B))
		}
		p.Put(b)
	}
	p.Put(nil)
	p.Put(&pool.Buffer{})
}
