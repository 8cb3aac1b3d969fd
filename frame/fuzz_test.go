package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/zapcodec/zapcodec/pool"
)

// refFrame is one frame as the reference parser sees it.
type refFrame struct {
	kind    byte
	payload []byte
}

// refParse splits stream into frames by hand (the oracle for the fuzzer)
// and returns the error class the Reader must end with.
func refParse(stream []byte, max int, http bool) ([]refFrame, error) {
	var out []refFrame
	hl := 5
	if http {
		hl = 4
	}
	for {
		if len(stream) == 0 {
			return out, io.EOF
		}
		if !http && len(stream) >= 4 && binary.LittleEndian.Uint32(stream) == 0 {
			return out, ErrEmptyFrame
		}
		// The 4 length bytes decide a refusal: no fifth byte is awaited.
		if len(stream) < 4 {
			return out, io.ErrUnexpectedEOF
		}
		var n uint32
		if http {
			n = binary.BigEndian.Uint32(stream)
		} else {
			n = binary.LittleEndian.Uint32(stream)
		}
		if uint64(n) > uint64(max) {
			return out, ErrFrameTooLarge
		}
		if len(stream) < hl {
			return out, io.ErrUnexpectedEOF
		}
		var kind byte
		if !http {
			kind = stream[4]
		}
		body := int(n)
		if !http {
			body--
		}
		if len(stream) < hl+body {
			return out, io.ErrUnexpectedEOF
		}
		out = append(out, refFrame{kind, stream[hl : hl+body]})
		stream = stream[hl+body:]
	}
}

func fuzzSeeds() [][]byte {
	var seeds [][]byte
	var b bytes.Buffer
	w := NewWriter(&b)
	w.WriteFrame(1, []byte("hello"))
	w.WriteFrame(2, nil)
	w.WriteFrame(3, bytes.Repeat([]byte{0xAB}, 300))
	w.Flush()
	seeds = append(seeds, append([]byte(nil), b.Bytes()...))
	b.Reset()
	w = NewWriter(&b, WithHTTPFraming())
	w.WriteFrame(0, []byte("ZAP\x00 message"))
	w.WriteFrame(0, nil)
	w.Flush()
	seeds = append(seeds, append([]byte(nil), b.Bytes()...))
	seeds = append(seeds,
		nil,
		[]byte{0, 0, 0, 0},
		[]byte{0xFF, 0xFF, 0xFF, 0xFF, 1},
		[]byte{1, 0, 0, 0, 4, 9, 0, 0},
		[]byte{2, 0, 0},
	)
	return seeds
}

// FuzzReader feeds arbitrary streams to a Reader with small limits and
// buffers and checks it against refParse: same frames, same final error
// class, no panic, and no buffer larger than heldBound of the bytes
// received, whatever the headers announce.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		for _, http := range []bool{false, true} {
			f.Add(s, uint16(16), uint16(64), http, false)
			f.Add(s, uint16(100), uint16(1000), http, true)
		}
	}
	// A body whose size class (1024) is above the maximum frame (1000).
	var b bytes.Buffer
	w := NewWriter(&b)
	w.WriteFrame(1, make([]byte, 999))
	w.Flush()
	f.Add(b.Bytes(), uint16(16), uint16(1000), false, false)
	f.Fuzz(func(t *testing.T, stream []byte, bufSize, maxSize uint16, http, oneByte bool) {
		max := int(maxSize)
		if max == 0 {
			max = 1 // WithMaxFrameSize(0) means the 16 MiB default
		}
		want, wantErr := refParse(stream, max, http)
		r, cr := fuzzReader(stream, bufSize, max, http, oneByte)
		// An odd buffer size also waits for each frame to begin first, as
		// a server's read loop does (Wait, then Next): same frames, same
		// errors.
		wait := bufSize%2 == 1
		// With bit 1 of the buffer size, each frame is asked of TryNext
		// first (as a server's read loop does), then of Next when it
		// returns none: same frames, same errors.
		try := bufSize&2 != 0
		for i := 0; ; i++ {
			var kind byte
			var p []byte
			var err error
			if wait && r.Buffered() == 0 {
				if err = r.Wait(); err == nil && r.Buffered() == 0 {
					t.Fatal("Wait returned with nothing buffered")
				}
			}
			if err == nil {
				// Ready's inline case decides as the general one does.
				ready, slow := r.Ready(), r.ready()
				if ready != slow {
					t.Fatalf("before frame %d: Ready %v, general %v", i, ready, slow)
				}
				ok := false
				if try {
					buffered := r.Buffered()
					if kind, p, ok = r.TryNext(); ok && !ready {
						t.Fatalf("frame %d: TryNext returned one where Next would read", i)
					} else if !ok && r.Buffered() != buffered {
						t.Fatalf("frame %d: TryNext returned none but took %d bytes", i, buffered-r.Buffered())
					}
				}
				if !ok {
					kind, p, err = r.Next()
					if try && ready && !http && err == nil {
						t.Fatalf("frame %d: TryNext returned none, Next a buffered frame", i)
					}
				}
			}
			// Memory follows the bytes received, whatever the headers
			// announced, and never exceeds the larger of the read-ahead
			// limit and the largest frame.
			if h := r.Held(); h > heldBound(cr.n) || h > builtinMax(r.rsize, 4+r.max) {
				t.Fatalf("holds a buffer of %d bytes after receiving %d (bound %d; read-ahead %d, max frame %d)",
					h, cr.n, heldBound(cr.n), r.rsize, r.max)
			}
			if err != nil {
				if i != len(want) {
					t.Fatalf("error %v after %d frames, reference has %d", err, i, len(want))
				}
				if !errors.Is(err, wantErr) {
					t.Fatalf("error %v, reference %v", err, wantErr)
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("frame %d beyond the reference's %d", i, len(want))
			}
			if kind != want[i].kind || !bytes.Equal(p, want[i].payload) {
				t.Fatalf("frame %d: kind %d %x, reference %d %x", i, kind, p, want[i].kind, want[i].payload)
			}
			if len(p) > max {
				t.Fatalf("payload of %d bytes over max %d", len(p), max)
			}
		}
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// heldBound is the most a Reader may hold after receiving n bytes: a
// buffer grows to at most 2*growFactor times the bytes it holds (at least
// 2*minChunk), and the pool may hand out up to 4 times what was asked for
// (a buffer of the next power-of-two class, or one from the class above
// that a capacity limit filed lower).
func heldBound(n int) int { return 4 * max(2*minChunk, 2*growFactor*n) }

func builtinMax(a, b int) int { return max(a, b) }

// fuzzReader is the Reader the fuzz targets test: over stream, counted
// (the countingReader), one byte a read when oneByte, with a body pool of
// its own, so that every buffer seen was allocated here.
func fuzzReader(stream []byte, bufSize uint16, maxSize int, http, oneByte bool) (*Reader, *countingReader) {
	opts := []Option{WithBufferSize(int(bufSize)), WithMaxFrameSize(maxSize)}
	if http {
		opts = append(opts, WithHTTPFraming())
	}
	cr := &countingReader{r: bytes.NewReader(stream)}
	var src io.Reader = cr
	if oneByte {
		src = iotest.OneByteReader(src)
	}
	r := NewReader(src, opts...)
	r.bodies = new(pool.SizedPool)
	return r, cr
}
