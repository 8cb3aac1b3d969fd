package compare

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/bytedance/sonic"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/zapcodec/zapcodec/examples/compare/internal/fb/ethfb"
	"github.com/zapcodec/zapcodec/examples/compare/internal/mp"
	"github.com/zapcodec/zapcodec/examples/compare/internal/pb"
	"github.com/zapcodec/zapcodec/internal/fixture"
	"google.golang.org/protobuf/proto"
)

// edgeRequests are records beside the fixture ring: all-zero, all-ones and
// method texts that need escaping in JSON.
func edgeRequests() []Request {
	var ones [20]byte
	for i := range ones {
		ones[i] = 0xff
	}
	return []Request{
		{},
		{Account: ones, Block: math.MaxUint64, ID: math.MaxUint64, Method: Method},
		{Account: ones, Block: 1, ID: 0, Method: `a<b&c>"d"\é`},
	}
}

func edgeResponses() []Response {
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	return []Response{{}, {Balance: ones, Nonce: math.MaxUint64, BlockHash: ones, ID: math.MaxUint64}}
}

// TestEquivalence: for every codec and record, decode returns exactly the
// source values and re-encoding the decoded record gives the same bytes.
func TestEquivalence(t *testing.T) {
	f := NewFixture()
	reqs := append(append([]Request{}, f.Requests...), edgeRequests()...)
	resps := append(append([]Response{}, f.Responses...), edgeResponses()...)
	for _, m := range Codecs() {
		t.Run(m.Name, func(t *testing.T) {
			c := m.New()
			for i := range reqs {
				want := reqs[i]
				enc, err := c.AppendRequest(nil, &want)
				if err != nil {
					t.Fatalf("request %d: encode: %v", i, err)
				}
				var got Request
				if err := c.DecodeRequest(enc, &got); err != nil {
					t.Fatalf("request %d: decode: %v", i, err)
				}
				if got != want {
					t.Fatalf("request %d: decoded %+v, want %+v", i, got, want)
				}
				again, err := c.AppendRequest(nil, &got)
				if err != nil || !bytes.Equal(again, enc) {
					t.Fatalf("request %d: re-encode differs (%v):\n%x\n%x", i, err, again, enc)
				}
			}
			for i := range resps {
				want := resps[i]
				enc, err := c.AppendResponse(nil, &want)
				if err != nil {
					t.Fatalf("response %d: encode: %v", i, err)
				}
				var got Response
				if err := c.DecodeResponse(enc, &got); err != nil {
					t.Fatalf("response %d: decode: %v", i, err)
				}
				if got != want {
					t.Fatalf("response %d: decoded %+v, want %+v", i, got, want)
				}
				again, err := c.AppendResponse(nil, &got)
				if err != nil || !bytes.Equal(again, enc) {
					t.Fatalf("response %d: re-encode differs (%v):\n%x\n%x", i, err, again, enc)
				}
			}
		})
	}
}

// TestEncodeAppends: encoding appends after existing bytes and leaves them.
func TestEncodeAppends(t *testing.T) {
	f := NewFixture()
	for _, m := range Codecs() {
		c := m.New()
		alone, _ := c.AppendRequest(nil, &f.Requests[0])
		prefix := []byte("prefix")
		out, err := c.AppendRequest(append([]byte{}, prefix...), &f.Requests[0])
		if err != nil || !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], alone) {
			t.Errorf("%s: AppendRequest after a prefix: %v %x", m.Name, err, out)
		}
	}
}

