package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// chunkReader hands out data in reads of at most its chunk sizes (drawn
// from rng), and fails every other read with os.ErrDeadlineExceeded when
// timeouts is set: a slow peer behind a read deadline.
type chunkReader struct {
	data     []byte
	rng      *rand.Rand
	most     int
	timeouts bool
	tick     bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.timeouts {
		if r.tick = !r.tick; r.tick {
			return 0, os.ErrDeadlineExceeded
		}
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), 1+r.rng.IntN(r.most))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// nextPast is Next that retries os.ErrDeadlineExceeded, as a read loop
// does after its deadline, checking that Buffered says a frame has begun
// whenever inside says one has.
func nextPast(t *testing.T, fr *Reader) (byte, []byte, error) {
	t.Helper()
	for {
		k, p, err := fr.Next()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return k, p, err
		}
	}
}

// TestDiscardTooLargeGoesOn: a frame over the maximum between two good
// ones is refused alone, with its kind and the head of its envelope, and
// the frames after it read as if it had not been there, whatever the
// sizes of the reads, the framing, the buffer size and the read errors
// in between.
func TestDiscardTooLargeGoesOn(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 9))
	for _, http := range []bool{false, true} {
		for _, bufSize := range []int{16, 4 << 10, 64 << 10} {
			for _, over := range []int{1, 100, 5000, 300 << 10} {
				for _, most := range []int{1, 7, 1000, 1 << 20} {
					for _, timeouts := range []bool{false, true} {
						const limit = 1000
						envLen := limit + over // canonical: length max+over+1
						env := make([]byte, envLen)
						for i := range env {
							env[i] = byte(i*7 + 1)
						}
						opts := []Option{WithMaxFrameSize(limit), WithBufferSize(bufSize)}
						var w bytes.Buffer
						fw := NewWriter(&w, WithMaxFrameSize(1<<30))
						if http {
							opts = append(opts, WithHTTPFraming())
							fw = NewWriter(&w, WithMaxFrameSize(1<<30), WithHTTPFraming())
						}
						fw.WriteFrame(1, []byte("before"))
						fw.WriteFrame(9, env)
						fw.WriteFrame(2, []byte("after"))
						fw.WriteFrame(3, bytes.Repeat([]byte{5}, limit-1))
						fw.Flush()
						fr := NewReader(&chunkReader{data: w.Bytes(), rng: rng, most: most, timeouts: timeouts}, opts...)
						fr.DiscardTooLarge(64)
						k, p, err := nextPast(t, fr)
						if err != nil || string(p) != "before" {
							t.Fatalf("http %v buf %d over %d most %d: first %d %q %v", http, bufSize, over, most, k, p, err)
						}
						k, p, err = nextPast(t, fr)
						var tl *TooLargeError
						if !errors.As(err, &tl) || !errors.Is(err, ErrFrameTooLarge) || !bytes.Equal(p, env[:64]) {
							t.Fatalf("http %v buf %d over %d most %d: oversized: kind %d head %d bytes, %v", http, bufSize, over, most, k, len(p), err)
						}
						wantLen, wantKind := uint32(envLen+1), byte(9)
						if http {
							wantLen, wantKind = uint32(envLen), 0
						}
						if k != wantKind || tl.Kind != wantKind || tl.Len != wantLen || tl.Max != limit {
							t.Fatalf("http %v: kind %d, error %+v", http, k, tl)
						}
						if fr.Held() > max(bufSize, minChunk) {
							t.Fatalf("holds %d bytes for a frame read past (buffer size %d)", fr.Held(), bufSize)
						}
						k, p, err = nextPast(t, fr)
						if err != nil || string(p) != "after" || (!http && k != 2) {
							t.Fatalf("http %v buf %d over %d most %d timeouts %v: after: %d %q %v", http, bufSize, over, most, timeouts, k, p, err)
						}
						if _, p, err = nextPast(t, fr); err != nil || len(p) != limit-1 {
							t.Fatalf("last: %d bytes, %v", len(p), err)
						}
						if _, _, err = nextPast(t, fr); err != io.EOF {
							t.Fatalf("end: %v", err)
						}
					}
				}
			}
		}
	}
}

