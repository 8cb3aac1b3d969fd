package rpc

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"testing"
)

// FuzzInflate: whatever a peer sends as a compressed answer, inflate
// returns what compress/flate inflates (when it is whole, with nothing
// after it, and within the limit) or an error matching ErrDecompress
// with the caller's bytes untouched; it never panics, and never yields
// more than the limit.
func FuzzInflate(f *testing.F) {
	const limit = 64 << 10
	for _, b := range [][]byte{nil, []byte("plain"), logRecords(5000), make([]byte, 1<<20)} {
		var out bytes.Buffer
		w, _ := flate.NewWriter(&out, flate.BestSpeed)
		w.Write(b)
		w.Close()
		f.Add(out.Bytes())
		f.Add(out.Bytes()[:out.Len()/2])
	}
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := inflate([]byte("pre"), src, limit)
		if string(out[:min(3, len(out))]) != "pre" {
			t.Fatalf("the caller's bytes changed: %q", out[:min(3, len(out))])
		}
		br := bytes.NewReader(src)
		want, werr := io.ReadAll(io.LimitReader(flate.NewReader(br), limit+1))
		switch {
		case err != nil:
			if !errors.Is(err, ErrDecompress) || len(out) != 3 {
				t.Fatalf("error %v, %d bytes", err, len(out))
			}
			if werr == nil && len(want) <= limit && br.Len() == 0 {
				t.Fatalf("inflate failed (%v) where compress/flate did not", err)
			}
		case werr != nil || len(want) > limit:
			t.Fatalf("inflate succeeded where compress/flate failed (%v) or yielded %d bytes", werr, len(want))
		case !bytes.Equal(out[3:], want):
			t.Fatalf("inflated %d bytes, compress/flate %d", len(out)-3, len(want))
		}
	})
}
