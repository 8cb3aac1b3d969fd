package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

func TestEnvelopeFixtures(t *testing.T) {
	f := loadFixtures(t)
	if len(f.Envelopes) == 0 {
		t.Fatal("no envelopes in rpc.json")
	}
	for _, e := range f.Envelopes {
		t.Run(e.Name, func(t *testing.T) {
			want := unhex(t, e.Hex)
			prefix := []byte("prefix!")
			switch e.Kind {
			case "request":
				r := Request{Method: e.In.Method, PromiseID: e.In.PromiseID, Target: e.In.Target,
					Cap: unhex(t, e.In.Cap), Payload: unhex(t, e.In.Payload)}
				if got := AppendRequest(nil, &r); !bytes.Equal(got, want) {
					t.Fatalf("AppendRequest:\n got %x\nwant %x", got, want)
				}
				got := AppendRequest(append([]byte(nil), prefix...), &r)
				if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
					t.Fatalf("AppendRequest after prefix: %x", got)
				}
				p, err := ParseRequest(want)
				if err != nil {
					t.Fatal(err)
				}
				if p.Method != r.Method || p.PromiseID != r.PromiseID || p.Target != r.Target ||
					!bytes.Equal(p.Cap, r.Cap) || !bytes.Equal(p.Payload, r.Payload) {
					t.Fatalf("ParseRequest = %+v, want %+v", p, r)
				}
			case "response":
				r := Response{Status: e.In.Status, PromiseID: e.In.PromiseID, Body: unhex(t, e.In.Body)}
				if got := AppendResponse(nil, &r); !bytes.Equal(got, want) {
					t.Fatalf("AppendResponse:\n got %x\nwant %x", got, want)
				}
				p, err := ParseResponse(want)
				if err != nil {
					t.Fatal(err)
				}
				if p.Status != r.Status || p.PromiseID != r.PromiseID || !bytes.Equal(p.Body, r.Body) {
					t.Fatalf("ParseResponse = %+v, want %+v", p, r)
				}
			default:
				t.Fatalf("unknown kind %q", e.Kind)
			}
		})
	}
}

func TestPatchResponseBodyLen(t *testing.T) {
	for _, n := range []int{0, 1, 8, 100} {
		body := bytes.Repeat([]byte{0xAB}, n)
		want := AppendResponse(nil, &Response{Status: 200, PromiseID: 9, Body: body})
		got := AppendResponseHeader(nil, 200, 9, 12345)
		got = append(got, body...)
		patchResponseBodyLen(got, n)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d:\n got %x\nwant %x", n, got, want)
		}
	}
}

func TestParseHostile(t *testing.T) {
	good := AppendRequest(nil, &Request{Method: 3, PromiseID: 77, Target: 1, Cap: []byte("cap"), Payload: []byte("payload!")})
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	put32 := func(off int, v uint32) func(b []byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	cases := []struct {
		name    string
		in      []byte
		reason  string
		promise bool
		off     int   // EnvelopeError.Offset
		codec   error // the codec sentinel it also matches, if any
	}{
		{"empty", nil, "shorter", false, 0, codec.ErrTooSmall},
		{"short header", good[:15], "shorter", false, 15, codec.ErrTooSmall},
		{"short 12", good[:12], "shorter", false, 12, codec.ErrTooSmall},
		{"bad magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), "magic", false, 0, codec.ErrMagic},
		{"version 3", mut(func(b []byte) []byte { b[4] = 3; return b }), "version", false, 4, codec.ErrVersion},
		{"version 0", mut(func(b []byte) []byte { b[4] = 0; return b }), "version", false, 4, codec.ErrVersion},
		{"type 1", mut(func(b []byte) []byte { b[7] = 1; return b }), "type", false, 7, nil},
		{"size huge", mut(put32(12, 0xFFFFFFFF)), "size field outside the buffer", false, 12, codec.ErrTooSmall},
		{"size < 16", mut(put32(12, 15)), "size field smaller than the 16-byte header", false, 12, codec.ErrTooSmall},
		{"size 0", mut(put32(12, 0)), "size field smaller than the 16-byte header", false, 12, codec.ErrTooSmall},
		{"truncated buffer", good[:len(good)-1], "size field outside the buffer", false, 12, codec.ErrTooSmall},
		{"root 0", mut(put32(8, 0)), "root", false, 8, nil},
		{"root in header", mut(put32(8, 8)), "root", false, 8, nil},
		{"root past end", mut(put32(8, uint32(len(good)))), "root", false, 8, nil},
		{"root near end", mut(put32(8, uint32(len(good)-4))), "promise_id", false, len(good), nil},
		{"fixed truncated", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], 16+10)
			return b[:16+10]
		}), "fixed section", true, 26, nil},
		{"cap out", mut(put32(16+12, 0xFFFFFFF0)), "cap", true, 28, codec.ErrOutOfBounds},
		{"cap len out", mut(put32(16+16, 0xFFFFFFFF)), "cap", true, 28, codec.ErrOutOfBounds},
		{"payload out", mut(put32(16+24, 1000)), "payload", true, 36, codec.ErrOutOfBounds},
		{"payload wraps", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[16+20:], 8)
			binary.LittleEndian.PutUint32(b[16+24:], 0xFFFFFFF8)
			return b
		}), "payload", true, 36, codec.ErrOutOfBounds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest(c.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v is not ErrMalformed", err)
			}
			var ee *EnvelopeError
			if !errors.As(err, &ee) || !bytes.Contains([]byte(ee.Reason), []byte(c.reason)) {
				t.Fatalf("error %q, want reason containing %q", err, c.reason)
			}
			if ee.Offset != c.off {
				t.Fatalf("Offset %d, want %d", ee.Offset, c.off)
			}
			if c.codec != nil && !errors.Is(err, c.codec) {
				t.Fatalf("%v does not match %v", err, c.codec)
			}
			if c.codec == nil && ee.Err != nil {
				t.Fatalf("Err %v, want nil (codec accepted the bytes)", ee.Err)
			}
			if ee.HasPromise != c.promise || (c.promise && ee.PromiseID != 77) {
				t.Fatalf("HasPromise=%v PromiseID=%d, want %v", ee.HasPromise, ee.PromiseID, c.promise)
			}
			if _, err := ParseResponse(c.in); err == nil && c.reason != "cap" && c.reason != "payload" {
				t.Fatalf("ParseResponse accepted %s", c.name)
			}
		})
	}
	// Bytes past size are ignored; version 1 is accepted.
	b := append(append([]byte(nil), good...), 1, 2, 3)
	b[4] = 1
	r, err := ParseRequest(b)
	if err != nil || r.Method != 3 || string(r.Payload) != "payload!" || string(r.Cap) != "cap" {
		t.Fatalf("trailing bytes/version 1: %+v %v", r, err)
	}
	// {0, n} is an empty value (null), not an error.
	b = mut(put32(16+12, 0))
	if r, err = ParseRequest(b); err != nil || r.Cap != nil {
		t.Fatalf("null cap: %+v %v", r, err)
	}
	// So is {x, 0}: empty values read as nil, as they always have.
	b = mut(put32(16+16, 0))
	if r, err = ParseRequest(b); err != nil || r.Cap != nil || string(r.Payload) != "payload!" {
		t.Fatalf("cap {x, 0}: %+v %v", r, err)
	}
	resp := AppendResponse(nil, &Response{Status: 200, PromiseID: 5, Body: []byte("body")})
	binary.LittleEndian.PutUint32(resp[16+16:], 0)
	if r, err := ParseResponse(resp); err != nil || r.Body != nil || r.PromiseID != 5 {
		t.Fatalf("body {x, 0}: %+v %v", r, err)
	}
}

func TestEnvelopeRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for i := 0; i < 2000; i++ {
		req := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32(), Cap: rnd(40), Payload: rnd(300)}
		b := AppendRequest(rnd(13), &req)
		pre := len(b) - (RequestOverhead + len(req.Cap) + len(req.Payload))
		// RequestLen, for the extensions too: the fixed section is 28
		// bytes, 36 with a timeout, 44 with metadata (AppendRequest's
		// doc comment; TestRequestExtensionDetection parses them).
		md := append(rnd(50), 1)
		for _, tc := range []struct {
			r     Request
			fixed int
		}{
			{req, 28},
			{Request{Timeout: rng.Uint64() | 1, Payload: req.Payload}, 36},
			{Request{Metadata: md, Cap: req.Cap}, 44},
			{Request{Metadata: md, Timeout: 1}, 44},
		} {
			want := headerSize + tc.fixed + len(tc.r.Cap) + len(tc.r.Payload) + len(tc.r.Metadata)
			if n, appended := RequestLen(&tc.r), len(AppendRequest(nil, &tc.r)); n != want || appended != want {
				t.Fatalf("request %d: RequestLen %d, AppendRequest appended %d, want %d (timeout %d, %d bytes of metadata)", i, n, appended, want, tc.r.Timeout, len(tc.r.Metadata))
			}
		}
		got, err := ParseRequest(b[pre:])
		if err != nil || got.Method != req.Method || got.PromiseID != req.PromiseID || got.Target != req.Target ||
			!bytes.Equal(got.Cap, req.Cap) || !bytes.Equal(got.Payload, req.Payload) {
			t.Fatalf("request %d: %+v %v", i, got, err)
		}
		resp := Response{Status: rng.Uint32(), PromiseID: rng.Uint32(), Body: rnd(300)}
		b = AppendResponse(nil, &resp)
		gr, err := ParseResponse(b)
		if err != nil || gr.Status != resp.Status || gr.PromiseID != resp.PromiseID || !bytes.Equal(gr.Body, resp.Body) {
			t.Fatalf("response %d: %+v %v", i, gr, err)
		}
	}
}

