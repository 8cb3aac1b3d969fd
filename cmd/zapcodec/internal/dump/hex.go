package dump

import (
	"bytes"
	"fmt"
)

// looksHex reports whether in is hex text: only hex digits and white space
// (and an optional leading "0x"), with at least one digit.
func looksHex(in []byte) bool {
	in = bytes.TrimLeft(in, " \t\r\n")
	if len(in) >= 2 && in[0] == '0' && (in[1] == 'x' || in[1] == 'X') {
		in = in[2:]
	}
	digits := 0
	for _, c := range in {
		switch {
		case hexVal(c) >= 0:
			digits++
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			return false
		}
	}
	return digits > 0
}

// hexError is bad hex text; off is the byte offset in the text.
type hexError struct {
	off    int
	reason string
}

func (e *hexError) Error() string { return fmt.Sprintf("at byte %d: %s", e.off, e.reason) }

// decodeHex decodes hex text, skipping white space and an optional
// leading "0x".
func decodeHex(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)/2)
	i := len(in) - len(bytes.TrimLeft(in, " \t\r\n"))
	if i+2 <= len(in) && in[i] == '0' && (in[i+1] == 'x' || in[i+1] == 'X') {
		i += 2
	}
	hi := -1
	hiAt := 0
	for ; i < len(in); i++ {
		c := in[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		v := hexVal(c)
		if v < 0 {
			return nil, &hexError{i, fmt.Sprintf("expected a hex digit or white space, found %q", c)}
		}
		if hi < 0 {
			hi, hiAt = v, i
			continue
		}
		out = append(out, byte(hi<<4|v))
		hi = -1
	}
	if hi >= 0 {
		return nil, &hexError{hiAt, "odd number of hex digits: the last digit has no partner"}
	}
	return out, nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
