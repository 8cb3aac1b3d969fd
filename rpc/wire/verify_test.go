package wire

import (
	"encoding/binary"
	"testing"
)

// agree fails the test unless ParseRequest and ParseResponse (with their
// inline fast paths) give for b exactly what the general parsers give:
// the same fields, the same slices, the same error text.
func agree(t *testing.T, what string, b []byte) {
	t.Helper()
	var r Request
	err := ParseRequestTo(&r, b)
	slow, serr := parseRequest(b)
	if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) ||
		r.Method != slow.Method || r.PromiseID != slow.PromiseID || r.Target != slow.Target || r.Timeout != slow.Timeout ||
		!sameSlice(r.Cap, slow.Cap) || !sameSlice(r.Payload, slow.Payload) || !sameSlice(r.Metadata, slow.Metadata) {
		t.Fatalf("%s: ParseRequestTo %+v %v, general %+v %v (%x)", what, r, err, slow, serr, b)
	}
	p, err := ParseResponse(b)
	q, serr := parseResponse(b)
	if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) ||
		p.Status != q.Status || p.PromiseID != q.PromiseID || p.NotRun != q.NotRun || !sameSlice(p.Body, q.Body) {
		t.Fatalf("%s: ParseResponse %+v %v, general %+v %v (%x)", what, p, err, q, serr, b)
	}
}

// The canonical runtime's envelopes (testdata/canonical), and every
// envelope one edit away from them that keeps the fast path's shape in
// play: each byte set to 0, 0xFF, and one more and one less; each
// truncation; a byte or eight appended; the size field and each slot's
// offset and length moved by -8..8. The fast paths and the general
// parsers agree on all of them (what the fast path takes, and the errors
// of what it passes on).
func TestFastPathAgreesNearCanonical(t *testing.T) {
	f := loadFixtures(t)
	var seeds [][]byte
	for _, e := range f.Envelopes {
		seeds = append(seeds, unhex(t, e.Hex))
	}
	// zapcodec's own, with the extension fields too.
	seeds = append(seeds,
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: []byte("payload"), Timeout: 5}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: []byte("payload"), Metadata: []byte("\x01\x00\x00\x00k\x01\x00\x00\x00v")}),
		AppendRefusalHeader(nil, 503, 9, 0),
		append(AppendRefusalHeader(nil, 503, 9, 3), "abc"...),
	)
	n := 0
	for _, seed := range seeds {
		agree(t, "seed", seed)
		for i := range seed {
			for _, v := range []byte{0, 0xFF, seed[i] + 1, seed[i] - 1} {
				b := append([]byte(nil), seed...)
				b[i] = v
				agree(t, "byte edit", b)
				n++
			}
			agree(t, "truncated", seed[:i])
		}
		agree(t, "one more byte", append(append([]byte(nil), seed...), 0))
		agree(t, "eight more bytes", append(append([]byte(nil), seed...), make([]byte, 8)...))
		// The size field and the slots' words: offsets and lengths moved.
		for _, at := range []int{12, headerSize + reqCap, headerSize + reqCap + 4, headerSize + reqPayload, headerSize + reqPayload + 4, headerSize + respBody, headerSize + respBody + 4} {
			if at+4 > len(seed) {
				continue
			}
			for d := -8; d <= 8; d++ {
				b := append([]byte(nil), seed...)
				binary.LittleEndian.PutUint32(b[at:], binary.LittleEndian.Uint32(b[at:])+uint32(d))
				agree(t, "word moved", b)
				// And the envelope grown to what a larger size says.
				if at == 12 && d > 0 {
					agree(t, "size and length", append(b, make([]byte, d)...))
				}
				n++
			}
		}
	}
	t.Logf("%d envelopes near %d seeds", n, len(seeds))
}
