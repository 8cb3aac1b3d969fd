package compare

import (
	"strings"
	"testing"
)

// BenchmarkCodec runs every codec operation on every codec:
//
//	go test -run '^$' -bench Codec -benchtime 200ms
func BenchmarkCodec(b *testing.B) {
	f := NewFixture()
	for _, op := range Ops {
		b.Run(op.Name, func(b *testing.B) {
			for _, m := range Codecs() {
				b.Run(benchName(m.Name), op.Run(m, f))
			}
		})
	}
}

// benchName keeps sub-benchmark names free of '/' and spaces.
func benchName(s string) string {
	return strings.NewReplacer("/", "_", " ", "_", "(", "", ")", "").Replace(s)
}
