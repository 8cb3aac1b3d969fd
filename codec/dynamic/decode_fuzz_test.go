package dynamic

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// FuzzAppendJSON decodes arbitrary bytes as each struct of the test schema:
// it must never panic, a failure must be a *DecodeError with an offset
// inside the input, and the output, complete or not, must stay
// proportional to the input. A success must be valid JSON that
// AppendMessage takes, and the message it builds must decode to the same
// JSON: whatever AppendJSON prints is a value of the schema.
func FuzzAppendJSON(f *testing.F) {
	sch := decParseSchema(f)
	f.Add(decAllMessage(f))
	f.Add(decInner(1, "x"))
	f.Add([]byte("ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x14\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, s := range sch.Structs {
			out, err := AppendJSON(nil, s, msg)
			if len(out) > 64*len(msg)+4096 {
				t.Fatalf("%s: %d bytes of JSON from %d bytes (%v)", s.Name, len(out), len(msg), err)
			}
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%s: error %v is not a *DecodeError", s.Name, err)
				}
				if de.Offset < 0 || de.Offset > len(msg) {
					t.Fatalf("%s: offset %d outside the %d-byte input: %v", s.Name, de.Offset, len(msg), err)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("%s: invalid JSON %q", s.Name, out)
			}
			msg2, err := AppendMessage(nil, s, out)
			if err != nil {
				t.Fatalf("%s: AppendMessage refuses AppendJSON's %s: %v", s.Name, out, err)
			}
			if again, err := AppendJSON(nil, s, msg2); err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s: %s encodes to a message that decodes to %s (%v)", s.Name, out, again, err)
			}
		}
	})
}

// TestAppendJSONDepthLimit walks a legal chain of nested objects longer
// than MaxDecodeDepth: it is refused with the depth error, and a chain
// within the limit decodes.
func TestAppendJSONDepthLimit(t *testing.T) {
	sch := decParseSchema(t)
	chain := func(n int) []byte {
		var b codec.Builder
		b.Reset(nil)
		var prev codec.Ref
		for i := 0; i < n; i++ {
			o := b.StartObject(4)
			if prev != 0 {
				o.SetObject(0, prev)
			}
			prev = o.Finish()
		}
		b.SetRoot(prev)
		return b.Finish()
	}
	out, err := AppendJSON(nil, sch.Struct("Node"), chain(MaxDecodeDepth+1))
	if err != nil || strings.Count(string(out), "{") != MaxDecodeDepth+1 {
		t.Fatalf("chain within the limit: %v (%d objects)", err, strings.Count(string(out), "{"))
	}
	msg := chain(MaxDecodeDepth + 2)
	_, err = AppendJSON(nil, sch.Struct("Node"), msg)
	if err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Fatalf("err = %v", err)
	}
}

// TestDecodeBudgetSaturates: the budget of a message too large for 2n+64
// to fit an int (over 1 GiB on 32-bit platforms) is the largest int; the
// sum overflowed to a negative budget, so that every such message failed
// as shared or cyclic before its first field.
func TestDecodeBudgetSaturates(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 64},
		{100, 264},
		{(math.MaxInt - 64) / 2, (math.MaxInt-64)/2*2 + 64},
		{(math.MaxInt-64)/2 + 1, math.MaxInt},
		{math.MaxInt / 2, math.MaxInt},
		{math.MaxInt, math.MaxInt},
	} {
		if got := decBudget(tc.n); got != tc.want {
			t.Errorf("decBudget(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
