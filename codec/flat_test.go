package codec_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// TestAppendFlatMatchesBuilder builds random flat records (scalars,
// bytes_fixed, text and bytes; no nesting, no lists) both ways: AppendFlat
// with AppendTail must give the Builder's bytes exactly.
func TestAppendFlatMatchesBuilder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		type field struct {
			off  int
			tail bool // a text/bytes slot; else a u32 or a fixed blob
			data []byte
			u    uint32
		}
		var fields []field
		off := 0
		for range r.IntN(8) {
			f := field{off: off}
			switch r.IntN(3) {
			case 0:
				f.tail, f.data = true, randBytes(r, 20)
				off += 8
			case 1:
				f.u = r.Uint32()
				off += 4
			default:
				f.data = randBytes(r, 9)
				off += len(f.data)
			}
			off += r.IntN(2)
			fields = append(fields, f)
		}
		size := off

		var b codec.Builder
		prefix := randBytes(r, 5)
		b.Reset(bytes.Clone(prefix))
		o := b.StartObject(size)
		tails := 0
		for _, f := range fields {
			switch {
			case f.tail:
				o.SetBytes(f.off, f.data)
				tails += len(f.data)
			case f.data != nil:
				o.SetBytesFixed(f.off, f.data)
			default:
				o.SetUint32(f.off, f.u)
			}
		}
		b.SetRoot(o.Finish())
		want := b.Finish()

		got, at := codec.AppendFlat(bytes.Clone(prefix), size, tails)
		for _, f := range fields {
			switch {
			case f.tail:
				got = codec.AppendTailBytes(got, at+f.off, f.data)
			case f.data != nil:
				copy(got[at+f.off:], f.data)
			default:
				binary.LittleEndian.PutUint32(got[at+f.off:], f.u)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: AppendFlat differs from Builder\n got %x\nwant %x", i, got, want)
		}
	}
}