// TestHandler: every codec's handler gives the answer the table gives.
func TestHandler(t *testing.T) {
	f := NewFixture()
	for _, m := range Codecs() {
		c := m.New()
		for i := range f.Requests {
			req, err := c.AppendRequest(nil, &f.Requests[i])
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Handle([]byte("x"), req, f.Table)
			if err != nil {
				t.Fatalf("%s: handle %d: %v", m.Name, i, err)
			}
			if out[0] != 'x' {
				t.Fatalf("%s: handler overwrote dst", m.Name)
			}
			var got Response
			if err := c.DecodeResponse(out[1:], &got); err != nil {
				t.Fatalf("%s: decode answer %d: %v", m.Name, i, err)
			}
			if got != f.Responses[i] {
				t.Fatalf("%s: answer %d = %+v, want %+v", m.Name, i, got, f.Responses[i])
			}
		}
		bad := f.Requests[0]
		bad.Method = "eth_call"
		req, _ := c.AppendRequest(nil, &bad)
		if _, err := c.Handle(nil, req, f.Table); err == nil {
			t.Errorf("%s: handler accepted method %q", m.Name, bad.Method)
		}
	}
}

// TestTruncated: every prefix of an encoding decodes to an error or a
// record, never a panic, and handlers refuse garbage.
func TestTruncated(t *testing.T) {
	f := NewFixture()
	for _, m := range Codecs() {
		c := m.New()
		req, _ := c.AppendRequest(nil, &f.Requests[1])
		resp, _ := c.AppendResponse(nil, &f.Responses[1])
		for n := range len(req) {
			var r Request
			_ = c.DecodeRequest(req[:n], &r)
			_, _ = c.Handle(nil, req[:n], f.Table)
		}
		for n := range len(resp) {
			var r Response
			_ = c.DecodeResponse(resp[:n], &r)
		}
		if _, err := c.Handle(nil, nil, f.Table); err == nil {
			t.Errorf("%s: handler accepted an empty request", m.Name)
		}
		var r Request
		if err := c.DecodeRequest(bytes.Repeat([]byte{0xff}, 64), &r); err == nil {
			t.Errorf("%s: decoded 64 bytes of 0xff as %+v", m.Name, r)
		}
	}
}

