package lists

import (
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// FuzzDecode feeds arbitrary bytes to DecodeZAP and to every view accessor
// of every generated type: errors are fine, panics and hangs are not. A
// message that decodes must encode again to a message that decodes to the
// same record.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, typ := range types {
		for range 4 {
			rec := typ.New()
			check.Randomize(r, rec)
			f.Add(rec.AppendZAP(nil))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, typ := range types {
			check.Poke(typ, b)
			rec := typ.New()
			if rec.DecodeZAP(b) != nil {
				continue
			}
			again := typ.New()
			if err := again.DecodeZAP(rec.AppendZAP(nil)); err != nil {
				t.Fatalf("%s: re-encoded message does not decode: %v", name, err)
			}
			if d := check.Equal(rec, again); d != "" {
				t.Fatalf("%s: decode(encode(decode(b))) differs: %s", name, d)
			}
		}
	})
}
