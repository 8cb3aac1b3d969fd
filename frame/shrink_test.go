package frame

import (
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

// After one huge frame, the buffer a Writer asks for comes back down to the
// size of the batches that follow after shrinkAfter of them, not by halves:
// from 16 MiB it took 240 small batches, each taking a 16 MiB buffer from
// the pool (a new one whenever a GC had emptied it). A large frame in every
// shrinkAfter batches keeps it large, so that such frames stay warm.
func TestWriterShrinksAfterHugeFrame(t *testing.T) {
	t.Parallel()
	const huge = 4 << 20
	w := NewWriter(io.Discard, WithMaxFrameSize(huge+1))
	w.bodies = new(pool.SizedPool) // capacities exactly as asked
	batch := func(n int) {
		t.Helper()
		buf := w.Begin(1)
		buf = append(buf, make([]byte, n)...)
		if err := w.End(buf); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// capAsked is the capacity of the buffer the next batch starts with.
	capAsked := func() int {
		c := cap(w.Begin(1))
		if err := w.Flush(); err != nil { // abandons the begun frame
			t.Fatal(err)
		}
		return c
	}
	for round := range 2 {
		batch(huge)
		for i := 1; i < shrinkAfter; i++ {
			batch(100)
			if c := capAsked(); c < huge {
				t.Fatalf("round %d, after %d small batches: %d bytes asked for, want the huge frame's %d kept", round, i, c, huge)
			}
		}
	}
	batch(100)
	batch(600) // the largest of the small batches
	for range shrinkAfter - 2 {
		batch(100)
	}
	if c := capAsked(); c > 1024 {
		t.Fatalf("after %d small batches: %d bytes asked for, want at most 1024 (the largest of them, 606 bytes, in a pool class)", shrinkAfter, c)
	}
}
