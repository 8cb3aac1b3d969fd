package frame

import (
	"bytes"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
)

// TestPayloadPoisonedAfterNext shows the debugging aid at work: with
// poisoning on, a payload kept past the next Next reads as 0xDB bytes on
// both the bufio path and the pooled path.
func TestPayloadPoisonedAfterNext(t *testing.T) {
	defer poison.Set(poison.Set(true))
	for _, size := range []int{10, 5000} { // fits a 4 KiB buffer / does not
		payload := bytes.Repeat([]byte{'x'}, size)
		var stream bytes.Buffer
		w := NewWriter(&stream)
		w.WriteFrame(1, payload)
		w.WriteFrame(2, []byte("next"))
		w.Flush()
		r := NewReader(&stream, WithBufferSize(4096))
		_, stale, err := r.Next()
		if err != nil || !bytes.Equal(stale, payload) {
			t.Fatalf("size %d: first frame %v", size, err)
		}
		if _, p, err := r.Next(); err != nil || string(p) != "next" {
			t.Fatalf("size %d: second frame %q %v", size, p, err)
		}
		if want := bytes.Repeat([]byte{poison.Byte}, size); !bytes.Equal(stale, want) {
			t.Fatalf("size %d: payload kept past Next still reads %q..., want poison", size, stale[:8])
		}
	}
}
