package pool_test

import (
	"bytes"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/pool"
)

func TestGetPut(t *testing.T) {
	var p pool.Pool
	b := p.Get()
	if len(b.B) != 0 {
		t.Fatalf("Get: len %d, want 0", len(b.B))
	}
	b.B = append(b.B, "hello"...)
	p.Put(b)
	b = p.GetLen(100)
	if len(b.B) != 100 {
		t.Fatalf("GetLen(100): len %d", len(b.B))
	}
	p.Put(b)
	if b := p.GetLen(-1); len(b.B) != 0 {
		t.Fatalf("GetLen(-1): len %d", len(b.B))
	}
	p.Put(nil) // no panic
	pool.Put(nil)
	pool.PutBuilder(nil)
	b = pool.GetLen(10)
	if len(b.B) != 10 {
		t.Fatalf("pool.GetLen(10): len %d", len(b.B))
	}
	pool.Put(b)
}

func TestPoisonAfterPut(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(true))
	if !pool.Poisoning() {
		t.Fatal("SetPoison(true) did not take effect")
	}
	var p pool.Pool
	b := p.Get()
	b.B = append(b.B, "secret data"...)
	stale := b.B // a use-after-Put bug keeps this
	p.Put(b)
	if want := bytes.Repeat([]byte{pool.PoisonByte}, len(stale)); !bytes.Equal(stale, want) {
		t.Fatalf("stale view after Put = %q, want poison", stale)
	}
	full := stale[:cap(stale)]
	for i, c := range full {
		if c != pool.PoisonByte {
			t.Fatalf("byte %d of the capacity not poisoned: %#x", i, c)
		}
	}
}

func TestNoPoisonWhenOff(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
	var p pool.Pool
	b := p.Get()
	b.B = append(b.B, "data"...)
	stale := b.B
	p.Put(b)
	if string(stale) != "data" {
		t.Fatalf("poisoning off but Put changed the bytes: %q", stale)
	}
}

func TestBuilderRoundTrip(t *testing.T) {
	for _, poisoned := range []bool{false, true} {
		func() {
			defer pool.SetPoison(pool.SetPoison(poisoned))
			buf := pool.Get()
			defer pool.Put(buf)
			b := pool.GetBuilder()
			b.Reset(buf.B[:0])
			o := b.StartObject(16)
			o.SetUint32(0, 7)
			o.SetText(8, "zap")
			b.SetRoot(o.Finish())
			buf.B = b.Finish()
			if err := b.Err(); err != nil {
				t.Fatal(err)
			}
			pool.PutBuilder(b)
			m, err := codec.Parse(buf.B)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Root().Uint32(0); got != 7 {
				t.Fatalf("u32 = %d", got)
			}
			if got := m.Root().Text(8); got != "zap" {
				t.Fatalf("text = %q", got)
			}
		}()
	}
}

func TestPutBuilderDropsBuffer(t *testing.T) {
	b := pool.GetBuilder()
	mine := make([]byte, 0, 256)
	b.Reset(mine)
	o := b.StartObject(8)
	o.SetUint64(0, 42)
	b.SetRoot(o.Finish())
	pool.PutBuilder(b)
	// A stale Finish must not hand back (and rewrite) the caller's buffer.
	stale := b.Finish()
	if stale != nil || b.Err() == nil {
		t.Fatalf("stale Finish after PutBuilder returned %d bytes (err %v), want nil and an error", len(stale), b.Err())
	}
}

func TestSizedPool(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
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
