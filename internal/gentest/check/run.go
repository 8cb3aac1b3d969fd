package check

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"

	"github.com/zapcodec/zapcodec/codec"
	"math/rand/v2"
	"testing"
)

// Record is the method set every generated record has.
type Record interface {
	AppendZAP(dst []byte) []byte
	SizeZAP() int
	DecodeZAP(b []byte) error
	AppendBinary(dst []byte) ([]byte, error)
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(b []byte) error
}

// Type describes one generated record type for the generic checks.
type Type struct {
	New  func() Record               // a new zero record (a *T)
	Read func(b []byte) (any, error) // ReadT, its view as any
}

// Fixtures checks every generated.json and generated-lists.json case of
// schema (e.g. "eth.zap"), but the one recording a canonical defect,
// against the records in types (by struct name): AppendZAP reproduces the
// bytes exactly, also after a prefix; SizeZAP is their length; the view of
// the fixture bytes shows the values; DecodeZAP of the fixture bytes, and
// DecodeView of their view, give the record back, also into a record
// holding stale random values.
func Fixtures(t *testing.T, schema string, types map[string]Type) {
	cases := Generated(t)
	byName := map[string]Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, c := range cases {
		if c.Schema != schema {
			continue
		}
		if c.Name == "shape_origin_whole_message" {
			// A canonical defect, not a target (docs/wire.md §4): the canonical
			// constructor was given the whole Point message as the nested
			// Origin and embedded its header, so its Origin reads "ZAP\0"
			// as X. zapcodec writes a nested struct as an object, the way
			// shape_origin_object_bytes pins.
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			typ, ok := types[c.Struct]
			if !ok {
				t.Fatalf("no generated type %s", c.Struct)
			}
			want, err := hex.DecodeString(c.Hex)
			if err != nil {
				t.Fatal(err)
			}
			rec := typ.New()
			Fill(t, rec, c.Values, byName)
			if got := rec.AppendZAP(nil); !bytes.Equal(got, want) {
				t.Errorf("AppendZAP:\n got %x\nwant %x", got, want)
			}
			prefix := []byte("0123456789")[:r.IntN(10)]
			if got := rec.AppendZAP(bytes.Clone(prefix)); !bytes.Equal(got[len(prefix):], want) || !bytes.Equal(got[:len(prefix)], prefix) {
				t.Errorf("AppendZAP after a %d-byte prefix:\n got %x\nwant %x", len(prefix), got, want)
			}
			if n := rec.SizeZAP(); n != len(want) {
				t.Errorf("SizeZAP = %d, want %d", n, len(want))
			}
			v, err := typ.Read(want)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if d := View(rec, v); d != "" {
				t.Errorf("view of the fixture: %s", d)
			}
			for _, dst := range []Record{typ.New(), stale(r, typ)} {
				if err := dst.DecodeZAP(want); err != nil {
					t.Fatalf("DecodeZAP: %v", err)
				}
				if d := Equal(rec, dst); d != "" {
					t.Errorf("DecodeZAP: %s", d)
				}
			}
			checkDecodeView(t, r, typ, want, rec)
		})
	}
	if n == 0 {
		t.Fatalf("generated.json has no case for %s", schema)
	}
}

// DecodeView calls rec's DecodeView (every generated record has one) with
// view, the view of its type that Read returned.
func DecodeView(rec Record, view any) error {
	out := methodByName(reflect.ValueOf(rec), "DecodeView").Call([]reflect.Value{reflect.ValueOf(view)})
	err, _ := out[0].Interface().(error)
	return err
}

// checkDecodeView checks that DecodeView of the view of msg, into a fresh
// record and into one holding stale values, gives want, and that the
// record keeps nothing of the message: want still comes back after every
// byte of the message is overwritten.
func checkDecodeView(t *testing.T, r *rand.Rand, typ Type, msg []byte, want Record) {
	t.Helper()
	for j, dst := range []Record{typ.New(), stale(r, typ)} {
		cp := bytes.Clone(msg)
		v, err := typ.Read(cp)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if err := DecodeView(dst, v); err != nil {
			t.Fatalf("DecodeView #%d: %v\n%x", j, err, msg)
		}
		if d := Equal(want, dst); d != "" {
			t.Fatalf("DecodeView #%d: %s\n%x", j, d, msg)
		}
		for k := range cp {
			cp[k] = 0xA5
		}
		if d := Equal(want, dst); d != "" {
			t.Fatalf("DecodeView #%d: the record changed with the message's bytes (it aliases them): %s\n%x", j, d, msg)
		}
	}
}

