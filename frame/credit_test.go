package frame

import (
	"bytes"
	"errors"
	"math/bits"
	"os"
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

// TestCreditFollowsBytesReceived: a peer that sent one large frame (1 MB)
// earns the credit of the package doc's first exception, but what the
// credit lets the next large frame take follows the bytes of that frame:
// after small frames and a pause, the first 6 bytes of another 1 MB frame
// cost no pooled buffer, its first 512 bytes no more than any frame's
// (heldBound), and a buffer of its whole length comes only once
// 1/creditFactor of it is in (here 3,907 bytes),
// still before the rest of it is read, so the frame is still read into
// its own buffer with few bytes moved. It used to take the whole 1 MB (a
// 1 MiB pool class) on its first 6 bytes, at
// any time after the first frame, for ever.
func TestCreditFollowsBytesReceived(t *testing.T) {
	t.Parallel()
	const size = 1_000_000
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	frame := cat(le(size+1), []byte{7}, body)
	var small []byte // 100 frames of 50 bytes
	for range 100 {
		small = append(small, cat(le(50), []byte{1}, make([]byte, 49))...)
	}
	src := &pausingReader{chunks: [][]byte{frame}}
	r := NewReader(src)
	r.bodies = new(pool.SizedPool) // capacities exactly as asked
	if _, p, err := r.Next(); err != nil || !bytes.Equal(p, body) {
		t.Fatalf("first large frame: %d bytes, %v", len(p), err)
	}
	src.chunks = [][]byte{small}
	for i := 0; ; i++ {
		if _, _, err := r.Next(); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) || i != 100 {
				t.Fatalf("after %d small frames: %v", i, err)
			}
			break
		}
	}
	if r.Held() != 0 {
		t.Fatalf("a drained Reader holds %d bytes", r.Held())
	}
	received := 0
	for _, upto := range []int{6, 512, 2 << 10, len(frame) / creditFactor, len(frame)/creditFactor + 1, 16 << 10, 64 << 10, len(frame)} {
		src.chunks = [][]byte{frame[received:upto]}
		received = upto
		kind, p, err := r.Next()
		if upto == len(frame) {
			if err != nil || kind != 7 || !bytes.Equal(p, body) {
				t.Fatalf("second large frame: kind %d, %d bytes, %v", kind, len(p), err)
			}
			break
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("after %d bytes of the frame: Next = %v, want the deadline", received, err)
		}
		h := r.Held()
		// Before 1/creditFactor of the frame is in, the credit gives
		// nothing: the frame grows as any does (heldBound).
		bound := heldBound(received)
		if received > len(frame)/creditFactor {
			bound = max(bound, 2*creditFactor*received)
		}
		if h > bound {
			t.Errorf("holds %d bytes after %d bytes of a frame (bound %d)", h, received, bound)
		}
		if received == 6 && h != 0 {
			t.Errorf("holds %d bytes after a header and one byte of a frame, want 0", h)
		}
		if received >= len(frame)/creditFactor+1 && h < len(frame) {
			t.Errorf("holds %d bytes after %d bytes of a frame of %d it has the credit for, want the whole frame's buffer",
				h, received, len(frame))
		}
	}
}

// TestCreditBufferIsPoolClass pins the size of the buffer the credit (the
// package doc's first exception) gives a frame: its whole length rounded
// up to the pool's power-of-two class, so less than twice that length,
// and less than 2·creditFactor times the bytes of the frame received
// when it is taken. After a frame of a 1 MiB payload (1,048,581 bytes), a
// like frame takes 2 MiB once 4,097 bytes or more of it are in; the doc
// used to say "a buffer of its whole length".
func TestCreditBufferIsPoolClass(t *testing.T) {
	t.Parallel()
	for _, payload := range []int{64 << 10, 200_000, 1 << 20} {
		body := bytes.Repeat([]byte{0xA5}, payload)
		frame := cat(le(uint32(payload+1)), []byte{7}, body)
		src := &pausingReader{chunks: [][]byte{frame}}
		r := NewReader(src)
		r.bodies = new(pool.SizedPool) // a new backing array for every Get: capacities are the classes
		if _, p, err := r.Next(); err != nil || len(p) != payload {
			t.Fatalf("payload %d: first frame: %d bytes, %v", payload, len(p), err)
		}
		if _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) || r.Held() != 0 {
			t.Fatalf("payload %d: drained Reader: %v, holds %d", payload, err, r.Held())
		}
		// The next frame, 600 bytes at a time, until the credit gives it
		// a buffer for all of it.
		received := 0
		for r.Held() < len(frame) {
			if received >= len(frame)/2 {
				t.Fatalf("payload %d: no buffer for the whole frame after %d of its %d bytes (holds %d)", payload, received, len(frame), r.Held())
			}
			upto := min(received+600, len(frame))
			src.chunks = [][]byte{frame[received:upto]}
			received = upto
			if _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("payload %d: after %d bytes: %v, want the deadline", payload, received, err)
			}
		}
		h := r.Held()
		class := 1 << bits.Len(uint(len(frame)-1))
		t.Logf("payload %d: frame of %d bytes: holds %d after %d bytes of it", payload, len(frame), h, received)
		if h != class || h >= 2*len(frame) {
			t.Errorf("payload %d: holds %d for a frame of %d, want its pool class %d (under twice the frame)", payload, h, len(frame), class)
		}
		if h >= 2*creditFactor*received {
			t.Errorf("payload %d: holds %d after %d bytes of the frame, want under %d times that", payload, h, received, 2*creditFactor)
		}
		src.chunks = [][]byte{frame[received:]}
		if kind, p, err := r.Next(); err != nil || kind != 7 || !bytes.Equal(p, body) {
			t.Fatalf("payload %d: second frame: kind %d, %d bytes, %v", payload, kind, len(p), err)
		}
	}
}
