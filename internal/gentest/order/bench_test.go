package order

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// The build of issue 14: a record with a nested struct, a list<Item> of 10
// and a text, written by the generated AppendZAP, by hand with the general
// codec.Builder, and by hand with encoding/binary (the floor: the same
// bytes, every offset known in advance).

func benchOrder() *Order {
	o := &Order{ID: 90210, Customer: "Ada Lovelace", Ship: &Address{Zip: 10115, City: "Berlin"}}
	for i := range 10 {
		o.Items = append(o.Items, Item{SKU: 1000 + uint64(i), Qty: uint32(i + 1), Name: fmt.Sprintf("widget-%d", i)})
	}
	return o
}

// Layout of Order (order.zap.go): ID @0, Customer @8, Ship @16, Items @20,
// 28 bytes; Address: Zip @0, City @4, 12 bytes; Item: SKU @0, Qty @8,
// Name @12, 20 bytes.
const (
	orderSize, addressSize, itemSize = 28, 12, 20
	orderAt                          = codec.HeaderSize            // 16
	shipAt                           = 48                          // 16+28 = 44, 8-aligned
	cityAt                           = shipAt + addressSize        // 60
	itemMsg                          = codec.HeaderSize + itemSize // an Item message before its name
)

// appendOrderFloor appends the bytes AppendZAP writes for o, for an o
// shaped like benchOrder (Ship set, every text non-empty), written out by
// hand: the floor.
func appendOrderFloor(dst []byte, o *Order) []byte {
	le := binary.LittleEndian
	base := len(dst)
	dst = append(dst, "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"...) // size below
	dst = le.AppendUint64(dst, o.ID)
	dst = le.AppendUint64(dst, 0)                   // Customer, below
	dst = le.AppendUint32(dst, shipAt-(orderAt+16)) // Ship
	dst = le.AppendUint64(dst, 0)                   // Items, below
	dst = append(dst, 0, 0, 0, 0)                   // pad to 48
	dst = le.AppendUint32(dst, o.Ship.Zip)
	dst = le.AppendUint32(dst, cityAt-(shipAt+4))
	dst = le.AppendUint32(dst, uint32(len(o.Ship.City)))
	dst = append(dst, o.Ship.City...)
	for (len(dst)-base)%8 != 0 {
		dst = append(dst, 0)
	}
	list := len(dst) - base
	for i := range o.Items {
		it := &o.Items[i]
		n := itemMsg + len(it.Name)
		dst = le.AppendUint32(dst, uint32(n))
		dst = append(dst, "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00"...)
		dst = le.AppendUint32(dst, uint32(n))
		dst = le.AppendUint64(dst, it.SKU)
		dst = le.AppendUint32(dst, it.Qty)
		dst = le.AppendUint32(dst, itemMsg-(codec.HeaderSize+12))
		dst = le.AppendUint32(dst, uint32(len(it.Name)))
		dst = append(dst, it.Name...)
	}
	cust := len(dst) - base
	dst = append(dst, o.Customer...)
	m := dst[base:]
	le.PutUint32(m[12:], uint32(len(m)))
	le.PutUint32(m[orderAt+8:], uint32(cust-(orderAt+8)))
	le.PutUint32(m[orderAt+12:], uint32(len(o.Customer)))
	le.PutUint32(m[orderAt+20:], uint32(list-(orderAt+20)))
	le.PutUint32(m[orderAt+24:], uint32(len(o.Items)))
	return dst
}

// appendOrderBuilder writes o with the general codec.Builder by hand, as
// an application without generated code would.
func appendOrderBuilder(b *codec.Builder, dst []byte, o *Order) []byte {
	b.Reset(dst)
	ob := b.StartObject(orderSize)
	ob.SetUint64(0, o.ID)
	ob.SetText(8, o.Customer)
	sb := b.StartObject(addressSize)
	sb.SetUint32(0, o.Ship.Zip)
	sb.SetText(4, o.Ship.City)
	ob.SetObject(16, sb.Finish())
	l := b.StartList(0)
	for i := range o.Items {
		it := &o.Items[i]
		buf := l.BeginElement()
		buf, at := codec.AppendFlat(buf, itemSize, len(it.Name))
		binary.LittleEndian.PutUint64(buf[at:], it.SKU)
		binary.LittleEndian.PutUint32(buf[at+8:], it.Qty)
		buf = codec.AppendTail(buf, at+12, it.Name)
		l.EndElement(buf)
	}
	ob.SetList(20, l.Finish())
	b.SetRoot(ob.Finish())
	return b.Finish()
}

// The floor and the Builder write exactly what AppendZAP writes.
func TestFloorsWriteTheSameBytes(t *testing.T) {
	o := benchOrder()
	want := o.AppendZAP(nil)
	if got := appendOrderFloor([]byte("xyz"), o); !bytes.Equal(got[3:], want) {
		t.Fatalf("floor:\n got %x\nwant %x", got[3:], want)
	}
	var b codec.Builder
	got := appendOrderBuilder(&b, nil, o)
	if err := b.Err(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("builder (%v):\n got %x\nwant %x", err, got, want)
	}
	if n := o.SizeZAP(); n != len(want) {
		t.Fatalf("SizeZAP %d, wrote %d", n, len(want))
	}
}

// Writing an order into a buffer with room allocates nothing, by any of
// the three.
func TestAppendOrderAllocs(t *testing.T) {
	o := benchOrder()
	buf := make([]byte, 0, 1024)
	var b codec.Builder
	for name, f := range map[string]func(){
		"generated": func() { buf = o.AppendZAP(buf[:0]) },
		"floor":     func() { buf = appendOrderFloor(buf[:0], o) },
		"builder":   func() { buf = appendOrderBuilder(&b, buf[:0], o) },
	} {
		if n := testing.AllocsPerRun(50, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func BenchmarkAppendOrder(b *testing.B) {
	o := benchOrder()
	buf := make([]byte, 0, 1024)
	size := int64(o.SizeZAP())
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			buf = o.AppendZAP(buf[:0])
		}
	})
	b.Run("builder", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(size)
		var bl codec.Builder
		for b.Loop() {
			buf = appendOrderBuilder(&bl, buf[:0], o)
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			buf = appendOrderFloor(buf[:0], o)
		}
	})
}

func BenchmarkDecodeOrder(b *testing.B) {
	msg := benchOrder().AppendZAP(nil)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d Order
		for b.Loop() {
			if err := d.DecodeZAP(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same through the view a handler gets: ReadOrder, then
	// DecodeView, which copies what DecodeZAP copies.
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d Order
		for b.Loop() {
			v, err := ReadOrder(msg)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.DecodeView(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
