//go:build !race

package compare

import "testing"

// TestZeroAllocs pins the allocation counts that the results report as
// zero: every operation of zapcodec, of the hand-written floor, of
// vtprotobuf (whose decode is the zero-copy UnmarshalVTUnsafe) and of msgp
// in both layouts (whose Method text is read with msgp.ReadStringZC), once
// warm.
func TestZeroAllocs(t *testing.T) {
	f := NewFixture()
	for _, c := range []Codec{NewZapcodec(), newFloor(), newVTProtobuf(), newMsgp(), newMsgpTuple()} {
		e, err := f.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 0, 512)
		var req Request
		var resp Response
		ops := map[string]func(){
			"DecodeRequest":  func() { _ = c.DecodeRequest(e.Requests[3], &req) },
			"DecodeResponse": func() { _ = c.DecodeResponse(e.Responses[3], &resp) },
			"EncodeRequest":  func() { buf, _ = c.AppendRequest(buf[:0], &f.Requests[3]) },
			"EncodeResponse": func() { buf, _ = c.AppendResponse(buf[:0], &f.Responses[3]) },
			"Handler":        func() { buf, _ = c.Handle(buf[:0], e.Requests[3], f.Table) },
		}
		for name, op := range ops {
			if n := testing.AllocsPerRun(200, op); n != 0 {
				t.Errorf("%s %s: %v allocs, want 0", c.Name(), name, n)
			}
		}
	}
}

// TestSonicAllocs pins the sonic arm's allocations to what its no-copy
// entry points leave: encode allocates only the one EncodeInto makes per
// call, none for the result (sonic.Marshal returns a copy: one more) nor
// for the JSON-RPC shape's hex texts (written into the codec's scratch);
// decode allocates nothing (sonic.Unmarshal copies the input and makes a
// decoder: two more).
func TestSonicAllocs(t *testing.T) {
	f := NewFixture()
	c := newSonicJSON()
	e, err := f.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 512)
	var req Request
	var resp Response
	for _, op := range []struct {
		name string
		run  func()
		want float64
	}{
		{"EncodeRequest", func() { buf, _ = c.AppendRequest(buf[:0], &f.Requests[3]) }, 1},
		{"EncodeResponse", func() { buf, _ = c.AppendResponse(buf[:0], &f.Responses[3]) }, 1},
		{"DecodeRequest", func() { _ = c.DecodeRequest(e.Requests[3], &req) }, 0},
		{"DecodeResponse", func() { _ = c.DecodeResponse(e.Responses[3], &resp) }, 0},
		{"Handler", func() { buf, _ = c.Handle(buf[:0], e.Requests[3], f.Table) }, 1},
	} {
		if n := testing.AllocsPerRun(200, op.run); n != op.want {
			t.Errorf("sonic %s: %v allocs, want %v", op.name, n, op.want)
		}
	}
}

// TestJSONEncodeAllocs: the JSON arms' encoders allocate only what the
// library does (encoding/json's and goccy's Marshal return a new slice,
// one allocation; sonic's EncodeInto makes one), none for the JSON-RPC
// shape's hex texts, which are written into the codec's scratch.
func TestJSONEncodeAllocs(t *testing.T) {
	f := NewFixture()
	for _, c := range []*jsonCodec{newStdJSON(), newGoccyJSON(), newSonicJSON()} {
		buf := make([]byte, 0, 512)
		for name, op := range map[string]func(){
			"EncodeRequest":  func() { buf, _ = c.AppendRequest(buf[:0], &f.Requests[3]) },
			"EncodeResponse": func() { buf, _ = c.AppendResponse(buf[:0], &f.Responses[3]) },
		} {
			if n := testing.AllocsPerRun(200, op); n != 1 {
				t.Errorf("%s %s: %v allocs, want 1", c.Name(), name, n)
			}
		}
	}
}
