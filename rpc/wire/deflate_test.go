package wire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// TestRequestAcceptDeflate: the flags word at offset 44 round-trips with
// every combination of the other extension values, makes the fixed section
// 48 bytes, and is absent (false) from every request that does not set it.
func TestRequestAcceptDeflate(t *testing.T) {
	for _, r := range []Request{
		{Method: 1, PromiseID: 2, AcceptDeflate: true},
		{Method: 1, PromiseID: 2, Payload: []byte("payload"), AcceptDeflate: true},
		{Method: 1, PromiseID: 2, Payload: []byte("p"), Cap: []byte("cap"), Timeout: 7, Metadata: []byte("\x01\x00\x00\x00k\x01\x00\x00\x00v"), AcceptDeflate: true},
		{Method: 1, PromiseID: 2, Metadata: []byte("\x01\x00\x00\x00k\x01\x00\x00\x00v"), AcceptDeflate: true},
		{Method: 3, PromiseID: 4, Timeout: 9, AcceptDeflate: true},
		{Method: 3, PromiseID: 4, Payload: []byte("deflated"), AcceptDeflate: true, PayloadDeflated: true},
	} {
		b := AppendRequest(nil, &r)
		want := uint32(reqFlagAcceptDeflate)
		if r.PayloadDeflated {
			want |= reqFlagPayloadDeflate
		}
		if got := binary.LittleEndian.Uint32(b[headerSize+reqFlags:]); got != want {
			t.Fatalf("%+v: flags word %#x", r, got)
		}
		if len(b) != RequestLen(&r) || len(b) != headerSize+reqExtFlagsSize+len(r.Cap)+len(r.Payload)+len(r.Metadata) {
			t.Fatalf("%+v: %d bytes, RequestLen %d", r, len(b), RequestLen(&r))
		}
		got, err := ParseRequest(b)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		r.AcceptDeflate, r.PayloadDeflated = false, false
		got, err = ParseRequest(AppendRequest(nil, &r))
		if err != nil || got.AcceptDeflate || got.PayloadDeflated {
			t.Fatalf("%+v without the flag: AcceptDeflate %v, err %v", r, got.AcceptDeflate, err)
		}
	}
}

// TestRequestFlagsNotReadFromMetadata: a request with metadata and no
// flags word (fixed section 44) whose cap and payload are empty has its
// metadata value as first tail, at offset 44: its bytes are not read as
// the flags word.
func TestRequestFlagsNotReadFromMetadata(t *testing.T) {
	r := Request{Method: 1, PromiseID: 2, Metadata: []byte("\x01\x00\x00\x00k\x01\x00\x00\x00v")}
	b := AppendRequest(nil, &r)
	if binary.LittleEndian.Uint32(b[headerSize+reqExtFixedSize:])&reqFlagAcceptDeflate == 0 {
		t.Fatal("test broken: the metadata's first word must have bit 0 set")
	}
	got, err := ParseRequest(b)
	if err != nil || got.AcceptDeflate || !bytes.Equal(got.Metadata, r.Metadata) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// TestResponseDeflated: bit 1 of the answer's flags word round-trips
// alone, with the not-run bit and with metadata, and through
// AppendDeflatedHeader; a canonical reader's fields (status, promise,
// body slot) stay where they were.
func TestResponseDeflated(t *testing.T) {
	for _, r := range []Response{
		{Status: 200, PromiseID: 5, Body: []byte("compressed"), Deflated: true, TakesDeflate: true},
		{Status: 200, PromiseID: 5, Deflated: true, TakesDeflate: true},
		{Status: 200, PromiseID: 5, Body: []byte("compressed"), Metadata: []byte("\x01\x00\x00\x00k\x00\x00\x00\x00"), Deflated: true, TakesDeflate: true},
		{Status: 200, PromiseID: 5, Body: []byte("plain"), TakesDeflate: true},
		{Status: 200, PromiseID: 5, Body: []byte("plain"), Metadata: []byte("\x01\x00\x00\x00k\x00\x00\x00\x00"), TakesDeflate: true},
		{Status: 503, PromiseID: 5, Body: []byte("x"), NotRun: true, Deflated: true},
	} {
		b := AppendResponse(nil, &r)
		if len(b) != ResponseLen(&r) {
			t.Fatalf("%+v: %d bytes, ResponseLen %d", r, len(b), ResponseLen(&r))
		}
		got, err := ParseResponse(b)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		if !r.NotRun {
			h := AppendDeflatedHeader(nil, r.Status, r.PromiseID, len(r.Body), len(r.Metadata))
			if !r.Deflated {
				h = AppendTakesDeflateHeader(nil, r.Status, r.PromiseID, len(r.Body), len(r.Metadata))
			}
			h = append(append(h, r.Body...), r.Metadata...)
			if !bytes.Equal(h, b) {
				t.Fatalf("AppendDeflatedHeader:\n%x\nAppendResponse:\n%x", h, b)
			}
		}
		r.Deflated, r.TakesDeflate = false, false
		if got, err = ParseResponse(AppendResponse(nil, &r)); err != nil || got.Deflated || got.TakesDeflate {
			t.Fatalf("%+v without the flags: %+v, err %v", r, got, err)
		}
	}
}