// FuzzEnvelope: the envelope parsers never panic nor change their input;
// an error is an *EnvelopeError that says where in the input it broke and,
// when it has one, the promise_id the envelope carries; what they accept a
// canonical reader reads alike, its byte slices are nil when empty and
// otherwise views of the message whose capacity ends with them, and it
// re-encodes to an envelope that parses to the same values.
func FuzzEnvelope(f *testing.F) {
	f.Add(AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Cap: []byte("c"), Payload: []byte("pp")}))
	f.Add(AppendResponse(nil, &Response{Status: 200, PromiseID: 1, Body: []byte("body")}))
	f.Add(AppendRequest(nil, &Request{}))
	f.Add([]byte("ZAP\x00\x02\x00\x00\xc8"))
	// Requests with the zapcodec extensions (timeout, metadata).
	f.Add(AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Timeout: 1500}))
	f.Add(AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Timeout: 9, Cap: []byte("c"), Payload: []byte("pp")}))
	f.Add(AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}}))
	f.Add(AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Timeout: 1, Cap: []byte("c"), Payload: []byte("pp"),
		Metadata: []byte{2, 0, 0, 0, 't', 'p', 0, 0, 0, 0}}))
	f.Add(AppendResponse(nil, &Response{Status: 503, PromiseID: 4, Body: []byte("b"), NotRun: true}))
	// Answers with response metadata.
	f.Add(AppendResponse(nil, &Response{Status: 200, PromiseID: 5, Body: []byte("ok"), Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}}))
	f.Add(AppendResponse(nil, &Response{Status: 500, PromiseID: 6, Metadata: []byte{1, 0, 0, 0, 'k', 0, 0, 0, 0}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := append([]byte(nil), b...)
		// PeekEnvelope of any prefix (a read loop's head of a frame over
		// its maximum) never panics, and agrees with a parse that
		// succeeds, checked below.
		peeks := func(check func(first, pid uint32)) {
			for _, n := range []int{len(b), min(len(b), 64), min(len(b), 24)} {
				if first, pid, ok := PeekEnvelope(b[:n]); ok && check != nil {
					check(first, pid)
				}
			}
		}
		peeks(nil)
		r, err := ParseRequest(b)
		checkEnvelopeError(t, b, err)
		if err == nil {
			peeks(func(first, pid uint32) {
				if first != r.Method || pid != r.PromiseID {
					t.Fatalf("PeekEnvelope %d %d, ParseRequest %+v", first, pid, r)
				}
			})
			// A canonical reader finds the same canonical fields, and the
			// slices are views of the message that cannot grow into it.
			m, perr := codec.Parse(b)
			root := m.Root()
			if perr != nil || root.Uint32(reqMethod) != r.Method || root.Uint32(reqPromise) != r.PromiseID ||
				root.Uint32(reqTarget) != r.Target || !bytes.Equal(root.Bytes(reqCap), r.Cap) ||
				!bytes.Equal(root.Bytes(reqPayload), r.Payload) {
				t.Fatalf("ParseRequest %+v, a canonical reader disagrees (%v)", r, perr)
			}
			for _, v := range [][]byte{r.Cap, r.Payload, r.Metadata} {
				checkView(t, m.Bytes(), v)
			}
			// It re-encodes to a message that parses to the same values.
			again, err := ParseRequest(AppendRequest(nil, &r))
			if err != nil || again.Method != r.Method || again.PromiseID != r.PromiseID || again.Target != r.Target ||
				!bytes.Equal(again.Cap, r.Cap) || !bytes.Equal(again.Payload, r.Payload) ||
				again.Timeout != r.Timeout || !bytes.Equal(again.Metadata, r.Metadata) {
				t.Fatalf("re-encode mismatch: %+v vs %+v (%v)", again, r, err)
			}
		}
		a, err := ParseResponse(b)
		checkEnvelopeError(t, b, err)
		if err == nil {
			peeks(func(first, pid uint32) {
				if first != a.Status || pid != a.PromiseID {
					t.Fatalf("PeekEnvelope %d %d, ParseResponse %+v", first, pid, a)
				}
			})
			m, perr := codec.Parse(b)
			root := m.Root()
			if perr != nil || root.Uint32(respStatus) != a.Status || root.Uint32(respPromise) != a.PromiseID ||
				!bytes.Equal(root.Bytes(respBody), a.Body) {
				t.Fatalf("ParseResponse %+v, a canonical reader disagrees (%v)", a, perr)
			}
			checkView(t, m.Bytes(), a.Body)
			checkView(t, m.Bytes(), a.Metadata)
			again, err := ParseResponse(AppendResponse(nil, &a))
			if err != nil || again.Status != a.Status || again.PromiseID != a.PromiseID || again.NotRun != a.NotRun ||
				!bytes.Equal(again.Body, a.Body) || !bytes.Equal(again.Metadata, a.Metadata) {
				t.Fatalf("re-encode mismatch: %+v vs %+v (%v)", again, a, err)
			}
		}
		if !bytes.Equal(orig, b) {
			t.Fatal("parser modified its input")
		}
	})
}

// checkEnvelopeError fails t unless err, from parsing b, is nil or an
// *EnvelopeError matching ErrMalformed whose offset lies in b and whose
// promise_id, when it has one, is the one at its root object.
func checkEnvelopeError(t *testing.T, b []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ee *EnvelopeError
	if !errors.As(err, &ee) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v (%T) is not an *EnvelopeError", err, err)
	}
	if ee.Offset < 0 || ee.Offset > len(b) {
		t.Fatalf("%v: offset %d outside the %d-byte input", err, ee.Offset, len(b))
	}
	if ee.HasPromise {
		root := int(binary.LittleEndian.Uint32(b[8:]))
		if p := binary.LittleEndian.Uint32(b[root+reqPromise:]); p != ee.PromiseID {
			t.Fatalf("%v: promise_id %d, the envelope's is %d", err, ee.PromiseID, p)
		}
	}
}

// checkView fails t unless v is nil when empty and otherwise lies inside
// msg with no capacity past its end (an append to it must not write over
// the message).
func checkView(t *testing.T, msg, v []byte) {
	t.Helper()
	if len(v) == 0 {
		if v != nil {
			t.Fatal("an empty value is not nil")
		}
		return
	}
	if cap(v) != len(v) {
		t.Fatalf("a %d-byte value has capacity %d", len(v), cap(v))
	}
	for i := 0; i+len(v) <= len(msg); i++ {
		if &msg[i] == &v[0] {
			return
		}
	}
	t.Fatalf("a %d-byte value is not a view of the %d-byte message", len(v), len(msg))
}

