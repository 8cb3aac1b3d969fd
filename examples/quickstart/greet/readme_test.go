package greet_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEQuickStart keeps the README's quick start equal to this
// package: the schema block is greet.zap, and the Go block is this
// package's example from the greeter type to the end of the file.
func TestREADMEQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, qs, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	qs, _, _ = strings.Cut(qs, "\n## ")
	schema, err := os.ReadFile("greet.zap")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(qs, "```\n"+string(schema)+"```\n") {
		t.Errorf("the README's quick start does not show greet.zap as it is:\n%s", schema)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(example), "\n// greeter implements")
	if !ok {
		t.Fatal("example_test.go has no greeter")
	}
	if !strings.Contains(qs, "```go\n// greeter implements"+code+"```\n") {
		t.Errorf("the README's quick start does not show example_test.go from the greeter type on, as it is")
	}
	if !strings.Contains(qs, "go run ./cmd/zapcodec gen -package greet -out examples/quickstart/greet examples/quickstart/greet/greet.zap") {
		t.Errorf("the README's quick start lacks the gen command")
	}
}
