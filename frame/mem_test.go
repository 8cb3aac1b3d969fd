package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/pool"
)

// waitTimeout bounds every wait of these tests: a hang becomes a failure
// with a message instead of a stuck test binary. It is not a speed check.
const waitTimeout = 30 * time.Second

// gatedReader models a peer: its first Read blocks until gate is closed,
// then returns data; every later Read reports on blocked and blocks until
// done is closed (then io.EOF): a peer that sent data and went quiet.
type gatedReader struct {
	gate, done <-chan struct{}
	blocked    chan<- struct{}
	data       []byte
	first      bool
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if !g.first {
		g.first = true
		g.blocked <- struct{}{}
		<-g.gate
		n := copy(p, g.data)
		g.data = g.data[n:]
		return n, nil
	}
	if len(g.data) > 0 {
		n := copy(p, g.data)
		g.data = g.data[n:]
		return n, nil
	}
	g.blocked <- struct{}{}
	<-g.done
	return 0, io.EOF
}

func waitN(t *testing.T, ch <-chan struct{}, n int, what string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for i := 0; i < n; i++ {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: only %d of %d readers got there within %v", what, i, n, waitTimeout)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDeclaredLengthAllocatesNothing (issue 11, item 3): 256 connections
// whose peer sends a header declaring a 16 MiB frame plus one byte of its
// body, then goes quiet, cost at most 1 MiB of heap beyond the same
// Readers idle: memory follows the bytes received, never the length
// prefix. (It held 16 MiB per connection, 4 GiB in all, before.)
func TestDeclaredLengthAllocatesNothing(t *testing.T) {
	const (
		conns    = 256
		declared = 16 << 20
		bound    = 1 << 20
	)
	hdr := binary.LittleEndian.AppendUint32(nil, declared)
	hdr = append(hdr, 1, 0xAB) // kind, one byte of body
	gate, done := make(chan struct{}), make(chan struct{})
	blocked := make(chan struct{}, conns)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	readers := make([]*Reader, conns)
	for i := range readers {
		readers[i] = NewReader(&gatedReader{gate: gate, done: done, blocked: blocked, data: hdr}, WithMaxFrameSize(declared))
	}
	var openGate, end sync.Once
	defer func() {
		openGate.Do(func() { close(gate) })
		end.Do(func() { close(done) })
		wg.Wait()
	}()
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
	openGate.Do(func() { close(gate) })
	waitN(t, blocked, conns, "readers blocked after header and one body byte")
	busy := heapInUse()
	grown := int64(busy) - int64(idle)
	t.Logf("%d readers: %d B of heap beyond idle after a 16 MiB header and one body byte each (%d B per reader)",
		conns, grown, grown/conns)
	if grown > bound {
		t.Errorf("%d readers hold %d B beyond idle (%d B each); want at most %d B in all", conns, grown, grown/conns, bound)
	}
	for _, r := range readers {
		if r.Held() != 0 {
			t.Fatalf("a reader holds a pooled buffer of %d B after 6 bytes of a frame", r.Held())
		}
	}
	end.Do(func() { close(done) })
	wg.Wait()
	for range conns {
		if err := <-errs; !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Next after the stream ended inside the frame: %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

// blockingAfter returns data, then blocks until done is closed (then
// io.EOF): a peer that stopped after those bytes.
type blockingAfter struct {
	data []byte
	done <-chan struct{}
}

func (b *blockingAfter) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	<-b.done
	return 0, io.EOF
}

// TestBareHeaderErrorsAtOnce (issue 11, item 10): a length prefix of 0 is
// reported as ErrEmptyFrame as soon as its 4 bytes are in, without waiting
// for a fifth byte that a broken peer may never send; the same for a
// length above the maximum.
func TestBareHeaderErrorsAtOnce(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		opts []Option
		want error
	}{
		{"zero length", le(0), nil, ErrEmptyFrame},
		{"zero length after a frame", cat(le(2), []byte{1, 7}, le(0)), nil, ErrEmptyFrame},
		{"too large", le(1 << 30), nil, ErrFrameTooLarge},
		{"http too large", be(101), []Option{WithHTTPFraming(), WithMaxFrameSize(100)}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			defer close(done)
			r := NewReader(&blockingAfter{data: tt.in, done: done}, tt.opts...)
			res := make(chan error, 1)
			go func() {
				for {
					if _, _, err := r.Next(); err != nil {
						res <- err
						return
					}
				}
			}()
			select {
			case err := <-res:
				if !errors.Is(err, tt.want) {
					t.Fatalf("Next: %v, want %v", err, tt.want)
				}
			case <-time.After(waitTimeout):
				t.Fatalf("Next still waiting for more bytes %v after a complete header", waitTimeout)
			}
		})
	}
}

// notifyReader passes reads through to r and, once at least after bytes
// went through, reports on ch (once) when the next Read starts: the
// Reader above it is waiting for a frame that will not come.
type notifyReader struct {
	r     io.Reader
	n     int
	after int
	ch    chan<- struct{}
	sent  bool
}

func (nr *notifyReader) Read(p []byte) (int, error) {
	if nr.n >= nr.after && !nr.sent {
		nr.sent = true
		nr.ch <- struct{}{}
	}
	n, err := nr.r.Read(p)
	nr.n += n
	return n, err
}

// TestIdleConnectionsHoldNoBuffers (issue 11, item 4): after traffic,
// each side of an idle connection (a Reader blocked in Next and a Writer
// with nothing pending) holds only the two structs: no read or write
// buffer (64 KiB each before). 2,000 net.Pipe connections, each with an
// echo side and a client side, carry frames of 64 B to 70 KB and go quiet.
func TestIdleConnectionsHoldNoBuffers(t *testing.T) {
	const (
		conns = 2000
		bound = 1 << 10 // bytes per side: a Reader and a Writer
	)
	sizes := []int{64, 4000, 70000, 100}
	total := 0
	for _, s := range sizes {
		total += 5 + s
	}
	payload := make([]byte, 70000)
	type side struct {
		nc net.Conn
		r  *Reader
		w  *Writer
	}
	clients := make([]side, conns)
	servers := make([]side, conns)
	for i := range clients {
		clients[i].nc, servers[i].nc = net.Pipe()
	}
	var wg sync.WaitGroup
	defer func() {
		for i := range clients {
			clients[i].nc.Close()
			servers[i].nc.Close()
		}
		wg.Wait()
	}()
	waiting := make(chan struct{}, 2*conns)
	echoed := make(chan error, conns)
	for i := range clients {
		c, s := &clients[i], &servers[i]
		wg.Add(2)
		go func() { // echo side
			defer wg.Done()
			var b [1]byte
			if _, err := s.nc.Read(b[:]); err != nil {
				return
			}
			for {
				kind, p, err := s.r.Next()
				if err != nil {
					return
				}
				if err := s.w.WriteFrame(kind, p); err != nil {
					return
				}
				if err := s.w.Flush(); err != nil {
					return
				}
			}
		}()
		go func() { // client read side
			defer wg.Done()
			var b [1]byte
			if _, err := c.nc.Read(b[:]); err != nil {
				echoed <- err
				return
			}
			for _, want := range sizes {
				_, p, err := c.r.Next()
				if err == nil && len(p) != want {
					err = fmt.Errorf("echo of %d bytes has %d", want, len(p))
				}
				if err != nil {
					echoed <- err
					return
				}
			}
			echoed <- nil
			c.r.Next() // waits, idle, until the pipe closes
		}()
	}
	// The baseline has the pipes and the goroutines, blocked in a read of
	// the pipe as they will be at the end (net.Pipe's select holds heap
	// of its own): what follows is frame's share (and notifyReader's 48
	// bytes).
	base := heapInUse()
	for i := range clients {
		c, s := &clients[i], &servers[i]
		c.w, s.w = NewWriter(c.nc), NewWriter(s.nc)
		c.r = NewReader(&notifyReader{r: c.nc, after: total, ch: waiting})
		s.r = NewReader(&notifyReader{r: s.nc, after: total, ch: waiting})
	}
	for i := range clients { // a start byte each way
		if _, err := clients[i].nc.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
		if _, err := servers[i].nc.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clients {
		for _, n := range sizes {
			if err := clients[i].w.WriteFrame(1, payload[:n]); err != nil {
				t.Fatal(err)
			}
			if err := clients[i].w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.After(waitTimeout)
	for i := 0; i < conns; i++ {
		select {
		case err := <-echoed:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("only %d of %d connections echoed within %v", i, conns, waitTimeout)
		}
	}
	waitN(t, waiting, 2*conns, "readers waiting, idle, after traffic")
	for i := range clients {
		if h := clients[i].w.Held() + servers[i].w.Held(); h != 0 {
			t.Fatalf("connection %d: idle Writers hold %d B", i, h)
		}
	}
	idle := heapInUse()
	perSide := (int64(idle) - int64(base)) / (2 * conns)
	t.Logf("%d idle connections after traffic: %d B of heap per side (Reader %d B, Writer %d B, wrapper 48 B)", conns, perSide, unsafe.Sizeof(Reader{}), unsafe.Sizeof(Writer{}))
	if perSide > bound {
		t.Errorf("an idle side holds %d B of heap after traffic, want at most %d", perSide, bound)
	}
}

// TestSocketReaderWaitsWithoutBuffer: on a TCP connection (read through
// the socket's readiness, see rawSource) a Reader waiting for a frame
// holds no pooled buffer, even after frames of 4000 bytes that it reads
// into a pooled buffer in one go; a read deadline loses nothing, between
// frames or inside one, and the end of the stream is io.EOF.
func TestSocketReaderWaitsWithoutBuffer(t *testing.T) {
	client, server := tcpPair(t)
	w := NewWriter(client)
	r := NewReader(server)
	payload := make([]byte, 4000)
	for i := range payload {
		payload[i] = byte(i)
	}
	send := func(b []byte) {
		t.Helper()
		if _, err := client.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	var frame bytes.Buffer
	fw := NewWriter(&frame)
	fw.WriteFrame(3, payload)
	fw.Flush()
	for i := 0; i < 3; i++ {
		if err := w.WriteFrame(3, payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if kind, p, err := r.Next(); err != nil || kind != 3 || !bytes.Equal(p, payload) {
			t.Fatalf("frame %d: kind %d, %d bytes, %v", i, kind, len(p), err)
		}
	}
	// Between frames: the deadline strikes while Next waits.
	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Next past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if r.Held() != 0 || r.Buffered() != 0 {
		t.Fatalf("after a deadline between frames: holds %d B, %d B buffered; want none", r.Held(), r.Buffered())
	}
	// Inside a frame: what came stays.
	send(frame.Bytes()[:105])
	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	for {
		_, _, err := r.Next()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Fatal("a frame from 105 bytes of 4005")
	}
	if r.Buffered() != 105 {
		t.Fatalf("after a deadline inside a frame: %d B buffered, want 105", r.Buffered())
	}
	server.SetReadDeadline(time.Time{})
	send(frame.Bytes()[105:])
	if kind, p, err := r.Next(); err != nil || kind != 3 || !bytes.Equal(p, payload) {
		t.Fatalf("frame resumed after the deadline: kind %d, %d bytes, %v", kind, len(p), err)
	}
	client.Close()
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after the peer closed: %v, want io.EOF", err)
	}
	if r.Held() != 0 {
		t.Fatalf("holds %d B after the end of the stream", r.Held())
	}
}

// pausingReader hands out its chunks, each in as many Reads as it takes,
// and fails with os.ErrDeadlineExceeded when it has none left: a socket
// with a read deadline whose peer pauses between bursts.
type pausingReader struct{ chunks [][]byte }

func (c *pausingReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestHeldAfterBusyPeriod pins what the package doc promises a frame in
// progress may hold: a drained Reader that receives the first 512 bytes of
// a 605-byte frame (filling its inline buffer) takes the first pooled
// buffer, 4 KiB; after a busy period that grew its read-ahead, it goes
// straight back to the read-ahead size it reached (the doc's second
// exception), which the read-ahead limit bounds.
func TestHeldAfterBusyPeriod(t *testing.T) {
	t.Parallel()
	var busy []byte // 1000 frames of 100 bytes, sent at once
	for range 1000 {
		busy = append(busy, cat(le(100), []byte{1}, make([]byte, 99))...)
	}
	part := cat(le(601), []byte{1}, make([]byte, 507)) // 512 of 605 bytes
	tests := []struct {
		name string
		busy bool
		opts []Option
		want int
	}{
		{"fresh", false, nil, minChunk},
		{"after busy period", true, nil, DefaultBufferSize},
		{"after busy period, 16 KiB read-ahead", true, []Option{WithBufferSize(16 << 10)}, 16 << 10},
		{"fresh, 16 KiB read-ahead", false, []Option{WithBufferSize(16 << 10)}, minChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &pausingReader{}
			r := NewReader(src, tt.opts...)
			r.bodies = new(pool.SizedPool) // capacities exactly as asked
			if tt.busy {
				src.chunks = [][]byte{busy}
				for i := 0; ; i++ {
					if _, _, err := r.Next(); err != nil {
						if !errors.Is(err, os.ErrDeadlineExceeded) || i != 1000 {
							t.Fatalf("after %d frames: %v", i, err)
						}
						break
					}
				}
				if r.Buffered() != 0 || r.raCap != r.rsize {
					t.Fatalf("busy period left %d bytes buffered, read-ahead %d of %d", r.Buffered(), r.raCap, r.rsize)
				}
			}
			src.chunks = [][]byte{part}
			if _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Next = %v, want the deadline", err)
			}
			if h := r.Held(); h != tt.want || h > max(heldBound(len(part)), r.rsize) {
				t.Fatalf("holds %d bytes after 512 bytes of a frame, want %d", h, tt.want)
			}
		})
	}
}

// A frame the Writer refuses (too large, or an End with a buffer that is
// not Begin's) leaves an empty Writer holding no buffer, as a write that
// leaves nothing pending does: it used to keep the buffer Begin or the
// refused frame had taken, so an idle Writer held 512 bytes or more until
// its next write. Frames pending before the refusal keep theirs.
func TestWriterRefusedFrameHoldsNothing(t *testing.T) {
	t.Parallel()
	refusals := []struct {
		name string
		do   func(w *Writer) error
	}{
		{"WriteFrame too large", func(w *Writer) error { return w.WriteFrame(1, make([]byte, 20)) }},
		{"WriteFrameParts too large", func(w *Writer) error { return w.WriteFrameParts(1, nil, make([]byte, 20)) }},
		{"Begin, WriteFrame too large", func(w *Writer) error {
			w.Begin(1)
			return w.WriteFrame(1, make([]byte, 20))
		}},
		{"End too large", func(w *Writer) error {
			buf := w.Begin(1)
			return w.End(append(buf, make([]byte, 20)...))
		}},
		{"End truncated", func(w *Writer) error {
			buf := w.Begin(1)
			return w.End(buf[:len(buf)-1])
		}},
		{"End not Begin's", func(w *Writer) error {
			buf := w.Begin(1)
			return w.End(make([]byte, len(buf)))
		}},
	}
	for _, tt := range refusals {
		var out bytes.Buffer
		w := NewWriter(&out, WithMaxFrameSize(10))
		if err := tt.do(w); !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrNoBegin) {
			t.Fatalf("%s: %v, want a refusal", tt.name, err)
		}
		if h := w.Held(); h != 0 {
			t.Errorf("%s: an empty Writer holds %d bytes after the refusal", tt.name, h)
		}
		// With a frame pending, the refusal keeps it (and its buffer).
		if err := w.WriteFrame(2, []byte("ok")); err != nil {
			t.Fatal(err)
		}
		if err := tt.do(w); err == nil {
			t.Fatalf("%s: no refusal with a frame pending", tt.name)
		}
		if w.Held() == 0 || w.Buffered() != 7 {
			t.Fatalf("%s: with a frame pending: held %d, buffered %d, want the frame's 7 bytes kept", tt.name, w.Held(), w.Buffered())
		}
		if err := w.Flush(); err != nil || !bytes.Equal(out.Bytes(), cat(le(3), []byte{2}, []byte("ok"))) {
			t.Fatalf("%s: wrote %x (%v)", tt.name, out.Bytes(), err)
		}
	}
}

// A broken Writer gives back the buffer its Begin took once the begun
// frame is abandoned (Begin hands the caller a buffer even when the stream
// has failed; End reports the error): it used to keep it when a Flush,
// WriteFrame or WriteFrameParts abandoned the frame and returned the
// stream's error, so a dead connection's Writer held 512 bytes or more.
func TestBrokenWriterHoldsNothing(t *testing.T) {
	t.Parallel()
	for _, next := range []struct {
		name string
		do   func(w *Writer) error
	}{
		{"Flush", func(w *Writer) error { return w.Flush() }},
		{"WriteFrame", func(w *Writer) error { return w.WriteFrame(1, []byte("x")) }},
		{"WriteFrameParts", func(w *Writer) error { return w.WriteFrameParts(1, []byte("x"), nil) }},
	} {
		w := NewWriter(&failWriter{limit: 3})
		if err := w.WriteFrame(1, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); !errors.Is(err, errBoom) {
			t.Fatalf("Flush = %v, want boom", err)
		}
		w.Begin(2)
		if err := next.do(w); !errors.Is(err, errBoom) {
			t.Fatalf("Begin, %s: %v, want the sticky boom", next.name, err)
		}
		if h := w.Held(); h != 0 {
			t.Errorf("Begin, %s on a broken Writer: holds %d bytes", next.name, h)
		}
	}
}