// The not-run flag is an extension field past the canonical fixed section:
// it round-trips, a canonical answer never reads as flagged (even when its
// body starts with a word whose low bit is set), and a canonical reader of
// a flagged answer still finds status, promise and body where it looks.
func TestResponseNotRunFlag(t *testing.T) {
	body := []byte{1, 0, 0, 0, 'x'}
	for _, tc := range []struct {
		name string
		in   Response
	}{
		{"flagged with body", Response{Status: 503, PromiseID: 9, Body: body, NotRun: true}},
		{"flagged empty", Response{Status: 503, PromiseID: 10, NotRun: true}},
		{"canonical with body", Response{Status: 200, PromiseID: 11, Body: body}},
		{"canonical empty", Response{Status: 500, PromiseID: 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendResponse(nil, &tc.in)
			want := ResponseOverhead + len(tc.in.Body)
			if tc.in.NotRun {
				want += respExtFixedSize - ResponseFixedSize
			}
			if len(b) != want {
				t.Fatalf("len %d, want %d", len(b), want)
			}
			got, err := ParseResponse(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.in.Status || got.PromiseID != tc.in.PromiseID ||
				!bytes.Equal(got.Body, tc.in.Body) || got.NotRun != tc.in.NotRun {
				t.Fatalf("parsed %+v, want %+v", got, tc.in)
			}
			// What a canonical reader sees: the fields at their offsets.
			m, err := codec.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			r := m.Root()
			if r.Uint32(respStatus) != tc.in.Status || r.Uint32(respPromise) != tc.in.PromiseID ||
				!bytes.Equal(r.Bytes(respBody), tc.in.Body) {
				t.Fatalf("canonical view: status %d promise %d body %x", r.Uint32(respStatus), r.Uint32(respPromise), r.Bytes(respBody))
			}
		})
	}
}

// Extension fields are found only before the first tail: a canonical
// request whose payload starts with bytes that would read as a timeout
// and a metadata slot has neither, whatever the tails' order.
func TestRequestExtensionDetection(t *testing.T) {
	tricky := bytes.Repeat([]byte{0xFF}, 32)
	for _, r := range []Request{
		{Method: 1, PromiseID: 2, Payload: tricky},
		{Method: 1, PromiseID: 2, Cap: tricky},
		{Method: 1, PromiseID: 2, Cap: tricky, Payload: tricky},
		{Method: 1, PromiseID: 2, Timeout: 5, Payload: tricky},
		{Method: 1, PromiseID: 2, Timeout: 5},
		{Method: 1, PromiseID: 2, Metadata: []byte{1, 0, 0, 0, 'a', 1, 0, 0, 0, 'b'}},
		{Method: 1, PromiseID: 2, Timeout: 7, Cap: []byte("c"), Metadata: []byte{1, 0, 0, 0, 'a', 1, 0, 0, 0, 'b'}, Payload: tricky},
	} {
		b := AppendRequest(nil, &r)
		want := RequestOverhead + len(r.Cap) + len(r.Payload) + len(r.Metadata)
		switch {
		case r.Metadata != nil:
			want += reqExtFixedSize - RequestFixedSize
		case r.Timeout != 0:
			want += reqExtDeadlineSize - RequestFixedSize
		}
		if len(b) != want {
			t.Fatalf("%+v: %d bytes, want %d", r, len(b), want)
		}
		got, err := ParseRequest(b)
		if err != nil || !sameCanonical(got, r) || got.Timeout != r.Timeout || !bytes.Equal(got.Metadata, r.Metadata) {
			t.Fatalf("%+v: parsed %+v %v", r, got, err)
		}
	}
	// An empty value whose slot is not null ({offset, 0}) marks where the
	// tails start as any value does: a cap slot pointing into the timeout
	// word leaves no room for it (docs/wire.md §8).
	b := AppendRequest(nil, &Request{Method: 1, PromiseID: 2, Timeout: 5, Payload: []byte("xyz")})
	binary.LittleEndian.PutUint64(b[headerSize+reqCap:], uint64(headerSize+reqTimeout+4-(headerSize+reqCap)))
	if r, err := ParseRequest(b); err != nil || r.Timeout != 0 || r.Cap != nil || string(r.Payload) != "xyz" {
		t.Fatalf("cap {offset into the timeout, 0}: %+v %v", r, err)
	}
	// A metadata slot pointing outside the message is malformed.
	b = AppendRequest(nil, &Request{Method: 1, PromiseID: 9, Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}})
	binary.LittleEndian.PutUint32(b[headerSize+reqMetadata+4:], 1000)
	if _, err := ParseRequest(b); err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("metadata out of bounds: %v", err)
	}
}

func sameCanonical(a, b Request) bool {
	return a.Method == b.Method && a.PromiseID == b.PromiseID && a.Target == b.Target &&
		bytes.Equal(a.Cap, b.Cap) && bytes.Equal(a.Payload, b.Payload)
}

// FuzzCanonicalFastPath: whatever the canonical fast paths of ParseRequest
// and ParseResponse accept (and the read loops' ParsePlainRequest,
// ParseDeadlineRequest, ParsePlainResponse), the general parsers accept
// too, with the same values, every field and flag (the same slices: same
// start, length and capacity; nil where they give nil). Seeds: envelopes AppendRequest/AppendResponse write,
// with and without payload, and near misses (a size one short, a payload
// slot that stops early, a tail after the payload, a cap).
func FuzzCanonicalFastPath(f *testing.F) {
	p := []byte("payload")
	for _, b := range [][]byte{
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Target: 1, Payload: p}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Cap: []byte("c"), Payload: p}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: p, Timeout: 5}),
		AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Timeout: 5}),
		AppendResponse(nil, &Response{Status: 200, PromiseID: 7, Body: p}),
		AppendResponse(nil, &Response{Status: 500, PromiseID: 7}),
		AppendResponse(nil, &Response{Status: 503, PromiseID: 7, Body: p, NotRun: true}),
		AppendResponse(nil, &Response{Status: 200, PromiseID: 7, Body: p, Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}),
	} {
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(append([]byte(nil), b...), 0))
		short := append([]byte(nil), b...)
		if len(short) > RequestOverhead {
			short[40]-- // the payload (request) slot's length one short
			f.Add(short)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// ParseRequest and ParseResponse repeat the fast paths inline:
		// they give what the general parsers give, whatever the input.
		if got, err := ParseRequest(b); err == nil {
			slow, serr := parseRequest(b)
			if serr != nil || !sameRequest(got, slow) {
				t.Fatalf("ParseRequest %+v, general %+v (%v)", got, slow, serr)
			}
		} else if _, serr := parseRequest(b); serr == nil || serr.Error() != err.Error() {
			t.Fatalf("ParseRequest error %v, general %v", err, serr)
		}
		// ParseRequestTo sets every field, whatever *r held.
		dreq := Request{Method: 1, PromiseID: 2, Target: 3, Cap: []byte("c"), Payload: []byte("p"), Timeout: 4, Metadata: []byte("m")}
		dqerr := ParseRequestTo(&dreq, b)
		if got, err := ParseRequest(b); (err == nil) != (dqerr == nil) || !sameRequest(got, dreq) {
			t.Fatalf("ParseRequestTo over a used Request: %+v (%v), ParseRequest %+v (%v)", dreq, dqerr, got, err)
		}
		// ParseResponseTo sets every field, whatever *r held.
		dirty := Response{Status: 1, PromiseID: 2, Body: []byte("old"), NotRun: true, Metadata: []byte("m")}
		derr := ParseResponseTo(&dirty, b)
		if got, err := ParseResponse(b); (err == nil) != (derr == nil) || !sameResponse(got, dirty) {
			t.Fatalf("ParseResponseTo over a used Response: %+v (%v), ParseResponse %+v (%v)", dirty, derr, got, err)
		}
		if got, err := ParseResponse(b); err == nil {
			slow, serr := parseResponse(b)
			if serr != nil || !sameResponse(got, slow) {
				t.Fatalf("ParseResponse %+v, general %+v (%v)", got, slow, serr)
			}
		} else if _, serr := parseResponse(b); serr == nil || serr.Error() != err.Error() {
			t.Fatalf("ParseResponse error %v, general %v", err, serr)
		}
		if method, promise, target, timeout, payload, ok := ParseDeadlineRequest(b); ok {
			slow, err := parseRequest(b)
			if err != nil || !sameRequest(Request{Method: method, PromiseID: promise, Target: target, Timeout: timeout, Payload: payload}, slow) {
				t.Fatalf("ParseDeadlineRequest %d %d %d %d %x, general %+v (%v)", method, promise, target, timeout, payload, slow, err)
			}
		}
		if fast, ok := parseCanonicalRequest(b); ok {
			slow, err := parseRequest(b)
			if err != nil {
				t.Fatalf("fast path accepted a request the general parser refuses: %v", err)
			}
			if !sameRequest(fast, slow) {
				t.Fatalf("fast %+v, general %+v", fast, slow)
			}
		}
		if fast, ok := parseCanonicalResponse(b); ok {
			slow, err := parseResponse(b)
			if err != nil {
				t.Fatalf("fast path accepted an answer the general parser refuses: %v", err)
			}
			if !sameResponse(fast, slow) {
				t.Fatalf("fast %+v, general %+v", fast, slow)
			}
		}
	})
}

