package all

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/gentest/check"
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

// sharedNodes builds a message of k Node records (1 KiB of data each),
// each pointing both Left and Right at the one built before it: k
// objects, 2^k paths from the root.
func sharedNodes(t *testing.T, k int) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	var next codec.Ref
	for i := range k {
		o := b.StartObject(1032)
		o.SetObject(0, next)
		o.SetObject(4, next)
		o.SetBytesFixed(8, bytes.Repeat([]byte{byte(i)}, 1024))
		next = o.Finish()
	}
	b.SetRoot(next)
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// bareBlocks builds a Blocks message listing n elements that are bare
// 16-byte headers whose root is at their end: 20 bytes of list each,
// every one a 4 KiB Block of zeros.
func bareBlocks(t *testing.T, n int) []byte {
	t.Helper()
	elem := make([]byte, codec.HeaderSize)
	copy(elem, codec.Magic)
	binary.LittleEndian.PutUint16(elem[4:], codec.Version1)
	binary.LittleEndian.PutUint32(elem[8:], codec.HeaderSize)  // root
	binary.LittleEndian.PutUint32(elem[12:], codec.HeaderSize) // size
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(8)
	l := b.StartList(0)
	for range n {
		l.AddMessage(elem)
	}
	o.SetList(0, l.Finish())
	b.SetRoot(o.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// sharedWide builds a Wide message whose eight text and bytes slots all
// point at one value of n bytes.
func sharedWide(t *testing.T, n int) []byte {
	t.Helper()
	msg := (&Wide{A: strings.Repeat("a", n)}).AppendZAP(nil)
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	a := root + int(binary.LittleEndian.Uint32(msg[root:])) // A's value
	for _, off := range []int{8, 16, 24, 36, 44, 52, 60} {
		slot := root + off
		binary.LittleEndian.PutUint32(msg[slot:], uint32(a-slot))
		binary.LittleEndian.PutUint32(msg[slot+4:], uint32(n))
	}
	return msg
}

// TestDecodeAllocationBounded: DecodeZAP charges what it allocates (the Go
// size of each nested record and list element, text and bytes) to a
// budget of 6 bytes per message byte. Messages that would make records
// far larger than themselves fail with ErrShared, having allocated at most
// about the budget: 1 KiB nodes shared along 2^13 paths (a 13 KB message
// decoded into 9.4 MB, without error) and 4 KiB blocks listed as bare
// headers (20 KB into 12.6 MB). Honest messages whose records are the
// largest a message can make decode: the same nodes in a chain, blocks,
// and the empty bytes values and nested lists that reach the 6 bytes per
// byte (a 24-byte slice per 4-byte element).
func TestDecodeAllocationBounded(t *testing.T) {
	var chain *Node
	for i := range 13 {
		n := &Node{Left: chain}
		n.Data[i] = byte(i + 1)
		chain = n
	}
	blocks := &Blocks{Items: make([]Block, 50)}
	for i := range blocks.Items {
		blocks.Items[i].Data[i] = 1
	}
	tests := []struct {
		name      string
		msg       []byte       // nil: want.AppendZAP
		got, want check.Record // got: fresh; want nil: DecodeZAP must fail with ErrShared
	}{
		{"nodes shared along 2^13 paths", sharedNodes(t, 13), new(Node), nil},
		{"4 KiB blocks listed as bare headers", bareBlocks(t, 1000), new(Blocks), nil},
		{"nodes in a chain", nil, new(Node), chain},
		{"blocks", nil, new(Blocks), blocks},
		{"empty bytes values", nil, new(Sparse), &Sparse{Raw: make([][]byte, 100000)}},
		{"empty nested lists", nil, new(Deep), &Deep{Grid: make([][]uint16, 100000)}},
		// A record without nested records or lists has no budget of its
		// own, but more text and bytes fields than the budget's factor:
		// eight fields copied one 64 KiB value into 512 KiB.
		{"text shared by every field of a flat record", sharedWide(t, 64<<10), new(Wide), nil},
		{"a flat record of long values", nil, new(Wide), &Wide{
			A: strings.Repeat("a", 8<<10), B: strings.Repeat("b", 8<<10), C: strings.Repeat("c", 8<<10), D: strings.Repeat("d", 8<<10),
			E: bytes.Repeat([]byte("e"), 8<<10), F: bytes.Repeat([]byte("f"), 8<<10), G: strings.Repeat("g", 8<<10), H: bytes.Repeat([]byte("h"), 8<<10),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.msg
			if msg == nil {
				msg = tt.want.AppendZAP(nil)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tt.got.DecodeZAP(msg)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d-byte message: %d bytes allocated (%v)", len(msg), alloc, err)
			if tt.want == nil {
				if !errors.Is(err, codec.ErrShared) {
					t.Fatalf("DecodeZAP = %v, want ErrShared", err)
				}
			} else if err != nil {
				t.Fatalf("DecodeZAP = %v", err)
			} else if d := check.Equal(tt.want, tt.got); d != "" {
				t.Fatalf("decoded: %s", d)
			}
			if alloc > 8*uint64(len(msg)) {
				t.Fatalf("DecodeZAP of a %d-byte message allocated %d bytes", len(msg), alloc)
			}
		})
	}
}

// TestDecodeViewSharedTextBounded: DecodeView copies every text and bytes
// value as DecodeZAP does, under the same bound: a flat record whose eight
// fields point at one value fails with ErrShared (it copied the value
// eight times, and its doc said such a record always decodes).
func TestDecodeViewSharedTextBounded(t *testing.T) {
	msg := sharedWide(t, 64<<10)
	v, err := ReadWide(msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.G()) != 64<<10 || len(v.H()) != 64<<10 {
		t.Fatalf("the view does not read the shared value: %d, %d bytes", len(v.G()), len(v.H()))
	}
	m := Wide{A: "kept", H: []byte("kept")}
	if err := m.DecodeView(v); !errors.Is(err, codec.ErrShared) {
		t.Fatalf("DecodeView = %v, want ErrShared", err)
	}
	if m.A != "kept" || string(m.H) != "kept" {
		t.Fatalf("a refused DecodeView changed the text and bytes fields: %q, %q", m.A, m.H)
	}
	var fe *codec.FieldError
	if err := m.DecodeZAP(msg); !errors.As(err, &fe) || fe.Path != "Wide" {
		t.Fatalf("DecodeZAP = %v, want a *codec.FieldError with path Wide", err)
	}
	honest := &Wide{A: "a", B: "bb", C: "ccc", D: "dddd", N: 7, E: []byte("e"), F: []byte("ff"), G: "g", H: []byte("hh")}
	v, err = ReadWide(honest.AppendZAP(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DecodeView(v); err != nil {
		t.Fatalf("DecodeView of an honest message = %v", err)
	}
	if d := check.Equal(honest, &m); d != "" {
		t.Fatalf("decoded: %s", d)
	}
}

// sharedBroad builds a Broad message whose 70 text and bytes slots (at 0,
// 8, 16 ...) all point at one value of n bytes.
func sharedBroad(t *testing.T, n int) []byte {
	t.Helper()
	msg := (&Broad{T00: strings.Repeat("a", n), N: 7}).AppendZAP(nil)
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	a := root + int(binary.LittleEndian.Uint32(msg[root:])) // T00's value
	for off := 8; off < 70*8; off += 8 {
		slot := root + off
		binary.LittleEndian.PutUint32(msg[slot:], uint32(a-slot))
		binary.LittleEndian.PutUint32(msg[slot+4:], uint32(n))
	}
	return msg
}

// TestBroadSharedTextBounded: a flat record of more text and bytes fields
// than its decodes hold in a variable each (Broad: 70), which read each
// value where they count or copy it, bounds the copies as Wide does:
// DecodeZAP and DecodeView refuse 70 fields pointing at one value with
// ErrShared, having set the fixed fields and left the others unchanged,
// and decode an honest message of long values; nested, the record decodes
// under its parent's budget.
func TestBroadSharedTextBounded(t *testing.T) {
	msg := sharedBroad(t, 16<<10)
	for name, decode := range map[string]func(m *Broad) error{
		"DecodeZAP": func(m *Broad) error { return m.DecodeZAP(msg) },
		"DecodeView": func(m *Broad) error {
			v, err := ReadBroad(msg)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.T00()) != 16<<10 || len(v.B69()) != 16<<10 {
				t.Fatalf("the view does not read the shared value: %d, %d bytes", len(v.T00()), len(v.B69()))
			}
			return m.DecodeView(v)
		},
	} {
		m := Broad{T02: "kept", B69: []byte("kept")}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode(&m)
		runtime.ReadMemStats(&after)
		var fe *codec.FieldError
		if !errors.Is(err, codec.ErrShared) || !errors.As(err, &fe) || fe.Path != "Broad" {
			t.Fatalf("%s = %v, want ErrShared at Broad", name, err)
		}
		if m.T02 != "kept" || string(m.B69) != "kept" || m.T00 != "" || m.N != 7 {
			t.Fatalf("%s refused, and set T02 %q, B69 %q, T00 of %d bytes, N %d", name, m.T02, m.B69, len(m.T00), m.N)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(msg)) {
			t.Fatalf("%s of a %d-byte message allocated %d bytes", name, len(msg), alloc)
		}
	}
	honest := &Broad{T00: strings.Repeat("t", 8<<10), B01: bytes.Repeat([]byte("b"), 8<<10), T68: "x", B69: []byte("y"), N: 9}
	var m Broad
	if err := m.DecodeZAP(honest.AppendZAP(nil)); err != nil {
		t.Fatal(err)
	}
	if d := check.Equal(honest, &m); d != "" {
		t.Fatalf("decoded: %s", d)
	}
	box := &BroadBox{One: honest, Many: []Broad{*honest, {T10: "z"}}}
	var got BroadBox
	if err := got.DecodeZAP(box.AppendZAP(nil)); err != nil {
		t.Fatal(err)
	}
	if d := check.Equal(box, &got); d != "" {
		t.Fatalf("decoded: %s", d)
	}
}
