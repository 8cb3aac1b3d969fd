package codec_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// setOp is one SetText/SetBytes call of a set-twice sequence.
type setOp struct {
	slot  int // 0 or 1: the text slot at offset 0 or 8
	value string
	bytes bool // SetBytes (nil for an empty value) instead of SetText
}

// setTwiceModel writes, independently of the Builder, the message the
// canonical builder writes for one root object {text @0, text @8, u32 @16}
// after ops (docs/wire.md §3): every non-empty value is appended at finish in set
// order; a slot points at the last value appended for it and carries the
// length of the last value set for it; a slot never given a non-empty value
// is {0, 0}.
func setTwiceModel(ops []setOp) []byte {
	msg := make([]byte, 16+24)
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], 1)
	binary.LittleEndian.PutUint32(msg[8:], 16)
	binary.LittleEndian.PutUint32(msg[16+16:], 0xfeedf00d)
	var rel, n [2]uint32
	for _, op := range ops {
		n[op.slot] = uint32(len(op.value))
	}
	for _, op := range ops {
		if op.value == "" {
			continue
		}
		slot := 16 + 8*op.slot
		rel[op.slot] = uint32(len(msg) - slot)
		msg = append(msg, op.value...)
	}
	for i := range 2 {
		if rel[i] == 0 {
			n[i] = 0 // set only to empty: the slot is {0, 0}
		}
		binary.LittleEndian.PutUint32(msg[16+8*i:], rel[i])
		binary.LittleEndian.PutUint32(msg[16+8*i+4:], n[i])
	}
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(msg)))
	return msg
}

// setTwiceSequences returns every sequence of up to maxLen sets over two
// slots, three values and both setters.
func setTwiceSequences(maxLen int) [][]setOp {
	var alphabet []setOp
	for slot := range 2 {
		for _, v := range []string{"", "a", "bcd"} {
			alphabet = append(alphabet, setOp{slot, v, false}, setOp{slot, v, true})
		}
	}
	seqs := [][]setOp{nil}
	for prev := seqs; maxLen > 0; maxLen-- {
		var next [][]setOp
		for _, s := range prev {
			for _, op := range alphabet {
				next = append(next, append(append([]setOp(nil), s...), op))
			}
		}
		seqs = append(seqs, next...)
		prev = next
	}
	return seqs
}

func opBytes(op setOp) []byte {
	if op.value == "" {
		return nil
	}
	return []byte(op.value)
}

// TestSetTwiceModel checks the Builder, AppendFlat and the reader against
// the set-twice rule for every sequence of up to four sets of two slots.
func TestSetTwiceModel(t *testing.T) {
	t.Parallel()
	seqs := setTwiceSequences(4)
	if len(seqs) != 1+12+144+1728+20736 {
		t.Fatalf("%d sequences", len(seqs))
	}
	var b codec.Builder
	for _, ops := range seqs {
		checkSetTwice(t, &b, ops)
	}
}

// FuzzSetTwice checks longer sequences (past the Builder's inline record of
// pending values): each input byte is one set.
func FuzzSetTwice(f *testing.F) {
	f.Add([]byte{0x02, 0x00})
	f.Add([]byte{0x02, 0x13, 0x04, 0x11, 0x00, 0x0e, 0x0f, 0x1e, 0x1f, 0x06, 0x07, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 256 {
			in = in[:256]
		}
		ops := make([]setOp, len(in))
		for i, c := range in {
			// bit 0: slot; bits 1-3: value length; bit 4: SetBytes.
			ops[i] = setOp{slot: int(c & 1), value: "abcdefg"[:c>>1&7], bytes: c&0x10 != 0}
		}
		var b codec.Builder
		checkSetTwice(t, &b, ops)
	})
}