// sameSlice reports whether a and b are the same slice of the same
// memory (or both nil).
func sameSlice(a, b []byte) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) || cap(a) != cap(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// TestCanonicalFastPathTaken: the envelopes zapcodec writes without
// extension fields take the fast paths (the parse benchmarks measure
// them).
func TestCanonicalFastPathTaken(t *testing.T) {
	for _, r := range []Request{{Method: 3, PromiseID: 7, Payload: []byte("x")}, {Method: 1, PromiseID: 1 << 20}} {
		if _, ok := parseCanonicalRequest(AppendRequest(nil, &r)); !ok {
			t.Errorf("request %+v: fast path not taken", r)
		}
	}
	for _, r := range []Response{{Status: 200, PromiseID: 7, Body: []byte("x")}, {Status: 404, PromiseID: 2}} {
		if _, ok := parseCanonicalResponse(AppendResponse(nil, &r)); !ok {
			t.Errorf("answer %+v: fast path not taken", r)
		}
	}
	// A request with a cap, or a deadline, and a flagged answer take the
	// general path.
	for _, r := range []Request{{Method: 3, Cap: []byte("c")}, {Method: 3, Timeout: 9}} {
		if _, ok := parseCanonicalRequest(AppendRequest(nil, &r)); ok {
			t.Errorf("request %+v: fast path taken", r)
		}
	}
	if _, ok := parseCanonicalResponse(AppendResponse(nil, &Response{Status: 503, NotRun: true})); ok {
		t.Error("flagged answer: fast path taken")
	}
}

// TestFastPathBeyond4GiB: an envelope at the start of a buffer longer
// than 4 GiB is read as the message its size field declares. The fast
// paths compare the size field with len(b) shifted into the high word of
// a uint64, where a length of 4 GiB + k reads as k: without their length
// check they took such a buffer for a message of len(b) bytes, with a
// payload or body running to the end of the buffer, 4 GiB past the
// message.
func TestFastPathBeyond4GiB(t *testing.T) {
	const k = 64 // the size field: the message is b[:k]
	b := bigbuf.New(t, 1<<32+k)

	req := Request{Method: 3, PromiseID: 7, Payload: bytes.Repeat([]byte{'p'}, k-RequestOverhead)}
	copy(b, AppendRequest(nil, &req))
	var r Request
	if err := ParseRequestTo(&r, b); err != nil || !bytes.Equal(r.Payload, req.Payload) || r.PromiseID != 7 {
		t.Errorf("ParseRequestTo: %d-byte payload (%v), want %d bytes", len(r.Payload), err, len(req.Payload))
	}
	if fast, ok := parseCanonicalRequest(b); ok && len(fast.Payload) != len(req.Payload) {
		t.Errorf("parseCanonicalRequest: %d-byte payload, want %d bytes", len(fast.Payload), len(req.Payload))
	}

	resp := Response{Status: 200, PromiseID: 7, Body: bytes.Repeat([]byte{'b'}, k-ResponseOverhead)}
	copy(b, AppendResponse(nil, &resp))
	var a Response
	if err := ParseResponseTo(&a, b); err != nil || !bytes.Equal(a.Body, resp.Body) || a.PromiseID != 7 {
		t.Errorf("ParseResponseTo: %d-byte body (%v), want %d bytes", len(a.Body), err, len(resp.Body))
	}
	if fast, ok := parseCanonicalResponse(b); ok && len(fast.Body) != len(resp.Body) {
		t.Errorf("parseCanonicalResponse: %d-byte body, want %d bytes", len(fast.Body), len(resp.Body))
	}
}

// appendPlainRequest, the layout of nearly every call written in a few
// wide stores, writes the bytes of the general path.
func TestAppendPlainRequestMatchesGeneral(t *testing.T) {
	for _, r := range []Request{
		{},
		{Method: 3, PromiseID: 7},
		{Method: 3, PromiseID: 7, Payload: []byte("payload")},
		{Method: 0xFFFFFFFF, PromiseID: 0xFFFFFFFF, Target: 0xFFFFFFFF, Payload: make([]byte, 4096)},
		{Method: 1, PromiseID: 1 << 31, Target: 5},
	} {
		for _, prefix := range [][]byte{nil, []byte("prefix!")} {
			want := appendAnyRequest(append([]byte(nil), prefix...), &r)
			got := appendPlainRequest(append([]byte(nil), prefix...), r.Method, r.PromiseID, r.Target, r.Payload)
			if !bytes.Equal(got, want) {
				t.Fatalf("request %+v after %q:\n got %x\nwant %x", r, prefix, got, want)
			}
		}
	}
}

// AppendPlainRequest, on random requests of the plain layout appended
// to random prefixes with random spare room (none, some, exactly the
// envelope's), writes the bytes of the general path and leaves the
// prefix as it was; AppendRequest, which takes the same path, too; and
// PutPlainRequestHeader, into an array of random bytes, the first 44.
func TestAppendPlainRequestRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 14))
	for i := 0; i < 2000; i++ {
		payload := randomBytes(rng, rng.IntN(300))
		if rng.IntN(4) == 0 {
			payload = nil
		}
		r := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32(), Payload: payload}
		if rng.IntN(3) == 0 {
			r.Target = 0
		}
		prefix := make([]byte, rng.IntN(20))
		for j := range prefix {
			prefix[j] = byte(rng.Uint32())
		}
		size := RequestOverhead + len(payload)
		var spare int
		switch rng.IntN(3) {
		case 1:
			spare = rng.IntN(2 * size)
		case 2:
			spare = size
		}
		want := appendAnyRequest(append([]byte(nil), prefix...), &r)
		// PutPlainRequestHeader into room full of other bytes writes
		// every one of the 44.
		var h [RequestOverhead]byte
		for j := range h {
			h[j] = byte(rng.Uint32())
		}
		PutPlainRequestHeader(&h, r.Method, r.PromiseID, r.Target, len(r.Payload))
		if put := want[len(prefix) : len(prefix)+RequestOverhead]; !bytes.Equal(h[:], put) {
			t.Fatalf("PutPlainRequestHeader: request %d (%d-byte payload):\n got %x\nwant %x", i, len(payload), h[:], put)
		}
		for _, fn := range []struct {
			name   string
			append func([]byte) []byte
		}{
			{"AppendPlainRequest", func(b []byte) []byte {
				return AppendPlainRequest(b, r.Method, r.PromiseID, r.Target, r.Payload)
			}},
			{"AppendRequest", func(b []byte) []byte { return AppendRequest(b, &r) }},
		} {
			dst := append(make([]byte, 0, len(prefix)+spare), prefix...)
			got := fn.append(dst)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: request %d (%d-byte payload, %d-byte prefix, %d spare):\n got %x\nwant %x",
					fn.name, i, len(payload), len(prefix), spare, got, want)
			}
			if spare >= size && &got[0] != &dst[:1][0] {
				t.Fatalf("%s: request %d: a new array although dst had room for %d bytes", fn.name, i, size)
			}
		}
	}
}

