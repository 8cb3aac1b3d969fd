package compat

import (
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestVerdictsOnTheWire checks verdicts of Compare against bytes: a
// message one schema writes (codec/dynamic, the generated records'
// bytes), read with the other. Where Compare finds that nothing breaks,
// the reader gets what was written (its new name, or zero where the
// writer has no field); where it finds a break, the reader misreads.
func TestVerdictsOnTheWire(t *testing.T) {
	for _, c := range []struct {
		name           string
		writer, reader string
		js, want       string
		breaks         bool // Compare(reader, writer), and the reverse, find a break
	}{
		{"field renamed", "struct S\n    A u32\n    Bee u32\n", "struct S\n    A u32\n    B u32\n",
			`{"A":1,"Bee":2}`, `{"A":1,"B":2}`, false},
		{"bytes read as text", "struct S\n    A bytes\n    B u32\n", "struct S\n    A text\n    B u32\n",
			`{"A":"6869","B":2}`, `{"A":"hi","B":2}`, false},
		{"field added in a gap (or removed, the writer the new schema)", "struct S {\n    A u32 @0\n    C u32 @8\n}\n", "struct S\n    A u32\n    B u32\n    C u32\n",
			`{"A":1,"C":3}`, `{"A":1,"B":0,"C":3}`, false},
		{"fields reordered", "struct S\n    B u32\n    A u32\n", "struct S\n    A u32\n    B u32\n",
			`{"B":2,"A":1}`, `{"A":2,"B":1}`, true},
		{"u16 read as u32", "struct S\n    A u16\n    B u16\n", "struct S\n    A u32\n",
			`{"A":1,"B":1}`, `{"A":65537}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, r := parse(t, "w.zap", c.writer), parse(t, "r.zap", c.reader)
			msg, err := dynamic.AppendMessage(nil, w.Structs[0], []byte(c.js))
			if err != nil {
				t.Fatal(err)
			}
			got, err := dynamic.AppendJSON(nil, r.Structs[0], msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("read %s, want %s", got, c.want)
			}
			// The writer as the old schema and as the new: the reader
			// reads what the other wrote either way.
			for _, changes := range [][]Change{Compare(w, r), Compare(r, w)} {
				broke := false
				for _, ch := range changes {
					broke = broke || ch.Breaks != 0
				}
				if broke != c.breaks {
					t.Errorf("Compare finds a break: %v, want %v (%d changes)", broke, c.breaks, len(changes))
				}
			}
		})
	}
}

// Text and bytes are the same bytes on the wire, but codec/dynamic
// refuses text that is not UTF-8: a note, whose message says so and on
// which side bytes that are not UTF-8 fail, for the retyping both ways.
func TestSameBytesNotUTF8(t *testing.T) {
	b, x := parse(t, "b.zap", "struct S\n    A bytes\n"), parse(t, "t.zap", "struct S\n    A text\n")
	msg, err := dynamic.AppendMessage(nil, b.Structs[0], []byte(`{"A":"ff"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := dynamic.AppendJSON(nil, x.Structs[0], msg); err == nil {
		t.Fatalf("bytes ff read as text: %s, no error", got)
	}
	for _, c := range []struct {
		old, new *schema.File
		side     string
	}{{b, x, "old writers' bytes that are not UTF-8 fail there in new readers"}, {x, b, "new writers' bytes that are not UTF-8 fail there in old readers"}} {
		chs := Compare(c.old, c.new)
		if len(chs) != 1 || chs[0].Kind != FieldSameBytes || chs[0].Breaks != 0 {
			t.Fatalf("changes %v, want one FieldSameBytes, breaking nothing", chs)
		}
		if m := chs[0].Msg; !strings.Contains(m, "codec/dynamic") || !strings.Contains(m, c.side) {
			t.Errorf("message %q: want it to say codec/dynamic refuses text that is not UTF-8, and %q", m, c.side)
		}
	}
}
