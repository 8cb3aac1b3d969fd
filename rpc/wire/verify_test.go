package wire

import (
	"encoding/binary"
	"testing"
)

// agree fails the test unless ParseRequest and ParseResponse (with their
// inline fast paths) give for b exactly what the general parsers give:
// the same fields, the same slices, the same error text; and unless what
// the read loops' own parses (ParsePlainRequest, ParseDeadlineRequest,
// ParsePlainResponse) accept, the general parsers accept too, with every
// field the same (the flags included).
func agree(t *testing.T, what string, b []byte) {
	t.Helper()
	var r Request
	err := ParseRequestTo(&r, b)
	slow, serr := parseRequest(b)
	if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) || !sameRequest(r, slow) {
		t.Fatalf("%s: ParseRequestTo %+v %v, general %+v %v (%x)", what, r, err, slow, serr, b)
	}
	var fast Request
	var ok bool
	if fast.Method, fast.PromiseID, fast.Target, fast.Payload, ok = ParsePlainRequest(b); ok && (serr != nil || !sameRequest(fast, slow)) {
		t.Fatalf("%s: ParsePlainRequest %+v, general %+v %v (%x)", what, fast, slow, serr, b)
	}
	fast = Request{}
	if fast.Method, fast.PromiseID, fast.Target, fast.Timeout, fast.Payload, ok = ParseDeadlineRequest(b); ok && (serr != nil || !sameRequest(fast, slow)) {
		t.Fatalf("%s: ParseDeadlineRequest %+v, general %+v %v (%x)", what, fast, slow, serr, b)
	}
	p, err := ParseResponse(b)
	q, serr := parseResponse(b)
	if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) || !sameResponse(p, q) {
		t.Fatalf("%s: ParseResponse %+v %v, general %+v %v (%x)", what, p, err, q, serr, b)
	}
	var fr Response
	if fr.Status, fr.PromiseID, fr.Body, ok = ParsePlainResponse(b); ok && (serr != nil || !sameResponse(fr, q)) {
		t.Fatalf("%s: ParsePlainResponse %+v, general %+v %v (%x)", what, fr, q, serr, b)
	}
}

// sameRequest reports whether a and b hold the same values and the same
// slices (see sameSlice), every field compared.
func sameRequest(a, b Request) bool {
	return a.Method == b.Method && a.PromiseID == b.PromiseID && a.Target == b.Target && a.Timeout == b.Timeout &&
		sameSlice(a.Cap, b.Cap) && sameSlice(a.Payload, b.Payload) && sameSlice(a.Metadata, b.Metadata) &&
		a.AcceptDeflate == b.AcceptDeflate && a.PayloadDeflated == b.PayloadDeflated
}

// sameResponse is sameRequest for answers.
func sameResponse(a, b Response) bool {
	return a.Status == b.Status && a.PromiseID == b.PromiseID && a.NotRun == b.NotRun &&
		sameSlice(a.Body, b.Body) && sameSlice(a.Metadata, b.Metadata) &&
		a.Deflated == b.Deflated && a.TakesDeflate == b.TakesDeflate
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
		// The layouts the read loops parse by hand, and their neighbours
		// with the flags word.
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Timeout: 5}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Target: 2, Timeout: 1 << 40, Payload: []byte("p")}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: []byte("payload"), AcceptDeflate: true}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Timeout: 5, PayloadDeflated: true}),
		AppendResponse(nil, &Response{Status: 200, PromiseID: 7, Body: []byte("body"), Deflated: true}),
		AppendResponse(nil, &Response{Status: 200, PromiseID: 7, TakesDeflate: true}),
		AppendResponse(nil, &Response{Status: 200, PromiseID: 7, Body: []byte("body"), Metadata: []byte("\x01\x00\x00\x00k\x01\x00\x00\x00v")}),
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
		for _, at := range []int{12, headerSize + reqCap, headerSize + reqCap + 4, headerSize + reqPayload, headerSize + reqPayload + 4, headerSize + respBody, headerSize + respBody + 4,
			headerSize + reqTimeout, headerSize + reqMetadata, headerSize + reqFlags, headerSize + respFlags, headerSize + respMetadata} {
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
