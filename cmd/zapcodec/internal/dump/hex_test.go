package dump

import (
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
