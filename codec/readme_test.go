package codec_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEBuilderSample keeps the Go block of the README's "Messages by
// hand" section equal to the body of builderSample in example_test.go
// (one tab of indentation less, without its final return), which
// ExampleBuilder compiles and runs.
func TestREADMEBuilderSample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Messages by hand")
	if !ok {
		t.Fatal(`README has no "Messages by hand" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatal(`the README's "Messages by hand" has no Go block`)
	}
	block, _, _ = strings.Cut(block, "```\n")

	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(example), "\nfunc builderSample(buf []byte) error {\n")
	if !ok {
		t.Fatal("example_test.go has no builderSample")
	}
	body, _, ok = strings.Cut(body, "\treturn nil\n}\n")
	if !ok {
		t.Fatal("builderSample does not end with return nil")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if block != want.String() {
		t.Errorf("the README's Builder sample is not builderSample's body:\nREADME:\n%s\nexample_test.go:\n%s", block, want.String())
	}
}
