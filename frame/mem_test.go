package frame

import (
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"
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
