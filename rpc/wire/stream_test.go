package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
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
	} {
		e, err := ParseStreamEnd(tc.body)
		if err != nil || e.ID != 1 || e.Status != tc.status || string(e.Message) != tc.msg {
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

// FuzzStreamFrameBodies: the stream body parsers never panic, and what
// they read is what the append functions wrote.
func FuzzStreamFrameBodies(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0})
	f.Add(AppendStreamEndError(nil, 1, 503, "x"))
	f.Add(AppendStreamWindow(nil, 0, 65536))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, msg, err := ParseStreamMsg(b); err == nil {
			if !bytes.Equal(AppendStreamMsg(nil, id, msg), b) {
				t.Fatal("message round trip")
			}
		}
		if e, err := ParseStreamEnd(b); err == nil {
			if e.ID != binary.LittleEndian.Uint32(b) || len(e.Message) > len(b) {
				t.Fatalf("%+v", e)
			}
			if e.Status != 0 && len(b) >= 8 && !bytes.Equal(AppendStreamEndError(nil, e.ID, e.Status, string(e.Message)), b) {
				t.Fatal("error end round trip")
			}
		}
		if id, n, ok := ParseStreamWindow(b); ok && !bytes.Equal(AppendStreamWindow(nil, id, n), b) {
			t.Fatal("window round trip")
		}
	})
}
