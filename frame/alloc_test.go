//go:build !race

package frame

import (
	"bytes"
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/pool"
)

func TestAllocsRead(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
	for _, size := range []int{0, 64, 4000, 5000} { // bufio path and pooled path
		for _, http := range []bool{false, true} {
			var stream bytes.Buffer
			var wopts []Option
			if http {
				wopts = append(wopts, WithHTTPFraming())
			}
			w := NewWriter(&stream, wopts...)
			w.WriteFrame(1, make([]byte, size))
			w.Flush()
			r := NewReader(&loopReader{data: stream.Bytes()}, append(wopts, WithBufferSize(4096))...)
			// Warm up past bytebufferpool's calibration (42,000 Puts),
			// after which it drops buffers larger than what it saw
			// returned.
			warm := 1
			if size > 4096 {
				warm = 45000
			}
			for i := 0; i < warm; i++ {
				r.Next()
			}
			if n := testing.AllocsPerRun(200, func() {
				if _, p, err := r.Next(); err != nil || len(p) != size {
					t.Fatalf("Next: %d bytes, %v", len(p), err)
				}
			}); n != 0 {
				t.Errorf("size %d http=%v: %v allocs per Next, want 0", size, http, n)
			}
		}
	}
}

func TestAllocsWrite(t *testing.T) {
	for _, size := range []int{0, 64, 4000, 200 << 10} { // copy path and writev path
		w := NewWriter(io.Discard)
		payload := make([]byte, size)
		w.WriteFrame(1, payload)
		w.Flush()
		if n := testing.AllocsPerRun(200, func() {
			if err := w.WriteFrame(1, payload); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("WriteFrame+Flush of %d bytes: %v allocs, want 0", size, n)
		}
		// Begin/End grows the buffer once, then reuses it.
		buf := w.Begin(1)
		w.End(append(buf, payload...))
		w.Flush()
		if n := testing.AllocsPerRun(200, func() {
			buf := w.Begin(2)
			buf = append(buf, payload...)
			if err := w.End(buf); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Begin/End+Flush of %d bytes: %v allocs, want 0", size, n)
		}
	}
}

func TestAllocsTCPRoundTrip(t *testing.T) {
	defer pool.SetPoison(pool.SetPoison(false))
	client, server := tcpPair(t)
	w := NewWriter(client)
	r := NewReader(server)
	for _, size := range []int{64, 200 << 10} {
		payload := make([]byte, size)
		done := make(chan error, 1)
		const runs = 50
		go func() {
			// runs+2: the warm-up call and AllocsPerRun's own warm-up.
			for i := 0; i < runs+2; i++ {
				if err := w.WriteFrame(1, payload); err != nil {
					done <- err
					return
				}
				if err := w.Flush(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		r.Next()
		n := testing.AllocsPerRun(runs, func() {
			if _, p, err := r.Next(); err != nil || len(p) != size {
				t.Fatalf("Next: %d bytes, %v", len(p), err)
			}
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The writer goroutine runs concurrently and AllocsPerRun counts
		// process-wide mallocs, so this covers both ends.
		if n != 0 {
			t.Errorf("TCP frame of %d bytes: %v allocs per frame, want 0", size, n)
		}
	}
}
