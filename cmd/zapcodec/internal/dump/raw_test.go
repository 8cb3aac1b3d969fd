package dump

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// slotsMessage returns a message whose root, at 16, is 32 slots of 8
// bytes, each {the distance to target(i), count(i)}, followed at 272 by
// body.
func slotsMessage(body []byte, target func(i int) int, count func(i int) uint32) []byte {
	const root, slots = 16, 32
	msg := make([]byte, root+8*slots, root+8*slots+len(body))
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], codec.Version1)
	binary.LittleEndian.PutUint32(msg[8:], root)
	for i := range slots {
		at := root + 8*i
		binary.LittleEndian.PutUint32(msg[at:], uint32(target(i)-at))
		binary.LittleEndian.PutUint32(msg[at+4:], count(i))
	}
	msg = append(msg, body...)
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(msg)))
	return msg
}

// rawDump dumps msg without a schema and returns the listing and the
// dumper, whose counters say how much work the slot guesses did.
func rawDump(t *testing.T, msg []byte) (string, *dumper) {
	t.Helper()
	var out bytes.Buffer
	d := &dumper{opts: Options{Raw: true}, w: bufio.NewWriter(&out)}
	d.run(msg)
	if err := d.w.Flush(); err != nil {
		t.Fatal(err)
	}
	if d.nerr != 0 {
		t.Fatalf("%d problems: %s", d.nerr, d.first)
	}
	return out.String(), d
}

// TestRawGuessWorkIsLinear: the slot guesses of a dump without a schema do
// work linear in the message size, counted as list elements walked and
// bytes looked at as text. They used to walk the list a slot pointed to
// once for every position that might be a slot pointing to it, twice over
// (to find where the fixed section ends, then to list the slots): 32
// slots pointing to a list of 100,000 elements walked 6.4 million
// elements, and 32 slots pointing to 1 MB of text looked at 64 MB.
func TestRawGuessWorkIsLinear(t *testing.T) {
	t.Parallel()
	const n = 100000
	const start = 16 + 8*32                         // where the body starts
	zeros := make([]byte, 4*n)                      // n elements of size 0
	text := bytes.Repeat([]byte("abcdefgh"), 1<<17) // 1 MiB
	tests := []struct {
		name string
		msg  []byte
		// want is in every slot's line; note, whether the bound on the
		// walks was reached.
		want string
		note bool
	}{
		{"slots pointing to one list",
			slotsMessage(zeros, func(int) int { return start }, func(int) uint32 { return n }),
			"list  100000 variable elements at @272: elements of 0, 0, 0, 0, 0, 0, 0, 0, ... bytes", false},
		// Each slot points to another element of the list: the walks
		// cannot be shared, and the bound stops them.
		{"slots pointing into one list",
			slotsMessage(zeros, func(i int) int { return start + 8*i }, func(i int) uint32 { return uint32(n - 2*i) }),
			"", true},
		{"slots pointing to one text",
			slotsMessage(text, func(int) int { return start }, func(int) uint32 { return uint32(len(text)) }),
			`text  "abcdefgh`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, d := rawDump(t, tt.msg)
			if d.walked > len(tt.msg)/2+1024 || d.scanned > 2*len(tt.msg) {
				t.Errorf("a %d-byte message: the guesses walked %d list elements and looked at %d bytes as text, want at most %d and %d",
					len(tt.msg), d.walked, d.scanned, len(tt.msg)/2+1024, 2*len(tt.msg))
			}
			if got := strings.Count(out, tt.want); tt.want != "" && got != 32 {
				t.Errorf("%d slots read %q, want 32:\n%s", got, tt.want, out)
			}
			if note := strings.Contains(out, "note: the guesses walked"); note != tt.note {
				t.Errorf("the note on the bound shown: %v, want %v:\n%s", note, tt.note, out)
			}
			if tt.note && !strings.Contains(out, notWalked) {
				t.Errorf("no slot is marked %q:\n%s", notWalked, out)
			}
		})
	}
}