// TestDiscardTooLargeShortFrame: a frame over a tiny maximum whose
// envelope is shorter than the head asked for returns all of it.
func TestDiscardTooLargeShortFrame(t *testing.T) {
	t.Parallel()
	in := cat(le(11), []byte{4}, []byte("0123456789"), le(2), []byte{1, 'x'})
	fr := NewReader(bytes.NewReader(in), WithMaxFrameSize(4))
	fr.DiscardTooLarge(200)
	if k, p, err := fr.Next(); k != 4 || string(p) != "0123456789" || !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("%d %q %v", k, p, err)
	}
	if k, p, err := fr.Next(); k != 1 || string(p) != "x" || err != nil {
		t.Fatalf("%d %q %v", k, p, err)
	}
}

// TestDiscardTooLargeBufferedCounts: while a frame is read past, Buffered
// counts its bytes read so far (a read loop's sign that a frame has begun,
// which bounds its time), Ready and TryNext say Next would read, and Wait
// reads past it rather than take its bytes for a new frame.
func TestDiscardTooLargeBufferedCounts(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte{1}, 3000)
	in := cat(le(3001), []byte{1}, body, le(2), []byte{1, 'y'})
	r := &errAfterReader{data: in[:36], err: os.ErrDeadlineExceeded}
	fr := NewReader(r, WithMaxFrameSize(100))
	fr.DiscardTooLarge(32)
	// The head not all in: Next would read (a read loop arms the frame's
	// deadline first).
	if _, _, err := fr.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	if fr.Ready() || fr.Buffered() != 36 || fr.Discarding() {
		t.Fatalf("Ready %v, Buffered %d, Discarding %v with 31 bytes of the 32-byte head in", fr.Ready(), fr.Buffered(), fr.Discarding())
	}
	r.data = in[36:1000]
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatal(err)
	}
	if b := fr.Buffered(); b == 0 || b > 1000 {
		t.Fatalf("Buffered %d after the head, want the bytes of the frame read (1..1000)", b)
	}
	if fr.Ready() || !fr.Discarding() {
		t.Fatalf("Ready %v, Discarding %v while the rest of the frame is to be read", fr.Ready(), fr.Discarding())
	}
	if _, _, ok := fr.TryNext(); ok {
		t.Fatal("TryNext returned a frame while the rest of one is to be read")
	}
	if err := fr.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	if b := fr.Buffered(); b != 1000 {
		t.Fatalf("Buffered %d, want 1000 (the bytes of the frame read)", b)
	}
	r.data = in[1000:]
	if err := fr.Wait(); err != nil || fr.Discarding() {
		t.Fatalf("Wait: %v (Discarding %v)", err, fr.Discarding())
	}
	if k, p, err := fr.Next(); k != 1 || string(p) != "y" || err != nil {
		t.Fatalf("%d %q %v", k, p, err)
	}
	if fr.Buffered() != 0 {
		t.Fatalf("Buffered %d at the end", fr.Buffered())
	}
}

