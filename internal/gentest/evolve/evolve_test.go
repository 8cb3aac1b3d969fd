package evolve

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evnew"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evold"
)

// project copies into dst, field by field and by name, what src holds of
// the fields dst's type knows: what a reader of dst's schema should get
// from a message src wrote.
func project(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			dst.Set(reflect.Zero(dst.Type()))
			return
		}
		p := reflect.New(dst.Type().Elem())
		project(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		for i := range dst.NumField() {
			project(dst.Field(i), src.FieldByName(dst.Type().Field(i).Name))
		}
	case reflect.Slice:
		if src.Type().Elem().Kind() == reflect.Uint8 {
			dst.SetBytes(src.Bytes())
			return
		}
		if src.Len() == 0 {
			dst.Set(reflect.Zero(dst.Type()))
			return
		}
		s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			project(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	default:
		dst.Set(src)
	}
}

// TestOldReadsNew: a reader generated from the old schema reads what it
// knows of a message written by the new one, fields added at the end of
// the root, of a nested struct, of list elements and of the elements of
// lists of lists, and ignores the rest: DecodeZAP, the view, its list
// views (At and Iter) all agree with the new record cut down to the old
// schema.
func TestOldReadsNew(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	for i := range 2000 {
		var w evnew.Rec
		check.Randomize(r, &w)
		msg := w.AppendZAP(nil)
		var want evold.Rec
		project(reflect.ValueOf(&want).Elem(), reflect.ValueOf(&w).Elem())
		var got evold.Rec
		if err := got.DecodeZAP(msg); err != nil {
			t.Fatalf("%d: DecodeZAP: %v\n%x", i, err, msg)
		}
		if d := check.Equal(&got, &want); d != "" {
			t.Fatalf("%d: DecodeZAP: %s\n%x", i, d, msg)
		}
		v, err := evold.ReadRec(msg)
		if err != nil {
			t.Fatalf("%d: ReadRec: %v", i, err)
		}
		if d := check.View(&want, v); d != "" {
			t.Fatalf("%d: view: %s\n%x", i, d, msg)
		}
		// A list element on its own: the old Leaf reads a new Leaf message.
		if len(w.Items) > 0 {
			el := w.Items[0].AppendZAP(nil)
			var leaf evold.Leaf
			if err := leaf.DecodeZAP(el); err != nil {
				t.Fatalf("%d: Leaf.DecodeZAP: %v", i, err)
			}
			if d := check.Equal(&leaf, &want.Items[0]); d != "" {
				t.Fatalf("%d: Leaf.DecodeZAP: %s", i, d)
			}
		}
	}
}

// TestNewReadsOld: a reader generated from the new schema reads a message
// written by the old one without error or panic, and the fields the old
// schema knows come back as written. Each struct's added fields lie past
// its old fixed section, where the wire holds whatever the writer put
// next (objects carry no size, WIRE.md §2): they are defined, as zero,
// only where the old object ends its message (the root of a message that
// is nothing but a fixed section).
func TestNewReadsOld(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	for i := range 2000 {
		var w evold.Rec
		check.Randomize(r, &w)
		msg := w.AppendZAP(nil)
		var got evnew.Rec
		err := got.DecodeZAP(msg) // may fail: the added fields read other bytes
		v, verr := evnew.ReadRec(msg)
		if verr != nil {
			t.Fatalf("%d: ReadRec: %v", i, verr)
		}
		if v.ID() != w.ID || v.Label() != w.Label || v.Hash() != w.Hash || v.Nums().Len() != len(w.Nums) ||
			v.Items().Len() != len(w.Items) || v.Grid().Len() != len(w.Grid) || v.Child().IsNull() != (w.Child == nil) {
			t.Fatalf("%d: the new view misreads the old fields\n%x", i, msg)
		}
		if w.Child != nil && (v.Child().A() != w.Child.A || v.Child().Name() != w.Child.Name) {
			t.Fatalf("%d: the new view misreads the old nested fields\n%x", i, msg)
		}
		for k, it := range w.Items {
			if e := v.Items().At(k); e.A() != it.A || e.Name() != it.Name {
				t.Fatalf("%d: the new view misreads Items[%d]\n%x", i, k, msg)
			}
		}
		if err == nil && (got.ID != w.ID || got.Label != w.Label || got.Hash != w.Hash || len(got.Items) != len(w.Items)) {
			t.Fatalf("%d: DecodeZAP misreads the old fields\n%x", i, msg)
		}
	}
	// An old Leaf with nothing after its fixed section: the new fields
	// read as zero.
	leaf := evold.Leaf{A: 7}
	var got evnew.Leaf
	if err := got.DecodeZAP(leaf.AppendZAP(nil)); err != nil {
		t.Fatal(err)
	}
	if d := check.Equal(&got, &evnew.Leaf{A: 7}); d != "" {
		t.Fatal(d)
	}
}
