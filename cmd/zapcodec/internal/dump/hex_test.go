package dump

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestHexForms checks hex detection: white space and a 0x prefix are
// accepted, upper case too, and raw bytes are never mistaken for hex.
func TestHexForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		isHex bool
		want  string
	}{
		{"5a41", true, "5a41"},
		{" 0x5A 41\n\t", true, "5a41"},
		{"ZAP\x00", false, ""},
		{"", false, ""},
		{"  \n", false, ""},
		{"0x", false, ""},
	} {
		if got := looksHex([]byte(tc.in)); got != tc.isHex {
			t.Errorf("looksHex(%q) = %v", tc.in, got)
			continue
		}
		if tc.isHex {
			b, err := decodeHex([]byte(tc.in))
			if err != nil || hex.EncodeToString(b) != tc.want {
				t.Errorf("decodeHex(%q) = %x, %v", tc.in, b, err)
			}
		}
	}
}

// FuzzDecodeHex checks the hex text reader against encoding/hex: input
// that looksHex accepts decodes, unless its digits are odd in number, to
// what encoding/hex makes of its digits; any other input either decodes
// the same way or is refused with an offset inside the text that points
// at the offending byte (or the unpaired digit).
func FuzzDecodeHex(f *testing.F) {
	for _, s := range []string{"5a41", " 0x5A 41\n\t", "ZAP\x00", "", "0x", "5a4", "0x0x12", "12 zz"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// The reference: drop leading white space and one 0x, then all
		// white space; encoding/hex decodes the rest.
		rest := bytes.TrimLeft(in, " \t\r\n")
		if len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
			rest = rest[2:]
		}
		digits := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, rest)
		want, werr := hex.DecodeString(string(digits))
		got, err := decodeHex(in)
		if looksHex(in) && werr == nil && err != nil {
			t.Fatalf("looksHex accepts %q, but decodeHex refuses it: %v", in, err)
		}
		if err == nil {
			if werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("decodeHex(%q) = %x, encoding/hex: %x, %v", in, got, want, werr)
			}
			return
		}
		he, ok := err.(*hexError)
		if !ok || he.off < 0 || he.off >= len(in) {
			t.Fatalf("decodeHex(%q): %v, want a *hexError inside the text", in, err)
		}
		if werr == nil {
			t.Fatalf("decodeHex(%q) refuses what encoding/hex decodes: %v", in, err)
		}
	})
}