// TestDiscardTooLargeLimits: a length over the discard limit, a frame of
// length 0, the end of the stream inside the frame read past, and a
// first frame that names another protocol still break the Reader.
func TestDiscardTooLargeLimits(t *testing.T) {
	t.Parallel()
	over := uint32(DiscardLimit + 1)
	fr := NewReader(&headerOnlyReader{t: t, data: cat(le(over), []byte{1})})
	fr.DiscardTooLarge(64)
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) || errors.As(err, new(*TooLargeError)) {
		t.Fatalf("length over the discard limit: %v", err)
	}
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("not sticky: %v", err)
	}

	// Four times a large maximum is read past.
	fr = NewReader(bytes.NewReader(cat(le(over), []byte{1, 2, 3})), WithMaxFrameSize(DiscardLimit/2))
	fr.DiscardTooLarge(2)
	if _, p, err := fr.Next(); !errors.As(err, new(*TooLargeError)) || string(p) != "\x02\x03" {
		t.Fatalf("within four times the maximum: %q %v", p, err)
	}
	if _, _, err := fr.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("stream ends inside the frame: %v", err)
	}
	if fr.Buffered() != 0 {
		t.Fatalf("Buffered %d once broken", fr.Buffered())
	}

	fr = NewReader(bytes.NewReader(le(0)))
	fr.DiscardTooLarge(64)
	if _, _, err := fr.Next(); !errors.Is(err, ErrEmptyFrame) {
		t.Fatalf("length 0: %v", err)
	}

	// A TLS alert as the first bytes: a length over a small maximum,
	// named as before, not read past.
	fr = NewReader(bytes.NewReader([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28}), WithMaxFrameSize(1024))
	fr.DiscardTooLarge(64)
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) || !bytes.Contains([]byte(err.Error()), []byte("TLS alert")) {
		t.Fatalf("TLS alert: %v", err)
	}

	// Off (the default), and after Reset: the first refusal breaks.
	fr = NewReader(bytes.NewReader(cat(le(5), []byte{1, 2, 3, 4, 5}, le(1), []byte{1})), WithMaxFrameSize(4))
	if _, _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) || errors.As(err, new(*TooLargeError)) {
		t.Fatalf("off: %v", err)
	}
	fr.DiscardTooLarge(8)
	fr.Reset(bytes.NewReader(cat(le(5), []byte{1, 2, 3, 4, 5}, le(1), []byte{7})))
	if _, _, err := fr.Next(); !errors.As(err, new(*TooLargeError)) {
		t.Fatalf("after Reset: %v", err)
	}
	if k, _, err := fr.Next(); k != 7 || err != nil {
		t.Fatalf("after Reset: next %d %v", k, err)
	}
}

// zeroSource is a stream of n zero bytes that it holds none of.
type zeroSource struct{ n int }

func (z *zeroSource) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	clear(p[:k])
	z.n -= k
	return k, nil
}

// TestDiscardTooLargeMemory: reading past a 60 MiB frame (a maximum of
// 1 MiB) allocates a small bound in all, however the frame is cut into
// reads: memory follows the bytes held, not the length declared.
func TestDiscardTooLargeMemory(t *testing.T) {
	const n = 60 << 20
	hdr := cat(le(n), []byte{1})
	src := io.MultiReader(bytes.NewReader(hdr), &zeroSource{n: n - 1}, bytes.NewReader(cat(le(2), []byte{1, 'z'})))
	fr := NewReader(src, WithMaxFrameSize(1<<20))
	fr.DiscardTooLarge(64)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := fr.Next()
	var p []byte
	if errors.Is(err, ErrFrameTooLarge) {
		_, p, err = fr.Next()
	}
	runtime.ReadMemStats(&after)
	if err != nil || string(p) != "z" {
		t.Fatalf("%q %v", p, err)
	}
	// The read-ahead buffer (64 KiB) and the error: far below the frame.
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("reading past a 60 MiB frame allocated %d bytes, want at most 256 KiB", got)
	}
	if testing.Verbose() {
		t.Logf("allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
	}
}

// refDiscard is refParse for a Reader set with DiscardTooLarge(head): a
// frame over max and within the discard limit (and, as the first frame,
// not another protocol's opening) is a refFrame with its kind, the first
// head bytes of its envelope and tooLarge set.
func refDiscard(stream []byte, max, head int, http bool) ([]refFrame, []bool, error) {
	var out []refFrame
	var over []bool
	hl := 5
	if http {
		hl = 4
	}
	first := true
	for {
		if len(stream) == 0 {
			return out, over, io.EOF
		}
		if len(stream) < 4 {
			return out, over, io.ErrUnexpectedEOF
		}
		var n uint32
		if http {
			n = binary.BigEndian.Uint32(stream)
		} else {
			n = binary.LittleEndian.Uint32(stream)
			if n == 0 {
				return out, over, ErrEmptyFrame
			}
		}
		big := uint64(n) > uint64(max)
		if big && (uint64(n) > max64(DiscardLimit, 4*uint64(max)) || first && !http && foreignProtocol(stream) != "") {
			return out, over, ErrFrameTooLarge
		}
		first = false
		if len(stream) < hl {
			return out, over, io.ErrUnexpectedEOF
		}
		var kind byte
		if !http {
			kind = stream[4]
		}
		body := int(n)
		if !http {
			body--
		}
		if big {
			h := min(body, head)
			if len(stream) < hl+h {
				return out, over, io.ErrUnexpectedEOF
			}
			out = append(out, refFrame{kind, stream[hl : hl+h]})
			over = append(over, true)
			if len(stream) < hl+body {
				return out, over, io.ErrUnexpectedEOF
			}
			stream = stream[hl+body:]
			continue
		}
		if len(stream) < hl+body {
			return out, over, io.ErrUnexpectedEOF
		}
		out = append(out, refFrame{kind, stream[hl : hl+body]})
		over = append(over, false)
		stream = stream[hl+body:]
	}
}