// TestJSONShape pins the JSON-RPC text of the fixture values.
func TestJSONShape(t *testing.T) {
	r := Request{Block: 19000000, ID: 1, Method: Method}
	copy(r.Account[:], mustHex(t, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3"))
	resp := Response{Nonce: 7, ID: 1}
	copy(resp.Balance[:], mustHex(t, "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"))
	copy(resp.BlockHash[:], mustHex(t, "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"))
	wantReq := `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3","0x121eac0"]}`
	wantResp := `{"jsonrpc":"2.0","id":1,"result":{"balance":"0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20","nonce":"0x7","blockHash":"0x404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"}}`
	for _, c := range []*jsonCodec{newStdJSON(), newGoccyJSON(), newSonicJSON()} {
		got, _ := c.AppendRequest(nil, &r)
		if string(got) != wantReq {
			t.Errorf("%s request:\n%s\nwant\n%s", c.Name(), got, wantReq)
		}
		got, _ = c.AppendResponse(nil, &resp)
		if string(got) != wantResp {
			t.Errorf("%s response:\n%s\nwant\n%s", c.Name(), got, wantResp)
		}
	}
	for _, bad := range []string{"0x", "0x01", "0xG", "12", "0x10000000000000000"} {
		if _, err := parseQty(bad); err == nil {
			t.Errorf("parseQty(%q) accepted", bad)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestZapcodecCanonical: the zapcodec arm writes the bytes the canonical
// runtime's generated constructors wrote for the eth fixtures.
func TestZapcodecCanonical(t *testing.T) {
	raw := fixture.Read(t, "fixtures/generated.json")
	var doc struct {
		Cases []struct {
			Schema, Struct, Name, Hex string
			Values                    map[string]any
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	z := NewZapcodec()
	n := 0
	for _, tc := range doc.Cases {
		if tc.Schema != "eth.zap" {
			continue
		}
		n++
		str := func(k string) string { s, _ := tc.Values[k].(string); return s }
		u := func(k string) uint64 {
			if str(k) == "" {
				return 0
			}
			v, err := strconv.ParseUint(str(k), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		var (
			got []byte
			err error
		)
		switch tc.Struct {
		case "GetBalanceRequest":
			var r Request
			copy(r.Account[:], mustHex(t, str("Account")))
			r.Block, r.ID, r.Method = u("Block"), u("ID"), str("Method")
			got, err = z.AppendRequest(nil, &r)
			var back Request
			if err == nil {
				err = z.DecodeRequest(mustHex(t, tc.Hex), &back)
			}
			if back != r {
				t.Errorf("%s: decoded canonical bytes as %+v, want %+v", tc.Name, back, r)
			}
		case "GetBalanceResponse":
			var r Response
			copy(r.Balance[:], mustHex(t, str("Balance")))
			copy(r.BlockHash[:], mustHex(t, str("BlockHash")))
			r.Nonce, r.ID = u("Nonce"), u("ID")
			got, err = z.AppendResponse(nil, &r)
			var back Response
			if err == nil {
				err = z.DecodeResponse(mustHex(t, tc.Hex), &back)
			}
			if back != r {
				t.Errorf("%s: decoded canonical bytes as %+v, want %+v", tc.Name, back, r)
			}
		default:
			t.Fatalf("unknown struct %q", tc.Struct)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		if hex.EncodeToString(got) != tc.Hex {
			t.Errorf("%s:\n got %x\nwant %s", tc.Name, got, tc.Hex)
		}
	}
	if n == 0 {
		t.Fatal("no eth.zap cases in generated.json")
	}
}

// TestNoStateLeak: a codec that decoded odd input (other codecs' bytes,
// truncations, a protobuf unknown field, trailing junk) encodes and handles
// exactly like a fresh one afterwards. Found by FuzzDecode: reused protobuf
// messages kept unknown fields and sent them again.
func TestNoStateLeak(t *testing.T) {
	f := NewFixture()
	var odd [][]byte
	for _, m := range Codecs() {
		e, err := f.Encode(m.New())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{e.Requests[2], e.Responses[2]} {
			odd = append(odd, b, b[:len(b)/2], append(append([]byte{}, b...), 0x48, 0x01), append(append([]byte{}, b...), 0x48))
		}
	}
	for _, m := range Codecs() {
		used, fresh := m.New(), m.New()
		for _, b := range odd {
			var req Request
			var resp Response
			_ = used.DecodeRequest(b, &req)
			_ = used.DecodeResponse(b, &resp)
			_, _ = used.Handle(nil, b, f.Table)
		}
		for i := range f.Requests {
			a, _ := used.AppendRequest(nil, &f.Requests[i])
			b, _ := fresh.AppendRequest(nil, &f.Requests[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: request %d after odd input:\n%x\nfresh:\n%x", m.Name, i, a, b)
			}
			a, _ = used.AppendResponse(nil, &f.Responses[i])
			b, _ = fresh.AppendResponse(nil, &f.Responses[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: response %d after odd input:\n%x\nfresh:\n%x", m.Name, i, a, b)
			}
			req, _ := fresh.AppendRequest(nil, &f.Requests[i])
			a, _ = used.Handle(nil, req, f.Table)
			b, _ = fresh.Handle(nil, req, f.Table)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: answer %d after odd input:\n%x\nfresh:\n%x", m.Name, i, a, b)
			}
		}
	}
}

// TestZapcodecRefusesNonWhole: the zapcodec arm refuses, as the other arms
// do, a message followed by more bytes, a root object shorter than the
// record's fixed section and a root inside the header, in all three
// operations that read; the generated reader alone would read such input
// with the missing fields as zero.
func TestZapcodecRefusesNonWhole(t *testing.T) {
	f := NewFixture()
	c := NewZapcodec()
	req, _ := c.AppendRequest(nil, &f.Requests[1])
	resp, _ := c.AppendResponse(nil, &f.Responses[1])
	bad := func(b []byte, edit func(b []byte) []byte) []byte {
		return edit(append([]byte(nil), b...))
	}
	trailing := func(b []byte) []byte { return append(b, 0) }
	// The size field says the message ends 8 bytes into the root's fixed
	// section, and the bytes end there too.
	shortRoot := func(b []byte) []byte {
		n := int(binary.LittleEndian.Uint32(b[8:])) + 8
		binary.LittleEndian.PutUint32(b[12:], uint32(n))
		return b[:n]
	}
	rootInHeader := func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 8); return b }
	for name, edit := range map[string]func([]byte) []byte{"trailing": trailing, "short root": shortRoot, "root in header": rootInHeader} {
		var r Request
		if err := c.DecodeRequest(bad(req, edit), &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeRequest, %s: %v", name, err)
		}
		if _, err := c.Handle(nil, bad(req, edit), f.Table); !errors.Is(err, ErrMalformed) {
			t.Errorf("Handle, %s: %v", name, err)
		}
		var rr Response
		if err := c.DecodeResponse(bad(resp, edit), &rr); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeResponse, %s: %v", name, err)
		}
	}
	var r Request
	if err := c.DecodeRequest(req, &r); err != nil || r != f.Requests[1] {
		t.Fatalf("the unedited request: %+v, %v", r, err)
	}
}

// TestMsgpTuple: the msgp tuple arm writes each record as a MessagePack
// array of its 4 fields (fixarray 0x94), with no field names, and refuses
// the map layout's bytes; the map arm writes a map of 4 (fixmap 0x84).
func TestMsgpTuple(t *testing.T) {
	f := NewFixture()
	tuple, byName := newMsgpTuple(), newMsgp()
	for _, c := range []struct {
		codec *msgpCodec
		first byte
	}{{tuple, 0x94}, {byName, 0x84}} {
		req, _ := c.codec.AppendRequest(nil, &f.Requests[0])
		resp, _ := c.codec.AppendResponse(nil, &f.Responses[0])
		if req[0] != c.first || resp[0] != c.first {
			t.Errorf("%s: request starts %#x, response %#x, want %#x", c.codec.Name(), req[0], resp[0], c.first)
		}
		if hasName := bytes.Contains(req, []byte("block")); hasName != (c.codec == byName) {
			t.Errorf("%s: field name on the wire: %v", c.codec.Name(), hasName)
		}
	}
	m, _ := byName.AppendRequest(nil, &f.Requests[0])
	var r Request
	if err := tuple.DecodeRequest(m, &r); err == nil {
		t.Errorf("the tuple arm decoded the map layout as %+v", r)
	}
}

// TestCodecNames: each Maker's name is its codec's Name, the label the
// tables print.
func TestCodecNames(t *testing.T) {
	for _, m := range Codecs() {
		if n := m.New().Name(); n != m.Name {
			t.Errorf("maker %q makes a codec named %q", m.Name, n)
		}
	}
}

// TestSonicDefaultAPI: the sonic arm's entry points (EncodeInto, a reused
// Decoder) write and read exactly what sonic.Marshal and sonic.Unmarshal
// do, for every record: the same default configuration.
func TestSonicDefaultAPI(t *testing.T) {
	f := NewFixture()
	c := newSonicJSON()
	reqs := append(append([]Request{}, f.Requests...), edgeRequests()...)
	for i := range reqs {
		got, err := c.AppendRequest([]byte("x"), &reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		want, err := sonic.Marshal(&c.req)
		if err != nil || string(got[1:]) != string(want) {
			t.Fatalf("request %d: EncodeInto wrote %s, sonic.Marshal %s (%v)", i, got[1:], want, err)
		}
		var viaAPI jsonRequest
		errAPI := sonic.Unmarshal(want, &viaAPI)
		var r Request
		err = c.DecodeRequest(want, &r)
		if (err == nil) != (errAPI == nil) || c.req != viaAPI {
			t.Fatalf("request %d: decoded %+v (%v), sonic.Unmarshal %+v (%v)", i, c.req, err, viaAPI, errAPI)
		}
	}
	for _, bad := range []string{`{"jsonrpc":"2.0"} x`, `{"jsonrpc":`, `[1]`} {
		var r Request
		if err := c.DecodeRequest([]byte(bad), &r); err == nil {
			t.Errorf("%q decoded", bad)
		}
		var viaAPI jsonRequest
		if err := sonic.Unmarshal([]byte(bad), &viaAPI); err == nil {
			t.Errorf("sonic.Unmarshal decoded %q", bad)
		}
	}
	resps := append(append([]Response{}, f.Responses...), edgeResponses()...)
	for i := range resps {
		got, err := c.AppendResponse(nil, &resps[i])
		if err != nil {
			t.Fatal(err)
		}
		want, err := sonic.Marshal(&c.resp)
		if err != nil || string(got) != string(want) {
			t.Fatalf("response %d: EncodeInto wrote %s, sonic.Marshal %s (%v)", i, got, want, err)
		}
	}
}

// TestMsgpLayout: the msgp request records have Request's layout, which
// mpRequest and mpTupleRequest rely on to convert a pointer.
func TestMsgpLayout(t *testing.T) {
	var r Request
	var m mp.Request
	var tr mp.TupleRequest
	want := []uintptr{unsafe.Sizeof(r), unsafe.Offsetof(r.Account), unsafe.Offsetof(r.Block), unsafe.Offsetof(r.ID), unsafe.Offsetof(r.Method), unsafe.Sizeof(r.Method)}
	for name, got := range map[string][]uintptr{
		"Request":      {unsafe.Sizeof(m), unsafe.Offsetof(m.Account), unsafe.Offsetof(m.Block), unsafe.Offsetof(m.ID), unsafe.Offsetof(m.Method), unsafe.Sizeof(m.Method)},
		"TupleRequest": {unsafe.Sizeof(tr), unsafe.Offsetof(tr.Account), unsafe.Offsetof(tr.Block), unsafe.Offsetof(tr.ID), unsafe.Offsetof(tr.Method), unsafe.Sizeof(tr.Method)},
	} {
		if !slices.Equal(got, want) {
			t.Errorf("mp.%s: size and offsets %v, Request's %v", name, got, want)
		}
	}
}

// TestHandlerAccountLength: the protobuf and FlatBuffers handlers, which
// look the account up where it lies in the request, refuse an account of
// another length than 20 bytes (shorter, or longer with a known account's
// 20 bytes first) instead of panicking or reading its first 20 bytes.
func TestHandlerAccountLength(t *testing.T) {
	f := NewFixture()
	r := f.Requests[0]
	for _, n := range []int{0, 19, 21} {
		acc := append(r.Account[:], 0xaa)[:n:n]
		pbReq := &pb.GetBalanceRequest{Account: acc, Block: r.Block, Id: r.ID, Method: r.Method}
		pbBytes, err := proto.Marshal(pbReq)
		if err != nil {
			t.Fatal(err)
		}
		b := flatbuffers.NewBuilder(64)
		av, m := b.CreateByteVector(acc), b.CreateString(r.Method)
		ethfb.GetBalanceRequestStart(b)
		ethfb.GetBalanceRequestAddAccount(b, av)
		ethfb.GetBalanceRequestAddBlock(b, r.Block)
		ethfb.GetBalanceRequestAddId(b, r.ID)
		ethfb.GetBalanceRequestAddMethod(b, m)
		b.Finish(ethfb.GetBalanceRequestEnd(b))
		for _, tc := range []struct {
			c   Codec
			req []byte
		}{{newProtobuf(), pbBytes}, {newVTProtobuf(), pbBytes}, {newFlatbuffers(), b.FinishedBytes()}} {
			if out, err := tc.c.Handle(nil, tc.req, f.Table); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s, %d-byte account: %x, %v, want ErrMalformed", tc.c.Name(), n, out, err)
			}
		}
	}
}
