package order

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

var types = map[string]check.Type{
	"Item": {
		New:  func() check.Record { return new(Item) },
		Read: func(b []byte) (any, error) { return ReadItem(b) },
	},
	"Address": {
		New:  func() check.Record { return new(Address) },
		Read: func(b []byte) (any, error) { return ReadAddress(b) },
	},
	"Order": {
		New:  func() check.Record { return new(Order) },
		Read: func(b []byte) (any, error) { return ReadOrder(b) },
	},
}

func TestRoundTrip(t *testing.T) { check.RoundTrip(t, 12, 2000, types) }

func TestAllocs(t *testing.T) { check.Allocs(t, 12, types) }

// TestSameAsBuilder: AppendZAP lays messages out as codec.Builder does.
func TestSameAsBuilder(t *testing.T) {
	check.SameAsBuilder(t, "../../../cmd/zapcodec/internal/gen/testdata/order.zap", 12, 500, types)
}

// TestEmptyTextAtAnOffset: a text slot that points at an empty value
// ({rel, 0}, as codec.Builder leaves a text set twice, the second time to
// "") reads as empty through DecodeZAP and the view, and NameBytes gives
// an empty, non-nil slice, as its doc says; AppendZAP's own empty value is
// a null slot, which NameBytes gives as nil. NameBytes's doc used to say
// nil whenever the value is empty.
func TestEmptyTextAtAnOffset(t *testing.T) {
	msg := (&Item{SKU: 1, Name: "abc"}).AppendZAP(nil)
	v, err := ReadItem(msg)
	if err != nil {
		t.Fatal(err)
	}
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	binary.LittleEndian.PutUint32(msg[root+12+4:], 0) // the length of Name
	if b := v.NameBytes(); b == nil || len(b) != 0 || v.Name() != "" {
		t.Fatalf("NameBytes() = %#v, Name() = %q, want an empty non-nil slice and \"\"", b, v.Name())
	}
	var it Item
	if err := it.DecodeZAP(msg); err != nil || it.Name != "" || it.SKU != 1 {
		t.Fatalf("DecodeZAP: %v, %+v", err, it)
	}
	empty, err := ReadItem((&Item{SKU: 1}).AppendZAP(nil))
	if err != nil {
		t.Fatal(err)
	}
	if b := empty.NameBytes(); b != nil {
		t.Fatalf("NameBytes() of AppendZAP's empty value = %#v, want nil", b)
	}
	if src := readGenerated(t); !strings.Contains(src, "// NameBytes returns field Name as bytes. The result aliases the message.\n// It is nil when the field is null (AppendZAP writes an empty value so)\n// or its value does not lie inside the message, and empty but not nil\n// for an empty value at an offset") {
		t.Fatal("order.zap.go: NameBytes's doc does not say when it is nil")
	}
}

// readGenerated returns the source of order.zap.go.
func readGenerated(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("order.zap.go")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEmptyListAtAnOffset: a list slot of count 0 that points inside the
// message is an empty list that is not null, as the list view's IsNull
// doc says; AppendZAP's empty list, a null slot, is null. The doc used to
// say that every empty list is null.
func TestEmptyListAtAnOffset(t *testing.T) {
	msg := (&Order{ID: 1}).AppendZAP(nil)
	v, err := ReadOrder(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Items().IsNull() || v.Items().Len() != 0 {
		t.Fatal("AppendZAP's empty list is not null")
	}
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	binary.LittleEndian.PutUint32(msg[root+20:], uint32(codec.HeaderSize-1-(root+20))) // inside the header: null
	if !v.Items().IsNull() {
		t.Fatal("a list starting inside the header is not null")
	}
	binary.LittleEndian.PutUint32(msg[root+20:], 4) // inside the message, count 0
	if l := v.Items(); l.IsNull() || l.Len() != 0 {
		t.Fatalf("IsNull() = %v, Len() = %d, want an empty list that is not null", l.IsNull(), l.Len())
	}
	if src := readGenerated(t); !strings.Contains(src, "// IsNull reports whether the list is null: its slot is null, as writers\n// write an empty list, or it does not lie inside the message. (An empty\n// list whose slot points inside the message is not null.)") {
		t.Fatal("order.zap.go: the list view's IsNull doc says every empty list is null")
	}
}

// TestReadAllocs: ReadOrder allocates nothing for a message and only its
// error, a *codec.ParseError, for bytes that are not one, as its doc says;
// the doc used to say it does not allocate at all.
func TestReadAllocs(t *testing.T) {
	msg := (&Order{ID: 1, Items: []Item{{SKU: 2}}}).AppendZAP(nil)
	if n := testing.AllocsPerRun(100, func() { _, _ = ReadOrder(msg) }); n != 0 {
		t.Errorf("ReadOrder of a message: %v allocations, want 0", n)
	}
	bad := []byte("not a ZAP message")
	var pe *codec.ParseError
	if _, err := ReadOrder(bad); !errors.As(err, &pe) || !errors.Is(err, codec.ErrMagic) {
		t.Fatalf("ReadOrder(bad): %v (%T), want a *codec.ParseError matching codec.ErrMagic", err, err)
	}
	if src := readGenerated(t); !strings.Contains(src, "// view of its root Order. It does not copy b and allocates only its error:\n// a *codec.ParseError") {
		t.Fatal("order.zap.go: ReadOrder's doc does not say that its error allocates")
	}
}
