package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"testing/iotest"
)

const (
	randFrames  = 10000
	randMaxSize = 256 << 10
	randSeed    = 20261130
)

type testFrame struct {
	kind    byte
	payload []byte
}

// randSize draws a payload size in [0, 256 KiB], weighted toward small
// frames so that 10,000 of them stay around 10 MiB in total.
func randSize(rng *rand.Rand) int {
	switch p := rng.IntN(1000); {
	case p < 2: // 0.2%: 64 KiB .. 256 KiB
		return 64<<10 + rng.IntN(randMaxSize-64<<10+1)
	case p < 12: // 1%: 4 KiB .. 64 KiB
		return 4<<10 + rng.IntN(60<<10)
	case p < 150: // 13.8%: 256 B .. 4 KiB
		return 256 + rng.IntN(4<<10-256)
	default:
		return rng.IntN(256)
	}
}

// randFrameSet returns the seeded frames: the edge sizes first (0, 1,
// around the buffer sizes the tests use, the maximum), then random ones.
func randFrameSet() []testFrame {
	rng := rand.New(rand.NewPCG(randSeed, randSeed>>3))
	edges := []int{0, 1, 0, 11, 12, 13, 4091, 4092, 4096, 65530, 65531, 65536, randMaxSize}
	frames := make([]testFrame, randFrames)
	for i := range frames {
		n := 0
		if i < len(edges) {
			n = edges[i]
		} else {
			n = randSize(rng)
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		frames[i] = testFrame{kind: byte(rng.Uint32()), payload: p}
	}
	// Shuffle so edge cases also land mid-stream.
	rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	return frames
}

// referenceStream encodes frames by hand, independent of Writer.
func referenceStream(frames []testFrame, http bool) []byte {
	var b []byte
	for _, f := range frames {
		if http {
			b = binary.BigEndian.AppendUint32(b, uint32(len(f.payload)))
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(f.payload)+1))
			b = append(b, f.kind)
		}
		b = append(b, f.payload...)
	}
	return b
}