func stale(r *rand.Rand, typ Type) Record {
	rec := typ.New()
	Randomize(r, rec)
	return rec
}

// RoundTrip checks n random records of every type, seeded: AppendZAP (after
// a random prefix) writes SizeZAP bytes; the view shows the record; DecodeZAP
// and DecodeView (of the view) into a fresh record and into one holding
// stale values give it back, DecodeView's unchanged once the message's
// bytes are overwritten;
// MarshalBinary, AppendBinary and UnmarshalBinary agree with them; and
// corrupting one byte or truncating the message never panics.
func RoundTrip(t *testing.T, seed uint64, n int, types map[string]Type) {
	for name, typ := range types {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			var buf []byte
			for i := range max(n/raceDivisor, 1) {
				rec := typ.New()
				Randomize(r, rec)
				prefix := []byte("0123456789abcdef")[:r.IntN(16)]
				buf = append(buf[:0], prefix...)
				buf = rec.AppendZAP(buf)
				msg := buf[len(prefix):]
				if len(msg) != rec.SizeZAP() {
					t.Fatalf("#%d: SizeZAP %d, wrote %d", i, rec.SizeZAP(), len(msg))
				}
				if bin, _ := rec.MarshalBinary(); !bytes.Equal(bin, msg) {
					t.Fatalf("#%d: MarshalBinary differs from AppendZAP", i)
				}
				if bin, _ := rec.AppendBinary(nil); !bytes.Equal(bin, msg) {
					t.Fatalf("#%d: AppendBinary differs from AppendZAP", i)
				}
				v, err := typ.Read(msg)
				if err != nil {
					t.Fatalf("#%d: Read: %v", i, err)
				}
				if d := View(rec, v); d != "" {
					t.Fatalf("#%d: view: %s\n%x", i, d, msg)
				}
				for j, dst := range []Record{typ.New(), stale(r, typ)} {
					if err := dst.DecodeZAP(msg); err != nil {
						t.Fatalf("#%d: DecodeZAP: %v", i, err)
					}
					if d := Equal(rec, dst); d != "" {
						t.Fatalf("#%d/%d: DecodeZAP: %s\n%x", i, j, d, msg)
					}
				}
				checkDecodeView(t, r, typ, msg, rec)
				dst := typ.New()
				if err := dst.UnmarshalBinary(msg); err != nil || Equal(rec, dst) != "" {
					t.Fatalf("#%d: UnmarshalBinary: %v %s", i, err, Equal(rec, dst))
				}
				// Hostile variants: must not panic.
				bad := bytes.Clone(msg)
				if len(bad) > 16 {
					bad[16+r.IntN(len(bad)-16)] ^= byte(1 + r.IntN(255))
				}
				Poke(typ, bad)
				Poke(typ, msg[:r.IntN(len(msg)+1)])
			}
		})
	}
}

// Poke decodes and views b, ignoring the results: for hostile inputs, where
// the only requirement is not to panic (or hang).
func Poke(typ Type, b []byte) {
	_ = typ.New().DecodeZAP(b)
	if v, err := typ.Read(b); err == nil {
		rec := typ.New()
		_ = View(rec, v) // walks every accessor of the view
		_ = DecodeView(typ.New(), v)
		_ = rec.DecodeZAP(b)
		if err := rec.DecodeZAP(b); err == nil {
			_ = View(rec, v)
		}
	}
}

