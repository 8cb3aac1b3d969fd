package frame

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedZap returns ../shared/zap next to the module root, or skips the test
// when that folder is absent.
func sharedZap(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("skipping: no go.mod above the package dir, so no ../shared/zap")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "zap")
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Skipf("skipping: shared fixtures folder %s is absent", p)
	}
	return p
}
