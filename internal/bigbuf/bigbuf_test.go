package bigbuf

import "testing"

// TestNew: the slice is as long as asked, reads zero, and takes writes at
// both ends.
func TestNew(t *testing.T) {
	const n = 1<<32 + 5
	b := New(t, n)
	if uint64(len(b)) != n {
		t.Fatalf("len %d, want %d", len(b), uint64(n))
	}
	if b[0] != 0 || b[len(b)-1] != 0 || b[len(b)/2] != 0 {
		t.Fatal("a new buffer does not read zero")
	}
	b[0], b[len(b)-1] = 1, 2
	if b[0] != 1 || b[len(b)-1] != 2 {
		t.Fatal("writes did not stick")
	}
}
