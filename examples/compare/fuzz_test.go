package compare

import (
	"os"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every codec's decoders and handler:
// none may panic, and a request that decodes must re-encode to bytes that
// decode to the same record.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s
//
// FUZZ_CODEC=<name> fuzzes one codec only.
func FuzzDecode(f *testing.F) {
	fx := NewFixture()
	makers := Codecs()
	for _, m := range makers {
		e, err := fx.Encode(m.New())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e.Requests[0])
		f.Add(e.Responses[0])
	}
	var codecs []Codec
	for _, m := range makers {
		if only := os.Getenv("FUZZ_CODEC"); only == "" || only == m.Name {
			codecs = append(codecs, m.New())
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range codecs {
			in := append([]byte(nil), b...) // decoders may alias their input
			var req Request
			if c.DecodeRequest(in, &req) == nil {
				enc, err := c.AppendRequest(nil, &req)
				if err != nil {
					t.Fatalf("%s: re-encode of %+v: %v", c.Name(), req, err)
				}
				var back Request
				if err := c.DecodeRequest(enc, &back); err != nil || back != req {
					t.Fatalf("%s: %+v re-encoded as %x decodes to %+v (%v)", c.Name(), req, enc, back, err)
				}
			}
			var resp Response
			_ = c.DecodeResponse(in, &resp)
			_, _ = c.Handle(nil, in, fx.Table)
		}
	})
}