func max64(a, b uint64) uint64 { return max(a, b) }

// FuzzReaderDiscard is FuzzReader for a Reader that reads past frames over
// its maximum (DiscardTooLarge): the frames and refusals of refDiscard, the
// same final error class, and memory that follows the bytes received.
func FuzzReaderDiscard(f *testing.F) {
	for _, s := range fuzzSeeds() {
		for _, http := range []bool{false, true} {
			f.Add(s, uint16(16), uint16(8), uint8(4), http, false)
			f.Add(s, uint16(100), uint16(200), uint8(64), http, true)
		}
	}
	f.Add(cat(le(300), []byte{1}, make([]byte, 299), le(2), []byte{2, 3}), uint16(64), uint16(100), uint8(16), false, true)
	f.Fuzz(func(t *testing.T, stream []byte, bufSize, maxSize uint16, head uint8, http, oneByte bool) {
		limit := max(int(maxSize), 1)
		h := max(int(head), 1)
		want, over, wantErr := refDiscard(stream, limit, h, http)
		r, cr := fuzzReader(stream, bufSize, limit, http, oneByte)
		r.DiscardTooLarge(h)
		wait := bufSize%2 == 1
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
				if ready, slow := r.Ready(), r.ready(); ready != slow {
					t.Fatalf("before frame %d: Ready %v, general %v", i, ready, slow)
				}
				kind, p, err = r.Next()
			}
			if hb := r.Held(); hb > heldBound(cr.n) || hb > max(r.rsize, 4+r.max) {
				t.Fatalf("holds %d bytes after receiving %d", hb, cr.n)
			}
			var tl *TooLargeError
			if errors.As(err, &tl) {
				if i >= len(want) || !over[i] || kind != want[i].kind || !bytes.Equal(p, want[i].payload) {
					t.Fatalf("refusal %d: kind %d %x; reference %d frames", i, kind, p, len(want))
				}
				continue
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
			if i >= len(want) || over[i] {
				t.Fatalf("frame %d: reference has %d frames (refused: %v)", i, len(want), i < len(over) && over[i])
			}
			if kind != want[i].kind || !bytes.Equal(p, want[i].payload) {
				t.Fatalf("frame %d: kind %d %x, reference %d %x", i, kind, p, want[i].kind, want[i].payload)
			}
		}
	})
}

// TestDiscardTooLargeAtLimit: a length of exactly DiscardLimit (over the
// default maximum) is read past, and the frame after it returned; one
// byte more breaks the Reader (TestDiscardTooLargeLimits).
func TestDiscardTooLargeAtLimit(t *testing.T) {
	t.Parallel()
	body := &zeroSource{n: DiscardLimit - 3}
	src := io.MultiReader(bytes.NewReader(cat(le(DiscardLimit), []byte{1, 2, 3})), body, bytes.NewReader(cat(le(2), []byte{5, 6})))
	fr := NewReader(src)
	fr.DiscardTooLarge(2)
	var tl *TooLargeError
	if k, p, err := fr.Next(); !errors.As(err, &tl) || k != 1 || string(p) != "\x02\x03" || tl.Len != DiscardLimit {
		t.Fatalf("length DiscardLimit: %d %q %v", k, p, err)
	}
	if k, p, err := fr.Next(); err != nil || k != 5 || string(p) != "\x06" {
		t.Fatalf("the frame after it: %d %q %v", k, p, err)
	}
	if body.n != 0 {
		t.Fatalf("%d bytes of the frame left unread", body.n)
	}
}