// Response metadata is an extension field past the canonical fixed
// section (docs/wire.md §8). Without it every canonical answer of the
// fixtures is written byte for byte as the canonical runtime wrote it;
// with it, a canonical reader (status, promise and body at their offsets,
// WIRE.md §5) reads each fixture answer exactly as before; it round-trips
// with or without the not-run flag; a canonical answer whose body holds
// bytes that would read as the field never has it; a metadata slot
// outside the message is malformed.
func TestResponseMetadataExtension(t *testing.T) {
	md := []byte{2, 0, 0, 0, 'k', '1', 3, 0, 0, 0, 'v', 'a', 'l'}
	f := loadFixtures(t)
	n := 0
	for _, e := range f.Envelopes {
		if e.Kind != "response" {
			continue
		}
		n++
		want := unhex(t, e.Hex)
		plain := Response{Status: e.In.Status, PromiseID: e.In.PromiseID, Body: unhex(t, e.In.Body)}
		for _, none := range [][]byte{nil, {}} {
			r := plain
			r.Metadata = none
			if got := AppendResponse(nil, &r); !bytes.Equal(got, want) {
				t.Fatalf("%s, metadata %v: AppendResponse\n got %x\nwant %x", e.Name, none, got, want)
			}
		}
		canon := canonicalAnswer(t, want)
		for _, notRun := range []bool{false, true} {
			r := plain
			r.Metadata, r.NotRun = md, notRun
			b := AppendResponse(nil, &r)
			if len(b) != ResponseLen(&r) || len(b) != len(want)+ResponseMetadataOverhead+len(md) {
				t.Fatalf("%s: %d bytes, ResponseLen %d, want %d", e.Name, len(b), ResponseLen(&r), len(want)+ResponseMetadataOverhead+len(md))
			}
			if got := canonicalAnswer(t, b); got != canon {
				t.Fatalf("%s with metadata: a canonical reader reads %+v, without %+v", e.Name, got, canon)
			}
			p, err := ParseResponse(b)
			if err != nil || p.Status != r.Status || p.PromiseID != r.PromiseID || !bytes.Equal(p.Body, r.Body) ||
				p.NotRun != notRun || !bytes.Equal(p.Metadata, md) {
				t.Fatalf("%s: parsed %+v %v, want %+v", e.Name, p, err, r)
			}
		}
		if p, err := ParseResponse(want); err != nil || p.Metadata != nil {
			t.Fatalf("%s: the canonical answer parses with metadata %x (%v)", e.Name, p.Metadata, err)
		}
	}
	if n == 0 {
		t.Fatal("no responses in rpc.json")
	}
	// A canonical answer whose body starts with a flags word and a
	// metadata slot that would point into the message has no metadata.
	tricky := make([]byte, 24)
	binary.LittleEndian.PutUint64(tricky[4:], 8|uint64(4)<<32)
	for _, r := range []Response{{Status: 200, PromiseID: 3, Body: tricky}, {Status: 503, PromiseID: 3, Body: tricky, NotRun: true}} {
		p, err := ParseResponse(AppendResponse(nil, &r))
		if err != nil || p.Metadata != nil || !bytes.Equal(p.Body, tricky) || p.NotRun != r.NotRun {
			t.Fatalf("%+v: parsed %+v %v", r, p, err)
		}
	}
	// A metadata slot pointing outside the message is malformed, with the
	// promise id for the client to fail that call alone.
	b := AppendResponse(nil, &Response{Status: 200, PromiseID: 9, Body: []byte("b"), Metadata: md})
	binary.LittleEndian.PutUint32(b[headerSize+respMetadata+4:], 1<<31)
	var ee *EnvelopeError
	if _, err := ParseResponse(b); !errors.As(err, &ee) || !ee.HasPromise || ee.PromiseID != 9 ||
		!strings.Contains(err.Error(), "metadata") {
		t.Fatalf("metadata out of bounds: %v", err)
	}
}

