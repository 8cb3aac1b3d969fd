package dump

import (
	"bytes"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestWriteReport checks what Write returns: the problems listed in place
// are counted, the first is kept, and only the writer's error is an error.
func TestWriteReport(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	// A header whose version is 9: dump stops at a bad header.
	msg := []byte("ZAP\x00\x09\x00\x00\x00\x10\x00\x00\x00\x10\x00\x00\x00")
	rep, err := Write(&out, msg, Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problems != 1 || rep.First != "at byte 4: version 9, expected 1 or 2" {
		t.Fatalf("report %+v, listing:\n%s", rep, &out)
	}
	if !strings.Contains(out.String(), "error: at byte 4: version 9") {
		t.Fatalf("the problem is not listed in place:\n%s", &out)
	}

	out.Reset()
	// Hex text of a truncated header, forced to be a message: it breaks
	// where it ends (codec.ParseError's offset).
	rep, err = Write(&out, []byte("5a41 5000"), Options{Message: true})
	if err != nil || rep.Problems != 1 || rep.First != "at byte 4: message header truncated: need 16 bytes, have 4" {
		t.Fatalf("report %+v, err %v, listing:\n%s", rep, err, &out)
	}

	// A good message: no problems.
	good := []byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x18\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00")
	out.Reset()
	if rep, err := Write(&out, good, Options{Raw: true}); err != nil || rep != (Report{}) {
		t.Fatalf("report %+v, err %v, listing:\n%s", rep, err, &out)
	}

	errWrite := errors.New("disk full")
	if _, err := Write(failWriter{errWrite}, good, Options{Raw: true}); !errors.Is(err, errWrite) {
		t.Fatalf("writer error: got %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestHeaderOffsets: where a bad header broke is codec.Parse's offset,
// with dump's account of the values found there.
func TestHeaderOffsets(t *testing.T) {
	good := "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x18\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00"
	for _, tc := range []struct{ in, first string }{
		{"ZAP\x00\x01", "at byte 5: message header truncated: need 16 bytes, have 5"},
		{"ZAX" + good[3:], `at byte 2: expected magic "ZAP\x00" (5a 41 50 00), found 5a 41 58 00`},
		{good[:4] + "\x03" + good[5:], "at byte 4: version 3, expected 1 or 2"},
		{good[:12] + "\x40" + good[13:], "at byte 12: size 64, expected 16..24 (the bytes present)"},
	} {
		var out bytes.Buffer
		rep, err := Write(&out, []byte(tc.in), Options{Raw: true, Message: true})
		if err != nil || rep.Problems != 1 || rep.First != tc.first {
			t.Errorf("%q: %+v, %v; want %q", tc.in, rep, err, tc.first)
		}
	}
}

// TestStreamStruct: which struct a stream message of each kind of
// streaming method decodes as, and when a frame cannot say.
func TestStreamStruct(t *testing.T) {
	f, err := schema.Parse("s.zap", []byte(`struct A {}
struct B {}
interface S {
    down(req: A) returns (stream B)
    up(stream A) returns (resp: B)
    upOnly(stream A)
    both(stream A) returns (stream B)
    same(stream A) returns (stream A)
    plain(req: A)
}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, want, why string }{
		{"down", "B", ""},
		{"up", "", "streams A from the client and B from the server"},
		{"upOnly", "A", ""},
		{"both", "", "streams A from the client and B from the server"},
		{"same", "A", ""},
		{"plain", "", "streams no messages"},
	} {
		st, why := streamStruct(f.Interface("S").Method(tc.method))
		got := ""
		if st != nil {
			got = st.Name
		}
		if got != tc.want || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s: %q, %q; want %q, %q", tc.method, got, why, tc.want, tc.why)
		}
	}
}

// TestBarePayloadInterfaceTarget: a bare payload (not an envelope) given
// with an interface -type is listed raw and refused with a hint, also for
// an interface without methods (whose hint used to index its first
// method and panic).
func TestBarePayloadInterfaceTarget(t *testing.T) {
	t.Parallel()
	f, err := schema.Parse("s.zap", []byte("struct A { X u32 }\ninterface S { get(req: A) }\ninterface Empty {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x18\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00")
	for _, tc := range []struct{ iface, first string }{
		{"S", "at byte 0: -type S names an interface: give one of its methods (S.get) to decode a bare payload"},
		{"Empty", "at byte 0: -type Empty names an interface without methods: none decodes a bare payload"},
	} {
		target, err := ResolveTarget(f, tc.iface)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep, err := Write(&out, msg, Options{Raw: true, Target: target})
		if err != nil || rep.Problems != 1 || rep.First != tc.first {
			t.Errorf("-type %s: %+v, %v; want %q\n%s", tc.iface, rep, err, tc.first, &out)
		}
		if !strings.Contains(out.String(), "root object @16") {
			t.Errorf("-type %s: the payload is not listed raw:\n%s", tc.iface, &out)
		}
	}
}

// TestRawPositionsAreInputPositions: every position the raw listing shows
// ("@N": a message, its root, a row of its fixed section, the value a slot
// points to) is a position of the input, as the errors' "at byte N" are,
// for the second message of a stream too. They used to be positions
// inside each message, so the listing of any message but the first
// pointed at bytes of another (root @16 of a message @82).
func TestRawPositionsAreInputPositions(t *testing.T) {
	t.Parallel()
	// Messages whose root holds one text slot {rel 8, len 5}: the text at 24.
	var httpIn, msgsIn []byte
	for _, text := range []string{"hello", "world"} {
		msg := []byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x1d\x00\x00\x00" +
			"\x08\x00\x00\x00\x05\x00\x00\x00" + text)
		httpIn = append(httpIn, 0, 0, 0, byte(len(msg)))
		httpIn = append(httpIn, msg...)
		msgsIn = append(msgsIn, msg...)
	}
	rowRE := regexp.MustCompile(`^\s+\+\d+\s+@(\d+)\s+((?:[0-9a-f]{2} )*[0-9a-f]{2})\s+u32`)
	textRE := regexp.MustCompile(`text  "([^"]*)" \((\d+) bytes at @(\d+)\)`)
	msgRE := regexp.MustCompile(`message @(\d+): .* root @(\d+)$`)
	for _, tc := range []struct {
		name string
		in   []byte
		opts Options
	}{
		{"http frames", httpIn, Options{Raw: true, HTTP: true}},
		{"messages", msgsIn, Options{Raw: true}},
	} {
		var out bytes.Buffer
		if rep, err := Write(&out, tc.in, tc.opts); err != nil || rep.Problems != 0 {
			t.Fatalf("%s: %+v %v:\n%s", tc.name, rep, err, &out)
		}
		var msgs, rows, texts int
		for _, line := range strings.Split(out.String(), "\n") {
			if m := msgRE.FindStringSubmatch(line); m != nil {
				at, root := atoi(t, m[1]), atoi(t, m[2])
				if !bytes.HasPrefix(tc.in[at:], []byte("ZAP\x00")) || root != at+16 {
					t.Errorf("%s: %q: no message there, or its root is not at @%d", tc.name, line, at+16)
				}
				msgs++
			}
			if m := rowRE.FindStringSubmatch(line); m != nil {
				at := atoi(t, m[1])
				want, _ := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
				if !bytes.HasPrefix(tc.in[at:], want) {
					t.Errorf("%s: %q: the input at @%d holds %x", tc.name, line, at, tc.in[at:min(at+len(want), len(tc.in))])
				}
				rows++
			}
			if m := textRE.FindStringSubmatch(line); m != nil {
				n, at := atoi(t, m[2]), atoi(t, m[3])
				if got := string(tc.in[at:min(at+n, len(tc.in))]); got != m[1] {
					t.Errorf("%s: %q: the input at @%d holds %q", tc.name, line, at, got)
				}
				texts++
			}
		}
		if msgs != 2 || rows != 2 || texts != 2 {
			t.Fatalf("%s: %d messages, %d rows, %d texts found in the listing, want 2 of each:\n%s", tc.name, msgs, rows, texts, &out)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRootPastEnd: a root offset past the message's end is shown as the
// header holds it. It was capped at the message size for the listing, so
// a root of 0xFFFFFFFF in a 24-byte message read "root @24" and "root
// offset 24 outside 16..24": a value the header does not hold, and one
// inside the range it was said to be outside (a root at the size is the
// zero-size root, which is valid).
func TestRootPastEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		root       uint32
		line, fail string
	}{
		{0xFFFFFFFF, "root @4294967295", "at byte 8: root offset 4294967295 outside 16..24 (the header's end to the message's)"},
		{25, "root @25", "at byte 8: root offset 25 outside 16..24 (the header's end to the message's)"},
		{4, "root @4", "at byte 8: root offset 4 outside 16..24 (the header's end to the message's)"},
	} {
		msg := []byte("ZAP\x00\x01\x00\x00\x00\x00\x00\x00\x00\x18\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00")
		msg[8], msg[9], msg[10], msg[11] = byte(tc.root), byte(tc.root>>8), byte(tc.root>>16), byte(tc.root>>24)
		var out bytes.Buffer
		rep, err := Write(&out, msg, Options{Raw: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problems != 1 || rep.First != tc.fail || !strings.Contains(out.String(), tc.line+"\n") {
			t.Errorf("root %d: report %+v, listing:\n%s", tc.root, rep, &out)
		}
	}
}
