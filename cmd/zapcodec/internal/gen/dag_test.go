package gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Structs that nest the same struct twice, 64 levels deep: generation must
// visit each struct once, not each of the 2^64 paths (it used to hang).
func TestGenerateSharedNesting(t *testing.T) {
	t.Parallel()
	const depth = 64
	var src strings.Builder
	src.WriteString("package dag\n")
	for i := range depth {
		fmt.Fprintf(&src, "struct S%d { A S%d; B S%d; T text }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&src, "struct S%d { X text }\n", depth)
	f, err := schema.Parse("dag.zap", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || !strings.Contains(string(files[0].Data), "func (m *S0) AppendZAP(") {
		t.Fatal("no S0 record generated")
	}
}
