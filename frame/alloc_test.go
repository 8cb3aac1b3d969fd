//go:build !race

package frame

import (
	"bytes"
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/internal/poison"
)

func TestAllocsRead(t *testing.T) {
	defer poison.Set(poison.Set(false))
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
			// Warm up with many Puts (more than the 42,000 after which
			// a bytebufferpool.Pool would calibrate and start dropping
			// buffers larger than the common ones): pooled frame
			// buffers must still come back.
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
	defer poison.Set(poison.Set(false))
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

// burstReader replays frames one at a time, as a peer that sends a frame
// and waits for the answer: a Read never returns bytes of two frames. At
// the start of each frame it records what the Reader holds: a Reader
// between frames with nothing buffered must have given its pooled buffer
// back before it reads (a read that may block for hours).
type burstReader struct {
	frames [][]byte
	i, off int
	r      *Reader
	held   int // largest r.Held() seen at the start of a frame
}

func (b *burstReader) Read(p []byte) (int, error) {
	f := b.frames[b.i]
	if b.off == 0 {
		b.held = max(b.held, b.r.Held())
	}
	n := copy(p, f[b.off:])
	b.off += n
	if b.off == len(f) {
		b.i, b.off = (b.i+1)%len(b.frames), 0
	}
	return n, nil
}

// TestAllocsIdleActiveCycle: a connection that alternates between traffic
// and waiting takes its buffers from the pools and gives them back each
// time, with no allocation per frame once warm, on both sides: frames of
// 64 B (the Reader's inline buffer), 4000 B (pooled) and 200 KB (larger
// than the read-ahead limit), in turn.
func TestAllocsIdleActiveCycle(t *testing.T) {
	defer poison.Set(poison.Set(false))
	sizes := []int{64, 4000, 200 << 10, 100}
	var frames [][]byte
	for _, n := range sizes {
		var b bytes.Buffer
		w := NewWriter(&b)
		w.WriteFrame(1, make([]byte, n))
		w.Flush()
		frames = append(frames, b.Bytes())
	}
	src := &burstReader{frames: frames}
	r := NewReader(src)
	src.r = r
	for i := 0; i < 4*len(sizes); i++ {
		r.Next()
	}
	i := 0
	if n := testing.AllocsPerRun(400, func() {
		if _, p, err := r.Next(); err != nil || len(p) != sizes[i%len(sizes)] {
			t.Fatalf("Next: %d bytes, %v", len(p), err)
		}
		i++
	}); n != 0 {
		t.Errorf("Reader, frames in bursts: %v allocs per Next, want 0", n)
	}
	if src.held != 0 {
		t.Errorf("Reader held a pooled buffer of %d B when it started reading a new frame", src.held)
	}

	w := NewWriter(io.Discard)
	payloads := make([][]byte, len(sizes))
	for i, n := range sizes {
		payloads[i] = make([]byte, n)
	}
	send := func(i int) {
		p := payloads[i%len(payloads)]
		buf := w.Begin(1)
		buf = append(buf, p...)
		if err := w.End(buf); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFrame(2, p); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if h := w.Held(); h != 0 {
			t.Fatalf("Writer holds %d B after Flush", h)
		}
	}
	for i := 0; i < 4*len(sizes); i++ {
		send(i)
	}
	i = 0
	if n := testing.AllocsPerRun(400, func() { send(i); i++ }); n != 0 {
		t.Errorf("Writer, Begin/End, WriteFrame and Flush in turn: %v allocs per cycle, want 0", n)
	}
}
