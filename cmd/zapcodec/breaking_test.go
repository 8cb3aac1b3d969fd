package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runSplit runs the command line args and returns its exit code, stdout
// and stderr apart.
func runSplit(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const (
	breakingOld = "testdata/breaking/old.zap"
	breakingNew = "testdata/breaking/new.zap"
	evolveOld   = "internal/gen/testdata/evolve_old.zap"
	evolveNew   = "internal/gen/testdata/evolve_new.zap"
)

// TestBreakingGolden: the changes from testdata/breaking/old.zap to
// new.zap, one line each, as testdata/breaking/out.golden holds them;
// exit 1, as some break peers.
func TestBreakingGolden(t *testing.T) {
	t.Parallel()
	code, out, errOut := runSplit("breaking", "-against", breakingOld, breakingNew)
	if code != 1 || errOut != "" {
		t.Errorf("exit %d, stderr %q; want 1 and nothing", code, errOut)
	}
	golden(t, "testdata/breaking/out.golden", []byte(out))
}

// TestBreakingStrict: fields added at the end of structs are warnings,
// exit 0, unless -strict makes them breaking, exit 1.
func TestBreakingStrict(t *testing.T) {
	t.Parallel()
	code, out, _ := runSplit("breaking", "-against", evolveOld, evolveNew)
	if code != 0 || strings.Count(out, ": warning: ") != 8 || strings.Contains(out, ": breaking: ") {
		t.Errorf("exit %d, want 0 and 8 warnings:\n%s", code, out)
	}
	code, out, _ = runSplit("breaking", "-strict", "-against", evolveOld, evolveNew)
	if code != 1 || strings.Count(out, ": breaking: ") != 8 || strings.Contains(out, ": warning: ") {
		t.Errorf("-strict: exit %d, want 1 and 8 breaking:\n%s", code, out)
	}
}

// TestBreakingSelf: a schema against itself prints nothing, exit 0; so
// does one split in two files against the whole.
func TestBreakingSelf(t *testing.T) {
	t.Parallel()
	for _, p := range []string{breakingOld, breakingNew, evolveOld, "internal/gen/testdata/all.zap", "../../examples/ethrpc/eth.zap"} {
		if code, out, errOut := runSplit("breaking", "-against", p, p); code != 0 || out != "" || errOut != "" {
			t.Errorf("%s against itself: exit %d, %q %q", p, code, out, errOut)
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.zap"), filepath.Join(dir, "b.zap")
	src, err := os.ReadFile(breakingOld)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, _ := strings.Cut(string(src), "interface Shop")
	writeFile(t, a, head)
	writeFile(t, b, "interface Shop"+tail)
	if code, out, errOut := runSplit("breaking", "-against", breakingOld, a, b); code != 0 || out != "" || errOut != "" {
		t.Errorf("two files against one: exit %d, %q %q", code, out, errOut)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBreakingErrors: bad usage, a file that cannot be read and a schema
// that does not parse, on either side, exit 2 with the reason on stderr
// and nothing on stdout.
func TestBreakingErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.zap")
	writeFile(t, bad, "struct S\n    A u33\n")
	missing := filepath.Join(dir, "missing.zap")
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{breakingNew}, "-against OLD.zap and at least one new schema file are required"},
		{[]string{"-against", breakingOld}, "-against OLD.zap and at least one new schema file are required"},
		{[]string{"-nosuchflag", "-against", breakingOld, breakingNew}, "flag provided but not defined: -nosuchflag"},
		{[]string{"-against", bad, breakingNew}, bad + ":2:7: unknown type u33"},
		{[]string{"-against", breakingOld, bad}, bad + ":2:7: unknown type u33"},
		{[]string{"-against", missing, breakingNew}, "zapcodec breaking: open " + missing},
		{[]string{"-against", breakingOld, breakingNew, missing}, "zapcodec breaking: open " + missing},
	} {
		code, out, errOut := runSplit(append([]string{"breaking"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", c.args, code, out, errOut, c.want)
		}
	}
	if code, out, errOut := runSplit("breaking", "-h"); code != 0 || out != "" || !strings.Contains(errOut, "zapcodec breaking [-strict] -against OLD.zap") {
		t.Errorf("-h: exit %d, %q %q", code, out, errOut)
	}
}
