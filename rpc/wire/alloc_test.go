//go:build !race

package wire

import "testing"

// Encoding and parsing envelopes, with and without the extension fields,
// allocates nothing: both run once per call on each side.
func TestAllocsEnvelope(t *testing.T) {
	buf := make([]byte, 0, 256)
	plain, ext, resp := benchEnvelopes()
	req := &Request{Method: 1, PromiseID: 2, Cap: []byte("cap"), Payload: []byte("payload")}
	extReq := &Request{Method: 1, PromiseID: 2, Cap: []byte("cap"), Payload: []byte("payload"),
		Timeout: 9, Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}}
	if n := testing.AllocsPerRun(100, func() {
		for _, r := range []*Request{req, extReq} {
			b := AppendRequest(buf[:0], r)
			if _, err := ParseRequest(b); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range [][]byte{plain, ext} {
			if _, err := ParseRequest(b); err != nil {
				t.Fatal(err)
			}
		}
		b := AppendResponseHeader(buf[:0], 200, 2, 0)
		if _, err := ParseResponse(b); err != nil {
			t.Fatal(err)
		}
		b = AppendResponse(buf[:0], &Response{Status: 503, PromiseID: 2, NotRun: true})
		if _, err := ParseResponse(b); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseResponse(resp); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("envelope encode/parse: %v allocs, want 0", n)
	}
}
