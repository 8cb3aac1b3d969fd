package schema

import (
	"github.com/zapcodec/zapcodec/internal/fixture"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input panics, that errors are positioned in the
// input file, and that every accepted File satisfies checkInvariants.
func FuzzParse(f *testing.F) {
	var paths []string
	for _, pattern := range []string{"testdata/*.zap", "testdata/bad/*.zap"} {
		m, _ := filepath.Glob(pattern)
		paths = append(paths, m...)
	}
	if dir := sharedDirOrEmpty(); dir != "" {
		m, _ := filepath.Glob(filepath.Join(dir, "schemas", "*.zap"))
		more, _ := filepath.Glob(filepath.Join(dir, "schemas", "more", "*.zap"))
		paths = append(append(paths, m...), more...)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	// Streams, their payloads named and not (a zapcodec extension).
	f.Add([]byte("struct A {}\ninterface I {\n    up(stream A) returns (r: A)\n    down(q: A) returns (stream A)\n    both(s: stream A) returns (stream A)\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("f.zap", src)
		if err != nil {
			if file != nil || !strings.HasPrefix(err.Error(), "f.zap:") {
				t.Fatalf("bad error %v (file %v)", err, file)
			}
			return
		}
		checkInvariants(t, file)
	})
}

// sharedDirOrEmpty returns the repository's copy of the canonical bytes
// (testdata/canonical), or "" when the repository root cannot be found.
func sharedDirOrEmpty() string {
	dir, err := fixture.Find()
	if err != nil {
		return ""
	}
	return dir
}