// writeFrames writes frames with w, mixing WriteFrame and Begin/End and
// flushing at random points, and finally flushes.
func writeFrames(w *Writer, frames []testFrame, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, f := range frames {
		if rng.IntN(2) == 0 {
			if err := w.WriteFrame(f.kind, f.payload); err != nil {
				return err
			}
		} else {
			buf := w.Begin(f.kind)
			buf = append(buf, f.payload...)
			if err := w.End(buf); err != nil {
				return err
			}
		}
		if rng.IntN(8) == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// readFrames reads len(want) frames and then expects io.EOF.
func readFrames(r *Reader, want []testFrame, http bool) error {
	for i, f := range want {
		kind, p, err := r.Next()
		for retries := 0; isTransient(err); retries++ {
			if retries > 1000 {
				return fmt.Errorf("frame %d: no progress after %d transient errors", i, retries)
			}
			kind, p, err = r.Next()
		}
		if err != nil {
			return fmt.Errorf("frame %d (len %d): %w", i, len(f.payload), err)
		}
		wantKind := f.kind
		if http {
			wantKind = 0
		}
		if kind != wantKind || !bytes.Equal(p, f.payload) {
			return fmt.Errorf("frame %d: got kind %d len %d, want kind %d len %d (payload equal: %v)",
				i, kind, len(p), wantKind, len(f.payload), bytes.Equal(p, f.payload))
		}
	}
	_, _, err := r.Next()
	for isTransient(err) {
		_, _, err = r.Next()
	}
	if err != io.EOF {
		return fmt.Errorf("after %d frames: %v, want io.EOF", len(want), err)
	}
	return nil
}

// errFlaky is a transient failure of the underlying reader, like a read
// deadline: the stream goes on after it.
var errFlaky = errors.New("flaky: try again")

func isTransient(err error) bool { return err == errFlaky || err == iotest.ErrTimeout }

// flakyReader fails every third Read with errFlaky, without data, and
// hands out at most 7000 bytes per Read, so that errors land inside
// headers, small frames and large bodies alike.
type flakyReader struct {
	r     io.Reader
	calls int
}

func (f *flakyReader) Read(p []byte) (int, error) {
	f.calls++
	if f.calls%3 == 0 {
		return 0, errFlaky
	}
	if len(p) > 7000 {
		p = p[:7000]
	}
	return f.r.Read(p)
}

// randFramesCache builds the frame set once; the tests, which run in
// parallel, share it read-only.
var randFramesCache = sync.OnceValue(randFrameSet)

func getRandFrames(tb testing.TB) []testFrame {
	tb.Helper()
	return randFramesCache()
}

// writerConfigs vary the coalescing buffer and the writev threshold so that
// both write paths and the automatic write-out are crossed.
var writerConfigs = []struct {
	name string
	opts []Option
}{
	{"default", nil},
	{"buf16_writev1k", []Option{WithBufferSize(16), WithWritevThreshold(1 << 10)}},
	{"buf4k_writev16k", []Option{WithBufferSize(4 << 10), WithWritevThreshold(16 << 10)}},
}

// readerBufSizes cross the frames with bufio sizes: tiny (nearly every
// frame takes the pooled path), page-sized, and the default.
var readerBufSizes = []int{16, 4096, DefaultBufferSize}

func TestRandomFramesWriterMatchesReference(t *testing.T) {
	t.Parallel()
	frames := getRandFrames(t)
	for _, http := range []bool{false, true} {
		want := referenceStream(frames, http)
		for i, wc := range writerConfigs {
			t.Run(fmt.Sprintf("%s/http=%v", wc.name, http), func(t *testing.T) {
				t.Parallel()
				opts := wc.opts
				if http {
					opts = append(opts[:len(opts):len(opts)], WithHTTPFraming())
				}
				var out bytes.Buffer
				if err := writeFrames(NewWriter(&out, opts...), frames, uint64(i)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("writer output (%d bytes) differs from the reference stream (%d bytes)",
						out.Len(), len(want))
				}
			})
		}
	}
}

func TestRandomFramesReaders(t *testing.T) {
	t.Parallel()
	frames := getRandFrames(t)
	type readMaker struct {
		name string
		fn   func(io.Reader) io.Reader
	}
	readMakers := []readMaker{
		{"full", func(r io.Reader) io.Reader { return r }},
		{"onebyte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"dataerr", iotest.DataErrReader},
		{"timeout", iotest.TimeoutReader},
		{"flaky", func(r io.Reader) io.Reader { return &flakyReader{r: r} }},
	}
	// The one-byte and data+err readers are slow per byte: each crosses
	// one buffer size per framing instead of all three.
	only := map[string]map[bool]int{
		"onebyte": {false: 4096, true: 16},
		"dataerr": {false: DefaultBufferSize, true: 4096},
	}
	for _, http := range []bool{false, true} {
		stream := referenceStream(frames, http)
		for _, rm := range readMakers {
			for _, bs := range readerBufSizes {
				if o, ok := only[rm.name]; ok && o[http] != bs {
					continue
				}
				name := fmt.Sprintf("http=%v/%s/buf%d", http, rm.name, bs)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					opts := []Option{WithBufferSize(bs)}
					if http {
						opts = append(opts, WithHTTPFraming())
					}
					r := NewReader(rm.fn(bytes.NewReader(stream)), opts...)
					if err := readFrames(r, frames, http); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// pipeRoundTrip writes frames on one end of a connection and reads them on
// the other, concurrently.
func pipeRoundTrip(t *testing.T, wc, rc net.Conn, frames []testFrame, wopts, ropts []Option, seed uint64) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		w := NewWriter(wc, wopts...)
		err := writeFrames(w, frames, seed)
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		errc <- err
	}()
	r := NewReader(rc, ropts...)
	rerr := readFrames(r, frames, false)
	if rerr != nil {
		rc.Close() // unblock the writer
	}
	werr := <-errc
	if rerr != nil {
		t.Fatalf("read: %v", rerr)
	}
	if werr != nil {
		t.Fatalf("write: %v", werr)
	}
	rc.Close()
}

func TestRandomFramesNetPipe(t *testing.T) {
	t.Parallel()
	frames := getRandFrames(t)
	for i, wc := range writerConfigs {
		bs := readerBufSizes[i%len(readerBufSizes)]
		t.Run(fmt.Sprintf("%s/rbuf%d", wc.name, bs), func(t *testing.T) {
			t.Parallel()
			a, b := net.Pipe()
			pipeRoundTrip(t, a, b, frames, wc.opts, []Option{WithBufferSize(bs)}, uint64(i))
		})
	}
}

func TestRandomFramesTCP(t *testing.T) {
	t.Parallel()
	frames := getRandFrames(t)
	for i, wc := range writerConfigs {
		bs := readerBufSizes[(i+1)%len(readerBufSizes)]
		t.Run(fmt.Sprintf("%s/rbuf%d", wc.name, bs), func(t *testing.T) {
			t.Parallel()
			client, server := tcpPair(t)
			pipeRoundTrip(t, client, server, frames, wc.opts, []Option{WithBufferSize(bs)}, uint64(i))
		})
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(tb testing.TB) (client, server net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Skipf("skipping: no loopback TCP: %v", err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		client.Close()
		tb.Fatal(r.err)
	}
	tb.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}