// Allocs checks that AppendZAP into a buffer with room, and a warm
// DecodeZAP of the same message, allocate nothing, for 20 random records
// of each type (seeded with seed). Allocation counts mean nothing under
// -race, so it skips there.
func Allocs(t *testing.T, seed uint64, types map[string]Type) {
	if raceDivisor > 1 {
		t.Skip("allocation counts are not meaningful under -race")
	}
	r := rand.New(rand.NewPCG(seed, seed))
	for name, typ := range types {
		for i := range 20 {
			rec := typ.New()
			Randomize(r, rec)
			buf := make([]byte, 0, rec.SizeZAP())
			msg := rec.AppendZAP(nil)
			d := typ.New()
			if err := d.DecodeZAP(msg); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(20, func() { buf = rec.AppendZAP(buf[:0]) }); n != 0 {
				t.Errorf("%s #%d AppendZAP: %v allocations", name, i, n)
			}
			if n := testing.AllocsPerRun(20, func() { _ = d.DecodeZAP(msg) }); n != 0 {
				t.Errorf("%s #%d warm DecodeZAP: %v allocations", name, i, n)
			}
		}
	}
}

// FuzzDecode feeds arbitrary bytes to DecodeZAP, to every view accessor
// and to DecodeView of every type in types: errors are fine, panics and
// hangs are not, and DecodeView agrees with DecodeZAP. A message that decodes must encode again to a message that decodes
// to the same record. The corpus starts with 4 random records of each type
// (seeded with seed).
func FuzzDecode(f *testing.F, seed uint64, types map[string]Type) {
	r := rand.New(rand.NewPCG(seed, seed))
	for _, typ := range types {
		for range 4 {
			rec := typ.New()
			Randomize(r, rec)
			f.Add(rec.AppendZAP(nil))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, typ := range types {
			Poke(typ, b)
			rec := typ.New()
			err := rec.DecodeZAP(b)
			// DecodeView of b's view decodes the same object, with a
			// budget from the message's size, which is len(b) or less: it
			// fails where DecodeZAP fails, and may run out of budget
			// (codec.ErrShared) where DecodeZAP, given more bytes, does
			// not.
			if v, rerr := typ.Read(b); rerr == nil {
				fromView := typ.New()
				verr := DecodeView(fromView, v)
				switch {
				case verr != nil:
					checkDecodeError(t, name, verr)
					if err == nil && !errors.Is(verr, codec.ErrShared) {
						t.Fatalf("%s: DecodeView fails where DecodeZAP does not: %v", name, verr)
					}
				case err != nil:
					t.Fatalf("%s: DecodeView accepts what DecodeZAP refuses (%v)", name, err)
				default:
					if d := Equal(rec, fromView); d != "" {
						t.Fatalf("%s: DecodeView and DecodeZAP differ: %s", name, d)
					}
				}
			}
			if err != nil {
				checkDecodeError(t, name, err)
				continue
			}
			// DecodeZAP loads the fixed section in one piece when it fits
			// and field by field when not; the view reads field by field
			// always: both must see the same values.
			if v, err := typ.Read(b); err != nil {
				t.Fatalf("%s: DecodeZAP accepts what Read refuses: %v", name, err)
			} else if d := ViewLoose(rec, v); d != "" {
				t.Fatalf("%s: the decoded record and the view differ: %s", name, d)
			}
			again := typ.New()
			if err := again.DecodeZAP(rec.AppendZAP(nil)); err != nil {
				t.Fatalf("%s: re-encoded message does not decode: %v", name, err)
			}
			if d := Equal(rec, again); d != "" {
				t.Fatalf("%s: decode(encode(decode(b))) differs: %s", name, d)
			}
		}
	})
}

// checkDecodeError fails t unless err, DecodeZAP's error for a record of
// type name, is a *codec.FieldError whose path starts with name and that
// matches one of codec's sentinels.
func checkDecodeError(t *testing.T, name string, err error) {
	t.Helper()
	var fe *codec.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: DecodeZAP error %v (%T) is no *codec.FieldError", name, err, err)
	}
	if fe.Path != name && !strings.HasPrefix(fe.Path, name+".") && !strings.HasPrefix(fe.Path, name+"[") {
		t.Fatalf("%s: DecodeZAP error path %q does not start with the record", name, fe.Path)
	}
	for _, s := range []error{codec.ErrTooSmall, codec.ErrMagic, codec.ErrVersion, codec.ErrOutOfBounds,
		codec.ErrTooDeep, codec.ErrShared, codec.ErrElementSize, codec.ErrNestedList} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: DecodeZAP error %v matches none of codec's sentinels", name, err)
}
