package frame

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
)

// TestDeclaredHugeLengthFollowsBytes: 1,000 Readers whose largest frame
// is the largest a u32 prefix carries, each sent a header declaring that
// length and the first bytes of its body, hold heap in proportion to the
// bytes each received (at most 8 times them, plus 256 bytes for the
// pool's rounding), never to the declared length: 1,000 such peers would
// otherwise take 4 TiB.
func TestDeclaredHugeLengthFollowsBytes(t *testing.T) {
	const conns = 1000
	for _, sent := range []int{1, 600, 5000} {
		hdr := binary.LittleEndian.AppendUint32(nil, uint32(maxSize))
		hdr = append(hdr, 1) // kind
		hdr = append(hdr, make([]byte, sent)...)
		gate, done := make(chan struct{}), make(chan struct{})
		blocked := make(chan struct{}, conns)
		errs := make(chan error, conns)
		var wg sync.WaitGroup
		readers := make([]*Reader, conns)
		for i := range readers {
			readers[i] = NewReader(&gatedReader{gate: gate, done: done, blocked: blocked, data: hdr}, WithMaxFrameSize(maxSize))
		}
		for _, r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := r.Next()
				errs <- err
			}()
		}
		waitN(t, blocked, conns, "idle readers blocked in Next")
		idle := heapInUse()
		close(gate)
		waitN(t, blocked, conns, "readers blocked after the header and the first bytes of the body")
		busy := heapInUse()
		grown := int64(busy) - int64(idle)
		bound := int64(conns * (8*len(hdr) + 256))
		t.Logf("%d readers sent a %d B header and %d B of its body: %d B of heap beyond idle (%d B per reader)",
			conns, maxSize, sent, grown, grown/conns)
		if grown > bound {
			t.Errorf("%d B of body each: %d readers hold %d B beyond idle (%d B each); want at most %d B in all",
				sent, conns, grown, grown/conns, bound)
		}
		close(done)
		wg.Wait()
		for range conns {
			if err := <-errs; !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("Next after the stream ended inside the frame: %v, want io.ErrUnexpectedEOF", err)
			}
		}
	}
}
