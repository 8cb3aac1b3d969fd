package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeros is an endless input, as /dev/zero is: a read of it whole never
// ends.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestGenSchemaBound: gen reads a schema file of at most 16 MiB, refusing
// a larger one, named with the bound, without reading it whole (it read
// any file whole, /dev/zero until memory ran out).
func TestGenSchemaBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := sparseFile(t, dir, "big.zap", 1<<30)
	out := filepath.Join(dir, "out")
	code, msg := runCmd("gen", "-out", out, big)
	want := fmt.Sprintf("zapcodec gen: %s: more than 16777216 bytes (16 MiB), too large for a schema\n", big)
	if code != 1 || msg != want {
		t.Fatalf("exit %d, output %q; want 1, %q", code, msg, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("wrote output: %v", err)
	}
	// A schema of exactly 16 MiB is read.
	src := "package p\nstruct A { X u8 }\n"
	at := filepath.Join(dir, "at.zap")
	if err := os.WriteFile(at, []byte(src+strings.Repeat("\n", maxSchemaFile-len(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, msg := runCmd("gen", "-out", out, at); code != 0 {
		t.Fatalf("a schema of 16 MiB: exit %d: %s", code, msg)
	}
}

// TestDumpInputBounds: dump reads a schema of at most 16 MiB and an input
// of at most 64 MiB, from a file or stdin, refusing more with the bound
// named, and reading no further than one byte past it.
func TestDumpInputBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := sparseFile(t, dir, "big.zap", 1<<30)
	dump := func(stdin *zeros, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runDump(args, stdin, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	code, msg := dump(&zeros{}, "-schema", big, "-type", "A", "-")
	want := fmt.Sprintf("zapcodec dump: -schema: %s: more than 16777216 bytes (16 MiB), too large for a schema\n", big)
	if code != 2 || msg != want {
		t.Fatalf("exit %d, output %q; want 2, %q", code, msg, want)
	}
	in := &zeros{}
	code, msg = dump(in)
	want = "zapcodec dump: stdin: more than 67108864 bytes (64 MiB), more than dump reads\n"
	if code != 2 || msg != want || in.n > maxDumpInput+1<<20 {
		t.Fatalf("exit %d, output %q, %d bytes read; want 2, %q", code, msg, in.n, want)
	}
	bigIn := sparseFile(t, dir, "big.bin", 1<<30)
	code, msg = dump(&zeros{}, bigIn)
	want = fmt.Sprintf("zapcodec dump: %s: more than 67108864 bytes (64 MiB), more than dump reads\n", bigIn)
	if code != 2 || msg != want {
		t.Fatalf("exit %d, output %q; want 2, %q", code, msg, want)
	}
	// An input of exactly 64 MiB is read (and shown: a message of zeros
	// is not one, so the frames it would be are malformed).
	at := sparseFile(t, dir, "at.bin", maxDumpInput)
	if code, msg := dump(&zeros{}, "-raw", at); code == 2 || strings.Contains(msg, "MiB") {
		t.Fatalf("an input of 64 MiB: exit %d: %.200s", code, msg)
	}
}
