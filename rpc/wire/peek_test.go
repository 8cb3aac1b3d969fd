package wire

import (
	"math/rand/v2"
	"testing"
)

// TestPeekEnvelope: the head of any request or answer this package
// writes, from 24 bytes on (the header and the root's first two fields),
// gives its method or status and its promise id; a shorter head gives
// none. Over corrupted envelopes, whenever the whole envelope parses,
// PeekEnvelope of it agrees with the parse.
func TestPeekEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 4))
	agreed := 0
	for i := range 4000 {
		var env []byte
		var first, pid uint32
		if i%2 == 0 {
			r := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32() % 3,
				Cap: randomBytes(rng, rng.IntN(3)), Payload: randomBytes(rng, rng.IntN(40))}
			if rng.IntN(2) == 0 {
				r.Timeout = rng.Uint64()
			}
			if rng.IntN(3) == 0 {
				r.Metadata = []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}
			}
			env = AppendRequest(nil, &r)
			first, pid = r.Method, r.PromiseID
		} else {
			r := Response{Status: 200 + rng.Uint32()%400, PromiseID: rng.Uint32(), Body: randomBytes(rng, rng.IntN(40)), NotRun: rng.IntN(2) == 0}
			env = AppendResponse(nil, &r)
			first, pid = r.Status, r.PromiseID
		}
		for n := range min(len(env), 64) + 1 {
			f, p, ok := PeekEnvelope(env[:n])
			if ok != (n >= 24) || ok && (f != first || p != pid) {
				t.Fatalf("envelope %d, head of %d bytes: %d %d %v; want %d %d %v", i, n, f, p, ok, first, pid, n >= 24)
			}
		}
		bad := corruptEnvelope(rng, env, 16)
		f, p, ok := PeekEnvelope(bad)
		if i%2 == 0 {
			if r, err := ParseRequest(bad); err == nil {
				agreed++
				if !ok || f != r.Method || p != r.PromiseID {
					t.Fatalf("corrupted request %x: peek %d %d %v, parse %+v", bad, f, p, ok, r)
				}
			}
		} else if r, err := ParseResponse(bad); err == nil {
			agreed++
			if !ok || f != r.Status || p != r.PromiseID {
				t.Fatalf("corrupted answer %x: peek %d %d %v, parse %+v", bad, f, p, ok, r)
			}
		}
	}
	if agreed < 500 {
		t.Fatalf("only %d corrupted envelopes parsed: the check saw too few", agreed)
	}
	for _, h := range [][]byte{
		[]byte("ZAP\x00\x03\x00\x00\xC8\x10\x00\x00\x00\x20\x00\x00\x00abcdefgh"), // version 3
		[]byte("ZAP\x00\x02\x00\x00\xC7\x10\x00\x00\x00\x20\x00\x00\x00abcdefgh"), // type 199
		[]byte("ZAQ\x00\x02\x00\x00\xC8\x10\x00\x00\x00\x20\x00\x00\x00abcdefgh"), // magic
		[]byte("ZAP\x00\x02\x00\x00\xC8\x08\x00\x00\x00\x20\x00\x00\x00abcdefgh"), // root in the header
		[]byte("ZAP\x00\x02\x00\x00\xC8\x10\x00\x00\x00\x17\x00\x00\x00abcdefgh"), // size short of the fields
		[]byte("ZAP\x00\x02\x00\x00\xC8\xF0\xFF\xFF\xFF\xFF\xFF\xFF\xFFabcdefgh"), // root far away
	} {
		if f, p, ok := PeekEnvelope(h); ok {
			t.Errorf("%q: %d %d ok", h, f, p)
		}
	}
	if f, p, ok := PeekEnvelope([]byte("ZAP\x00\x01\x00\x00\xC8\x10\x00\x00\x00\x18\x00\x00\x00\x07\x00\x00\x00\x09\x00\x00\x00")); !ok || f != 7 || p != 9 {
		t.Errorf("version 1: %d %d %v", f, p, ok)
	}
}
