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
	out := filepath.Join(t.TempDir(), "new", "dir")
	// The golden file is the committed examples/ethrpc/ethzap package.
	if code, msg := runCmd("gen", "-out", out, "-package", "ethzap", "internal/gen/testdata/eth.zap"); code != 0 {
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
	if code, msg := runCmd("gen", "-out", out, "-package", "other", "internal/gen/testdata/eth.zap"); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "eth.zap.go")); !bytes.Contains(got, []byte("\npackage other\n")) {
		t.Error("-package other ignored")
	}
}

func TestUsage(t *testing.T) {
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
	// Every registered subcommand appears in the usage.
	_, out := runCmd("-h")
	for name := range commands {
		if !strings.Contains(out, fmt.Sprintf("\n%s: ", name)) {
			t.Errorf("usage misses %s:\n%s", name, out)
		}
	}
}