// canonicalView is what a canonical client reads of an answer (WIRE.md
// §5): the status, the promise and the body, at their offsets.
type canonicalView struct {
	status, promise uint32
	body            string
}

// canonicalAnswer reads b as a canonical client does, with codec's
// generic reader (no knowledge of zapcodec's extension fields).
func canonicalAnswer(t *testing.T, b []byte) canonicalView {
	t.Helper()
	m, err := codec.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Root()
	return canonicalView{r.Uint32(respStatus), r.Uint32(respPromise), string(r.Bytes(respBody))}
}

// responseHeaderByParts is AppendResponseHeader written field by field
// with the general helpers (putHeader, putSlot), as it was before its
// word-wide stores: the reference TestAppendResponseHeaderWords compares
// it with.
func responseHeaderByParts(dst []byte, status, promiseID uint32, bodyLen int) []byte {
	start := len(dst)
	dst = grow(dst, ResponseOverhead)
	b := dst[start:]
	putHeader(b, uint32(ResponseOverhead+bodyLen))
	f := b[headerSize:ResponseOverhead]
	binary.LittleEndian.PutUint32(f[respStatus:], status)
	binary.LittleEndian.PutUint32(f[respPromise:], promiseID)
	binary.LittleEndian.PutUint32(f[respPromise+4:], 0)
	putSlot(f[respBody:], headerSize+respBody, ResponseOverhead, bodyLen)
	return dst
}

// TestAppendResponseHeaderWords checks AppendResponseHeader's word-wide
// stores (PutResponseHeader's) against the field-by-field reference and
// the general parser, on random statuses, promise ids, body lengths and
// destinations (a prefix kept, room or none, stale bytes where the header
// goes), and PutResponseHeader alone into an array of random bytes.
func TestAppendResponseHeaderWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 27))
	for i := range 20000 {
		status, pid := rng.Uint32(), rng.Uint32()
		switch i % 4 {
		case 0:
			status = 200
		case 1:
			pid = 0
		}
		n := 0
		if i%3 != 0 {
			n = rng.IntN(600)
		}
		prefix := make([]byte, rng.IntN(40), 40+rng.IntN(80))
		for k := range prefix[:cap(prefix)] {
			prefix[:cap(prefix)][k] = byte(rng.Uint32())
		}
		body := make([]byte, n)
		for k := range body {
			body[k] = byte(rng.Uint32())
		}
		want := append(responseHeaderByParts(bytes.Clone(prefix), status, pid, n), body...)
		// PutResponseHeader into room full of other bytes writes every
		// one of the 36.
		var h [ResponseOverhead]byte
		for k := range h {
			h[k] = byte(rng.Uint32())
		}
		PutResponseHeader(&h, status, pid, n)
		if put := want[len(prefix) : len(prefix)+ResponseOverhead]; !bytes.Equal(h[:], put) {
			t.Fatalf("PutResponseHeader: status %d pid %d body %d:\n got %x\nwant %x", status, pid, n, h[:], put)
		}
		got := append(AppendResponseHeader(prefix, status, pid, n), body...)
		if !bytes.Equal(got, want) {
			t.Fatalf("status %d pid %d body %d prefix %d:\n got %x\nwant %x", status, pid, n, len(prefix), got, want)
		}
		r, err := parseResponse(got[len(prefix):])
		if err != nil || r.Status != status || r.PromiseID != pid || !bytes.Equal(r.Body, body) || r.NotRun || r.Metadata != nil {
			t.Fatalf("status %d pid %d body %d: parseResponse = %+v, %v", status, pid, n, r, err)
		}
	}
}

// ParseDeadlineRequest on random requests (with a timeout alone, 0 too,
// as PutDeadlineRequestHeader writes them; plain; with cap, metadata,
// flags besides the timeout) and on random corruptions of them: what it
// accepts the general parser accepts with the same values (the same
// payload slice) and no cap, metadata or flags, and it accepts every
// envelope PutDeadlineRequestHeader and its payload make.
func TestParseDeadlineRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 36))
	randBytes := func(n int) []byte { return randomBytes(rng, n) }
	corrupt := func(b []byte) []byte { return corruptEnvelope(rng, b, DeadlineRequestOverhead) }
	accepted := 0
	for i := 0; i < 10000; i++ {
		payload := randBytes(rng.IntN(100))
		r := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32(), Payload: payload,
			Timeout: 1 + uint64(rng.Uint32())}
		var env []byte
		deadline := false
		switch rng.IntN(6) {
		case 0:
			r.Timeout = 0
			env = AppendRequest(nil, &r)
		case 1:
			r.Cap = randBytes(1 + rng.IntN(8))
			env = AppendRequest(nil, &r)
		case 2:
			r.Metadata = []byte{1, 0, 0, 0, 'k', 0, 0, 0, 0}
			env = AppendRequest(nil, &r)
		case 3:
			r.AcceptDeflate = true
			env = AppendRequest(nil, &r)
		default:
			if rng.IntN(8) == 0 {
				r.Timeout = 0 // not what a client writes, but the layout
			}
			var h [DeadlineRequestOverhead]byte
			PutDeadlineRequestHeader(&h, r.Method, r.PromiseID, r.Target, r.Timeout, len(payload))
			env = append(h[:], payload...)
			deadline = true
		}
		for j, b := range [][]byte{env, corrupt(env), corrupt(env), corrupt(env)} {
			method, promise, target, timeout, got, ok := ParseDeadlineRequest(b)
			if j == 0 && deadline && !ok {
				t.Fatalf("request %d: %x, written by PutDeadlineRequestHeader, refused", i, b)
			}
			if !ok {
				if method != 0 || promise != 0 || target != 0 || timeout != 0 || got != nil {
					t.Fatalf("request %d.%d %x: refused with values %d %d %d %d %x", i, j, b, method, promise, target, timeout, got)
				}
				continue
			}
			accepted++
			want, err := parseRequest(b)
			if err != nil || method != want.Method || promise != want.PromiseID || target != want.Target ||
				timeout != want.Timeout || !sameSlice(got, want.Payload) || want.Cap != nil || want.Metadata != nil ||
				want.AcceptDeflate || want.PayloadDeflated {
				t.Fatalf("request %d.%d %x: ParseDeadlineRequest %d %d %d %d %x, general %+v (%v)",
					i, j, b, method, promise, target, timeout, got, want, err)
			}
			if j == 0 && (method != r.Method || promise != r.PromiseID || target != r.Target || timeout != r.Timeout ||
				!bytes.Equal(got, r.Payload)) {
				t.Fatalf("request %d: wrote %+v, ParseDeadlineRequest %d %d %d %d %x", i, r, method, promise, target, timeout, got)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("nothing accepted")
	}
	t.Logf("%d accepted", accepted)
}