// checkSetTwice builds ops with b and with AppendFlat, compares both with
// setTwiceModel, and reads the slots back.
func checkSetTwice(t *testing.T, b *codec.Builder, ops []setOp) {
	t.Helper()
	want := setTwiceModel(ops)

	b.Reset(nil)
	o := b.StartObject(24)
	o.SetUint32(16, 0xfeedf00d)
	tails := 0
	for _, op := range ops {
		if op.bytes {
			o.SetBytes(8*op.slot, opBytes(op))
		} else {
			o.SetText(8*op.slot, op.value)
		}
		tails += len(op.value)
	}
	b.SetRoot(o.Finish())
	got := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%+v: Builder\n got %x\nwant %x", ops, got, want)
	}

	flat, at := codec.AppendFlat(nil, 24, tails)
	binary.LittleEndian.PutUint32(flat[at+16:], 0xfeedf00d)
	for _, op := range ops {
		if op.bytes {
			flat = codec.AppendTailBytes(flat, at+8*op.slot, opBytes(op))
		} else {
			flat = codec.AppendTail(flat, at+8*op.slot, op.value)
		}
	}
	if !bytes.Equal(flat, want) {
		t.Fatalf("%+v: AppendFlat\n got %x\nwant %x", ops, flat, want)
	}

	m, err := codec.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	root := m.Root()
	for slot := range 2 {
		last, anySet := "", false
		for _, op := range ops {
			if op.slot == slot {
				last = op.value
				anySet = anySet || op.value != ""
			}
		}
		if s := root.Text(8 * slot); s != last {
			t.Fatalf("%+v: slot %d reads %q, want %q", ops, slot, s, last)
		}
		// A slot that was ever given a value is not null, even when its
		// last value is empty: the canonical reader returns a non-nil
		// empty slice.
		if p := root.Bytes(8 * slot); (p == nil) == anySet || string(p) != last {
			t.Fatalf("%+v: slot %d bytes %q (nil %v), want %q (non-nil %v)", ops, slot, p, p == nil, last, anySet)
		}
	}
	if v := root.Uint32(16); v != 0xfeedf00d {
		t.Fatalf("%+v: u32 @16 = %#x", ops, v)
	}
}

// TestSetTextEmptyZeroesSlot: an empty set writes the slot {0, 0}, over
// whatever bytes were there, as the canonical builder does.
func TestSetTextEmptyZeroesSlot(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(8)
	o.SetUint64(0, ^uint64(0))
	o.SetText(0, "")
	b.SetRoot(o.Finish())
	m, err := codec.Parse(b.Finish())
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Root().Uint64(0); v != 0 {
		t.Fatalf("slot after an empty set = %#x, want 0", v)
	}
}

// TestSetTwiceSpilled: set twice past the inline record of pending values,
// with another object's values in between, still follows the rule.
func TestSetTwiceSpilled(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	b.Reset(nil)
	root := b.StartObject(8 * 12)
	for i := range 12 {
		root.SetText(8*i, "x")
	}
	child := b.StartObject(8)
	child.SetText(0, "child")
	root.SetText(0, "")       // slot 0: {rel → "x", 0}
	root.SetText(8, "second") // slot 1: → "second"
	root.SetText(8*11, "")    // slot 11: {rel → "x", 0}
	root.SetObject(8*11+4, 0) // no-op: a null Ref
	childRef := child.Finish()
	b.SetRoot(root.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	m, err := codec.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Root()
	for i, want := range map[int]string{0: "", 1: "second", 2: "x", 10: "x", 11: ""} {
		if got := r.Text(8 * i); got != want {
			t.Errorf("slot %d = %q, want %q", i, got, want)
		}
		if r.Bytes(8*i) == nil {
			t.Errorf("slot %d reads as null", i)
		}
	}
	// The root's values follow the child (finished first), in set order:
	// twelve "x", then "second".
	tail := string(msg[len(msg)-len("xxxxxxxxxxxxsecond"):])
	if tail != "xxxxxxxxxxxxsecond" {
		t.Errorf("root values %q", tail)
	}
	if int(childRef) != 16+8*12 {
		t.Errorf("child at %d", childRef)
	}
}

// TestSetEmptyListOrNullObjectOverEarlier: SetList of an empty list writes
// {0, 0} whatever was in the slot, a list set before included, as the
// canonical builder does (empty_list_before_object in messages-more.json:
// "SetList with count 0 writes {0,0} regardless of the offset"); SetObject
// of a zero Ref makes the slot null, an object set before included, as its
// doc says. Both left the earlier list or object in the slot.
func TestSetEmptyListOrNullObjectOverEarlier(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	b.Reset(nil)
	l := b.StartList(4)
	l.AddUint32(7)
	full := l.Finish()
	e := b.StartList(4)
	empty := e.Finish()
	c := b.StartObject(8)
	child := c.Finish()
	o := b.StartObject(24)
	o.SetList(0, full)
	o.SetList(0, empty)
	o.SetObject(8, child)
	o.SetObject(8, 0)
	o.SetUint64(16, ^uint64(0))
	o.SetList(16, codec.ListRef{}) // the zero ListRef is an empty list too
	b.SetRoot(o.Finish())
	m, err := codec.Parse(b.Finish())
	if err != nil {
		t.Fatal(err)
	}
	root := m.Root()
	for _, off := range []int{0, 8, 16} {
		if v := root.Uint64(off); v != 0 {
			t.Errorf("slot @%d = %#x, want 0", off, v)
		}
	}
	if !root.List(0).IsNull() || !root.Object(8).IsNull() {
		t.Errorf("list @0 null %v, object @8 null %v; want both null", root.List(0).IsNull(), root.Object(8).IsNull())
	}
}
