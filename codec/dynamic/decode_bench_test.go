package dynamic

import (
	"encoding/json"
	"testing"
)

// BenchmarkAppendJSON decodes the every-kind record into a reused buffer.
func BenchmarkAppendJSON(b *testing.B) {
	s := decParseSchema(b).Struct("All")
	msg := decAllMessage(b)
	buf, _ := AppendJSON(nil, s, msg)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = AppendJSON(buf[:0], s, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendJSONFloor is the same output written by encoding/json
// from a Go value already in memory (no message to read): the cost of
// producing the JSON alone, for comparison.
func BenchmarkAppendJSONFloor(b *testing.B) {
	var v map[string]any
	if err := json.Unmarshal([]byte(decAllJSON), &v); err != nil {
		b.Fatal(err)
	}
	msg := decAllMessage(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
