package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", path, got, want)
	}
}

func runCmd(args ...string) (code int, out string) {
	var stdout, stderr bytes.Buffer
	code = run(args, &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// TestBadSchemas runs gen on every testdata/bad/*.zap and compares the exit
// code and output with testdata/bad/*.golden. Nothing may be written.
func TestBadSchemas(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("testdata/bad/*.zap")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no bad schemas: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			out := t.TempDir()
			code, msg := runCmd("gen", "-out", out, p)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			golden(t, strings.TrimSuffix(p, ".zap")+".golden", []byte(msg))
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("wrote %d files", len(entries))
			}
		})
	}
}

func TestGenWrites(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "new", "dir")
	// The golden file is the committed examples/ethrpc/ethzap package.
	if code, msg := runCmd("gen", "-out", out, "-package", "ethzap", "../../examples/ethrpc/eth.zap"); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	got, err := os.ReadFile(filepath.Join(out, "eth.zap.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("internal/gen/testdata/eth.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("gen output differs from internal/gen/testdata/eth.golden")
	}
	if code, msg := runCmd("gen", "-out", out, "-package", "other", "../../examples/ethrpc/eth.zap"); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "eth.zap.go")); !bytes.Contains(got, []byte("\npackage other\n")) {
		t.Error("-package other ignored")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		code int
		want string // substring
	}{
		{nil, 2, "usage: zapcodec <subcommand>"},
		{[]string{"-h"}, 0, "zapcodec gen [-out DIR] [-package NAME] SCHEMA.zap..."},
		{[]string{"help"}, 0, "gen: compile .zap schemas"},
		{[]string{"frobnicate"}, 2, `zapcodec: unknown subcommand "frobnicate"`},
		{[]string{"gen"}, 2, "zapcodec gen: no schema files"},
		{[]string{"gen", "-h"}, 0, "-package NAME"},
		{[]string{"gen", "-bogus", "x.zap"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"gen", "testdata/missing.zap"}, 1, "zapcodec gen: open testdata/missing.zap"},
	}
	for _, tt := range tests {
		code, out := runCmd(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("zapcodec %v: exit %d, output:\n%s\nwant exit %d and %q", tt.args, code, out, tt.code, tt.want)
		}
	}
	// No subcommand, or an unknown one, is bad usage as for a Go tool:
	// the usage goes to stderr alone (stdout stays empty, for a script
	// that reads it) and the exit code is 2. -h and help print it to
	// stdout and exit 0.
	for _, args := range [][]string{nil, {"frobnicate"}, {""}, {"-bogus"}, {"help", "frobnicate"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: zapcodec <subcommand>") {
			t.Errorf("zapcodec %q: exit %d, stdout %q, stderr %.80q; want exit 2, the usage on stderr alone", args, code, stdout.String(), stderr.String())
		}
	}
	for _, args := range [][]string{{"-h"}, {"help"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 || !strings.Contains(stdout.String(), "usage: zapcodec <subcommand>") {
			t.Errorf("zapcodec %q: exit %d, stdout %.80q, stderr %q; want exit 0, the usage on stdout alone", args, code, stdout.String(), stderr.String())
		}
	}
	// help SUBCOMMAND prints that subcommand's usage alone.
	if code, out := runCmd("help", "gen"); code != 0 || !strings.HasPrefix(out, "gen: ") || strings.Contains(out, "\ndump: ") {
		t.Errorf("zapcodec help gen: exit %d, output:\n%s\nwant gen's usage alone", code, out)
	}
	if code, out := runCmd("help", "frobnicate"); code != 2 || !strings.Contains(out, `unknown subcommand "frobnicate"`) {
		t.Errorf("zapcodec help frobnicate: exit %d, output:\n%s", code, out)
	}
	// Every registered subcommand appears in the usage.
	_, out := runCmd("-h")
	for name := range commands {
		if !strings.Contains(out, fmt.Sprintf("\n%s: ", name)) {
			t.Errorf("usage misses %s:\n%s", name, out)
		}
	}
}

// TestREADMEGen runs the gen command the README shows, as if pasted at the
// repository root (its paths taken from there, the output redirected to a
// temporary directory), and compares the output with the committed package
// it names.
func TestREADMEGen(t *testing.T) {
	t.Parallel()
	const root = "../.."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "go run github.com/zapcodec/zapcodec/cmd/zapcodec gen "
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, prefix) {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatalf("README has no line starting %q", prefix)
	}
	args := strings.Fields(strings.TrimPrefix(line, prefix))
	out, tmp := "", t.TempDir()
	var schemas []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-out" && i+1 < len(args):
			out = args[i+1]
			args[i+1] = tmp
			i++
		case a == "-package" && i+1 < len(args):
			i++
		case strings.HasSuffix(a, ".zap"):
			schemas = append(schemas, a)
			args[i] = filepath.Join(root, a)
		}
	}
	if out == "" || len(schemas) != 1 {
		t.Fatalf("README gen line %q: want -out DIR and one schema", line)
	}
	if code, msg := runCmd(append([]string{"gen"}, args...)...); code != 0 {
		t.Fatalf("%s: exit %d: %s", line, code, msg)
	}
	name := strings.TrimSuffix(filepath.Base(schemas[0]), ".zap") + ".zap.go"
	got, err := os.ReadFile(filepath.Join(tmp, name))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, out, name))
	if err != nil {
		t.Fatalf("the README's output directory %s: %v", out, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the README's gen command does not reproduce %s", filepath.Join(out, name))
	}
}