// ParsePlainRequest and ParsePlainResponse, on random envelopes (plain,
// with extension fields, flagged) and on random corruptions of them
// (bytes changed, cut, lengthened): what they accept the general parsers
// accept with the same values and empty extensions (the same slices), and
// every envelope AppendPlainRequest, or AppendResponseHeader and its
// body, writes they accept.
func TestParsePlainRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 6))
	randBytes := func(n int) []byte { return randomBytes(rng, n) }
	corrupt := func(b []byte) []byte { return corruptEnvelope(rng, b, 0) }
	for i := 0; i < 5000; i++ {
		payload := randBytes(rng.IntN(100))
		r := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32(), Payload: payload}
		plain := true
		switch rng.IntN(5) {
		case 0:
			r.Cap, plain = randBytes(1+rng.IntN(8)), false
		case 1:
			r.Timeout, plain = 1+uint64(rng.Uint32()), false
		case 2:
			r.AcceptDeflate, plain = true, false
		}
		env := AppendRequest(nil, &r)
		if plain {
			env = AppendPlainRequest(nil, r.Method, r.PromiseID, r.Target, r.Payload)
		}
		for j, b := range [][]byte{env, corrupt(env), corrupt(env)} {
			method, promise, target, got, ok := ParsePlainRequest(b)
			if j == 0 && plain && !ok {
				t.Fatalf("request %d: %x, written plain, refused", i, b)
			}
			if !ok {
				continue
			}
			want, err := parseRequest(b)
			if err != nil || method != want.Method || promise != want.PromiseID || target != want.Target ||
				!sameSlice(got, want.Payload) || want.Cap != nil || want.Timeout != 0 || want.Metadata != nil ||
				want.AcceptDeflate || want.PayloadDeflated {
				t.Fatalf("request %d.%d %x: ParsePlainRequest %d %d %d %x, general %+v (%v)", i, j, b, method, promise, target, got, want, err)
			}
		}

		body := randBytes(rng.IntN(100))
		a := Response{Status: rng.Uint32(), PromiseID: rng.Uint32(), Body: body}
		plain = true
		switch rng.IntN(5) {
		case 0:
			a.NotRun, plain = true, false
		case 1:
			a.Metadata, plain = randBytes(1+rng.IntN(8)), false
		case 2:
			a.Deflated, a.TakesDeflate, plain = true, true, false
		}
		env = AppendResponse(nil, &a)
		if plain {
			env = append(AppendResponseHeader(nil, a.Status, a.PromiseID, len(a.Body)), a.Body...)
		}
		for j, b := range [][]byte{env, corrupt(env), corrupt(env)} {
			status, promise, got, ok := ParsePlainResponse(b)
			if j == 0 && plain && !ok {
				t.Fatalf("answer %d: %x, written plain, refused", i, b)
			}
			if !ok {
				continue
			}
			want, err := parseResponse(b)
			if err != nil || status != want.Status || promise != want.PromiseID || !sameSlice(got, want.Body) ||
				want.NotRun || want.Metadata != nil || want.Deflated || want.TakesDeflate {
				t.Fatalf("answer %d.%d %x: ParsePlainResponse %d %d %x, general %+v (%v)", i, j, b, status, promise, got, want, err)
			}
		}
	}
}

// PutDeadlineRequestHeader, into an array of random bytes, writes every
// one of the first 52 bytes that AppendRequest writes for random
// requests with a timeout and nothing else beyond the canonical fields;
// the payload follows them there.
func TestPutDeadlineRequestHeaderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 7))
	for i := 0; i < 2000; i++ {
		payload := randomBytes(rng, rng.IntN(300))
		if rng.IntN(4) == 0 {
			payload = nil
		}
		r := Request{Method: rng.Uint32(), PromiseID: rng.Uint32(), Target: rng.Uint32(), Payload: payload, Timeout: rng.Uint64() | 1}
		if rng.IntN(3) == 0 {
			r.Target = 0
		}
		if rng.IntN(2) == 0 {
			r.Timeout = 1 + rng.Uint64N(1<<40)
		}
		want := AppendRequest(nil, &r)
		var h [DeadlineRequestOverhead]byte
		for j := range h {
			h[j] = byte(rng.Uint32())
		}
		PutDeadlineRequestHeader(&h, r.Method, r.PromiseID, r.Target, r.Timeout, len(r.Payload))
		if got := append(h[:], payload...); !bytes.Equal(got, want) {
			t.Fatalf("request %d (%d-byte payload, timeout %d):\n got %x\nwant %x", i, len(payload), r.Timeout, got, want)
		}
	}
}

// randomBytes is n random bytes from rng, nil for 0.
func randomBytes(rng *rand.Rand, n int) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// corruptEnvelope returns a copy of the non-empty b with a random
// corruption: bytes changed, a bit flipped, cut, lengthened, or (with
// head > 0) a bit flipped in its first head bytes, the header and fixed
// section a fast parse checks.
func corruptEnvelope(rng *rand.Rand, b []byte, head int) []byte {
	b = append([]byte(nil), b...)
	kinds := 4
	if head > 0 {
		kinds = 5
	}
	switch rng.IntN(kinds) {
	case 0:
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
	case 1:
		b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
	case 2:
		b = b[:rng.IntN(len(b))]
	case 3:
		b = append(b, randomBytes(rng, 1+rng.IntN(8))...)
	case 4:
		b[rng.IntN(min(len(b), head))] ^= 1 << rng.IntN(8)
	}
	return b
}
