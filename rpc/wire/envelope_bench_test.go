package wire

import (
	"encoding/binary"
	"testing"
)

// benchEnvelopes are the envelopes the parse benchmarks read: a plain
// 64-byte request, one with a deadline and metadata, and a 64-byte answer.
func benchEnvelopes() (plain, ext, resp []byte) {
	payload := make([]byte, 64)
	plain = AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: payload})
	ext = AppendRequest(nil, &Request{Method: 3, PromiseID: 7, Payload: payload,
		Timeout: 1500, Metadata: []byte("\x07\x00\x00\x00traceid\x03\x00\x00\x00abc")})
	resp = AppendResponse(nil, &Response{Status: 200, PromiseID: 7, Body: payload})
	return plain, ext, resp
}

var benchSink int

// BenchmarkParseRequest: ParseRequest of a request envelope, as the server
// does once per call. BenchmarkParseFloor is the same fields read by hand
// with no checks.
func BenchmarkParseRequest(b *testing.B) {
	plain, ext, _ := benchEnvelopes()
	for _, c := range []struct {
		name string
		env  []byte
	}{{"plain", plain}, {"ext", ext}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r, err := ParseRequest(c.env)
				if err != nil {
					b.Fatal(err)
				}
				benchSink += int(r.Method) + len(r.Payload) + len(r.Metadata)
			}
		})
	}
}

// BenchmarkParseResponse: ParseResponse of a 64-byte answer, as the
// client does once per call.
func BenchmarkParseResponse(b *testing.B) {
	_, _, resp := benchEnvelopes()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r, err := ParseResponse(resp)
		if err != nil {
			b.Fatal(err)
		}
		benchSink += int(r.Status) + len(r.Body)
	}
}

// BenchmarkParseFloor: the fields of the plain request read by hand, no
// checks at all: the floor under BenchmarkParseRequest/plain.
func BenchmarkParseFloor(b *testing.B) {
	plain, _, _ := benchEnvelopes()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := binary.LittleEndian.Uint32(plain[16:])
		at := 16 + 20 + int(binary.LittleEndian.Uint32(plain[36:]))
		n := int(binary.LittleEndian.Uint32(plain[40:]))
		benchSink += int(m) + len(plain[at:at+n])
	}
}

// BenchmarkAppendRequest: AppendRequest of a plain 64-byte request into a
// reused buffer, as a client does once per call. BenchmarkAppendFloor is
// the same bytes written by hand for that one layout, no checks.
func BenchmarkAppendRequest(b *testing.B) {
	r := Request{Method: 3, PromiseID: 7, Payload: make([]byte, 64)}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.PromiseID = uint32(i)
		buf = AppendRequest(buf[:0], &r)
	}
	benchSink += len(buf)
}

func BenchmarkAppendFloor(b *testing.B) {
	payload := make([]byte, 64)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = appendFloor(buf[:0], 3, uint32(i), payload)
	}
	benchSink += len(buf) + int(buf[20])
}

// appendFloor appends a request envelope with empty cap, no target and no
// extension: the one layout, written by hand.
//
//go:noinline
func appendFloor(dst []byte, method, pid uint32, payload []byte) []byte {
	n := RequestOverhead + len(payload)
	start := len(dst)
	dst = dst[:start+n]
	b := dst[start:]
	binary.LittleEndian.PutUint64(b, envHeader0)
	binary.LittleEndian.PutUint64(b[8:], 16|uint64(n)<<32)
	binary.LittleEndian.PutUint32(b[16:], method)
	binary.LittleEndian.PutUint32(b[20:], pid)
	binary.LittleEndian.PutUint32(b[24:], 0)
	binary.LittleEndian.PutUint64(b[28:], 0)
	binary.LittleEndian.PutUint64(b[36:], 8|uint64(len(payload))<<32)
	copy(b[RequestOverhead:], payload)
	return dst
}
