package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dumpFuzzModes are the command lines FuzzDump runs every input through:
// each input form and framing, without and with a schema.
var dumpFuzzModes = [][]string{
	nil,
	{"-raw"},
	{"-hex"},
	{"-raw", "-message"},
	{"-raw", "-frames"},
	{"-raw", "-http"},
	{"-raw", "-schema", "kitchen.zap", "-type", "Everything"},
	{"-raw", "-message", "-schema", "eth.zap", "-type", "getBalance"},
	{"-raw", "-message", "-schema", "eth.zap", "-type", "Eth", "-response"},
	{"-raw", "-frames", "-schema", "eth.zap", "-type", "Eth"},
	{"-raw", "-frames", "-schema", "kitchen.zap", "-type", "Item"},
	{"-raw", "-frames", "-schema", "examples/ethrpc/eth.zap", "-type", "EthLogs"}, // stream messages
	{"-raw", "-http", "-schema", "eth.zap", "-type", "Eth.getBalance", "-response"},
}

// FuzzDump feeds arbitrary bytes to every dump mode: no panic, exit 0 with
// nothing on stderr or exit 1 with an error naming a byte offset, and
// output proportional to the input.
func FuzzDump(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(dumpDir, "*.hex"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if raw, err := unhexText(b); err == nil {
			f.Add(raw)
		}
	}
	modes := make([][]string, len(dumpFuzzModes))
	for i, m := range dumpFuzzModes {
		modes[i] = make([]string, len(m))
		for j, a := range m {
			modes[i][j] = a
			if strings.HasSuffix(a, ".zap") {
				modes[i][j] = dumpSchema(f, a)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, args := range modes {
			var stdout, stderr bytes.Buffer
			code := runDump(args, bytes.NewReader(in), &stdout, &stderr)
			switch code {
			case 0:
				if stderr.Len() != 0 {
					t.Fatalf("%q: exit 0 with stderr %q", args, &stderr)
				}
			case 1:
				if !strings.HasPrefix(stderr.String(), "zapcodec dump: ") || !strings.Contains(stderr.String(), "at byte ") {
					t.Fatalf("%q: exit 1 with stderr %q", args, &stderr)
				}
			default:
				t.Fatalf("%q: exit %d, stderr %q (input %s)", args, code, &stderr, hex.EncodeToString(in))
			}
			if stdout.Len() > 1024*len(in)+16384 {
				t.Fatalf("%q: %d bytes of output for %d bytes of input", args, stdout.Len(), len(in))
			}
		}
	})
}
