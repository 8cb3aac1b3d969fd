package check

import (
	"math"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestOracle: Oracle takes the JSON AppendJSON prints for a record and
// finds each way a printer could get a value wrong that a printer written
// alike (RecordJSON) would get wrong too.
func TestOracle(t *testing.T) {
	f, err := schema.Parse("o.zap", []byte(`package o
struct S { T text; U u64; I i64; F f64; G f32; B bytes; X list<text>; N S }`))
	if err != nil {
		t.Fatal(err)
	}
	st := f.Struct("S")
	type S struct {
		T string
		U uint64
		I int64
		F float64
		G float32
		B []byte
		X []string
		N *S
	}
	rec := &S{T: "a\x00\u2028\x7f\"", U: 1<<53 + 1, I: math.MinInt64, F: math.Copysign(0, -1),
		G: 0.1, B: []byte{0xab}, X: []string{"", "\n"}}
	good := `{"T":"a\u0000` + "\u2028" + `\u007f\"","U":9007199254740993,"I":-9223372036854775808,` +
		`"F":-0,"G":0.1,"B":"ab","X":["","\n"],"N":null}`
	if d := Oracle([]byte(good), rec, st); d != "" {
		t.Fatalf("good JSON refused: %s", d)
	}
	for _, bad := range [][2]string{
		{`9007199254740993`, `9007199254740992`},                  // rounded through a float64
		{`9007199254740993`, `"9007199254740993"`},                // quoted
		{`"F":-0`, `"F":0`},                                       // sign of zero lost
		{`"G":0.1`, `"G":0.10000000149011612`},                    // still the float32, fine
		{`"ab"`, `"qw=="`},                                        // base64
		{`\u0000`, "\x00"},                                        // raw control character
		{`a\u0000`, `a\\u0000`},                                   // escape escaped
		{`"N":null`, `"N":{}`},                                    // null record as an object
		{`,"X":["","\n"]`, ``},                                    // field missing
		{`"I":-9223372036854775808`, `"I":-9.223372036854776e18`}, // not an integer
	} {
		js := strings.Replace(good, bad[0], bad[1], 1)
		d := Oracle([]byte(js), rec, st)
		if bad[1] == `"G":0.10000000149011612` {
			if d != "" {
				t.Errorf("%s: %s", js, d)
			}
			continue
		}
		if d == "" {
			t.Errorf("Oracle takes %s", js)
		}
	}
}
