package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

func TestStreamFrames(t *testing.T) {
	// The canonical bodies of streams.json: [u32 id][message], [u32 id].
	if got := AppendStreamMsg(nil, 1, []byte("m")); !bytes.Equal(got, []byte{1, 0, 0, 0, 'm'}) {
		t.Fatalf("message body %x", got)
	}
	if got := AppendStreamEnd(nil, 1); !bytes.Equal(got, []byte{1, 0, 0, 0}) {
		t.Fatalf("end body %x", got)
	}
	id, msg, err := ParseStreamMsg([]byte{7, 0, 0, 0, 'a', 'b'})
	if err != nil || id != 7 || string(msg) != "ab" {
		t.Fatal(id, msg, err)
	}
	for _, tc := range []struct {
		body   []byte
		status uint32
		msg    string
	}{
		{[]byte{1, 0, 0, 0}, 0, ""},
		{AppendStreamEndError(nil, 1, 418, "teapot"), 418, "teapot"},
		{AppendStreamEndError(nil, 1, 200, "ok"), 0, ""},
		{[]byte{1, 0, 0, 0, 9}, 500, ""},
		// A status word of 0 is no status: an error end all the same, not
		// a clean end carrying a message (it read as Status 0 with the text).
		{AppendStreamEndError(nil, 1, 0, "boom"), 500, "boom"},
		{AppendStreamEndError(nil, 1, 0, ""), 500, ""},
	} {
		e, err := ParseStreamEnd(tc.body)
		if err != nil || e.ID != 1 || e.Status != tc.status || string(e.Message) != tc.msg || e.Status == 0 && e.Message != nil {
			t.Fatalf("%x: %+v %v", tc.body, e, err)
		}
	}
	if _, _, err := ParseStreamMsg([]byte{1, 0, 0}); err != ErrStreamFrameShort {
		t.Fatal(err)
	}
	if _, err := ParseStreamEnd(nil); err != ErrStreamFrameShort {
		t.Fatal(err)
	}
	if id, n, ok := ParseStreamWindow(AppendStreamWindow(nil, 3, 1<<20)); !ok || id != 3 || n != 1<<20 {
		t.Fatal(id, n, ok)
	}
	if _, _, ok := ParseStreamWindow([]byte{1, 2, 3}); ok {
		t.Fatal("short window frame accepted")
	}
}

// FuzzStreamFrameBodies: the stream body parsers never panic; what they
// read is what the append functions wrote, and every field of a StreamEnd
// follows from the body as its doc says: a clean end (Status 0) carries no
// message, no end reads as status 200, the message aliases the body after
// the status word.
func FuzzStreamFrameBodies(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0})
	f.Add(AppendStreamEndError(nil, 1, 503, "x"))
	f.Add(AppendStreamEndError(nil, 1, 200, "ok"))
	f.Add([]byte{1, 0, 0, 0, 9})
	f.Add(AppendStreamWindow(nil, 0, 65536))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, msg, err := ParseStreamMsg(b)
		if (err == nil) != (len(b) >= StreamMsgOverhead) {
			t.Fatalf("ParseStreamMsg of %d bytes: %v", len(b), err)
		}
		if err == nil {
			if !bytes.Equal(AppendStreamMsg(nil, id, msg), b) {
				t.Fatal("message round trip")
			}
			if len(msg) > 0 && &msg[0] != &b[StreamMsgOverhead] {
				t.Fatal("message does not alias the body")
			}
		}
		e, err := ParseStreamEnd(b)
		if (err == nil) != (len(b) >= StreamMsgOverhead) {
			t.Fatalf("ParseStreamEnd of %d bytes: %v", len(b), err)
		}
		if err == nil {
			if e.ID != binary.LittleEndian.Uint32(b) {
				t.Fatalf("%+v", e)
			}
			if e.Status == 0 && e.Message != nil || e.Status == 200 {
				t.Fatalf("%x read as %+v", b, e)
			}
			switch n := len(b); {
			case n == StreamMsgOverhead:
				if e.Status != 0 {
					t.Fatalf("the id alone read as %+v", e)
				}
			case n < streamEndErrOverhead:
				if e.Status != 500 || e.Message != nil {
					t.Fatalf("a partial status read as %+v", e)
				}
			case e.Status != 0:
				if len(e.Message) != n-streamEndErrOverhead || len(e.Message) > 0 && &e.Message[0] != &b[streamEndErrOverhead] {
					t.Fatalf("%x: the message is not the body after the status: %+v", b, e)
				}
				if w := binary.LittleEndian.Uint32(b[4:]); w != 0 && !bytes.Equal(AppendStreamEndError(nil, e.ID, e.Status, string(e.Message)), b) {
					t.Fatal("error end round trip")
				}
			}
		}
		wid, wn, ok := ParseStreamWindow(b)
		if ok != (len(b) == 8) {
			t.Fatalf("ParseStreamWindow of %d bytes: ok %v", len(b), ok)
		}
		if ok && !bytes.Equal(AppendStreamWindow(nil, wid, wn), b) {
			t.Fatal("window round trip")
		}
	})
}

// TestStreamFixtureBodies reads the body of every frame of the canonical
// stream exchanges (fixtures/streams.json): each parses with the parser of
// its kind, names the fixture's id (promise or stream), and the append
// functions write it back byte for byte; every canonical end is clean.
func TestStreamFixtureBodies(t *testing.T) {
	var f struct {
		Scenarios []struct {
			Name   string
			Frames []struct {
				Kind byte
				ID   uint32
				Hex  string
			}
		}
	}
	if err := json.Unmarshal(fixture.Read(t, "fixtures/streams.json"), &f); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range f.Scenarios {
		for i, fr := range s.Frames {
			raw := unhex(t, fr.Hex)
			if len(raw) < 5 || int(binary.LittleEndian.Uint32(raw)) != len(raw)-4 || raw[4] != fr.Kind {
				t.Fatalf("%s #%d: malformed fixture frame %x", s.Name, i, raw)
			}
			body := raw[5:]
			var id uint32
			var again []byte
			switch fr.Kind {
			case KindRequest, KindStreamOpen:
				r, err := ParseRequest(body)
				if err != nil {
					t.Fatalf("%s #%d: %v", s.Name, i, err)
				}
				id, again = r.PromiseID, AppendRequest(nil, &r)
			case KindResponse:
				r, err := ParseResponse(body)
				if err != nil {
					t.Fatalf("%s #%d: %v", s.Name, i, err)
				}
				id, again = r.PromiseID, AppendResponse(nil, &r)
			case KindStreamMsg:
				sid, msg, err := ParseStreamMsg(body)
				if err != nil {
					t.Fatalf("%s #%d: %v", s.Name, i, err)
				}
				if _, err := codec.Parse(msg); err != nil {
					t.Fatalf("%s #%d: the stream message is not a message: %v", s.Name, i, err)
				}
				id, again = sid, AppendStreamMsg(nil, sid, msg)
			case KindStreamEnd:
				e, err := ParseStreamEnd(body)
				if err != nil || e.Status != 0 || e.Message != nil {
					t.Fatalf("%s #%d: canonical end read as %+v, %v", s.Name, i, e, err)
				}
				id, again = e.ID, AppendStreamEnd(nil, e.ID)
			default:
				t.Fatalf("%s #%d: kind %d", s.Name, i, fr.Kind)
			}
			if id != fr.ID || !bytes.Equal(again, body) {
				t.Fatalf("%s #%d (kind %d): id %d, want %d; written back\n %x\nwant %x", s.Name, i, fr.Kind, id, fr.ID, again, body)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no frames in streams.json")
	}
}
