package frame

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
)

// Payload sizes of the benchmarks.
var benchBufSize = DefaultBufferSize

var benchSizes = []int{64, 512, 4 << 10, 16 << 10, 64 << 10, 1 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// benchStream returns whole frames of the given payload size, at least
// 1 MiB of them, so that a replay crosses buffer boundaries.
func benchStream(size int) []byte {
	frame := make([]byte, 5+size)
	binary.LittleEndian.PutUint32(frame, uint32(size+1))
	frame[4] = 1
	for i := range frame[5:] {
		frame[5+i] = byte(i)
	}
	var s []byte
	for len(s) < 1<<20 || len(s) < 4*len(frame) {
		s = append(s, frame...)
	}
	return s
}

// loopReader replays one stream forever, without allocating.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		r.off = 0
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

func reportFrames(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// sink is an io.Writer without ReadFrom, so io.CopyBuffer really copies
// through the given buffer.
type sink struct{ n int }

func (s *sink) Write(p []byte) (int, error) { s.n += len(p); return len(p), nil }

// tcpSource returns the reading end of a loopback TCP connection whose
// other end replays stream until the connection is closed.
func tcpSource(b *testing.B, stream []byte) net.Conn {
	client, server := tcpPair(b)
	go func() {
		for {
			if _, err := client.Write(stream); err != nil {
				return
			}
		}
	}()
	return server
}

// tcpSink returns the writing end of a loopback TCP connection whose other
// end discards everything.
func tcpSink(b *testing.B) net.Conn {
	client, server := tcpPair(b)
	go io.Copy(io.Discard, server)
	return client
}

type transport struct {
	name   string
	source func(b *testing.B, stream []byte) io.Reader
	sink   func(b *testing.B) io.Writer
}

var transports = []transport{
	{"mem",
		func(b *testing.B, stream []byte) io.Reader { return &loopReader{data: stream} },
		func(b *testing.B) io.Writer { return io.Discard }},
	{"tcp",
		func(b *testing.B, stream []byte) io.Reader { return tcpSource(b, stream) },
		func(b *testing.B) io.Writer { return tcpSink(b) }},
}

// BenchmarkRead: Reader.Next, one frame per op.
func BenchmarkRead(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				r := NewReader(tr.source(b, benchStream(size)), WithBufferSize(benchBufSize))
				r.Next()
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, p, err := r.Next(); err != nil || len(p) != size {
						b.Fatalf("Next: %d bytes, %v", len(p), err)
					}
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkReadFloorCopy is the floor: io.CopyBuffer of the same bytes
// through a 64 KiB buffer, no framing.
func BenchmarkReadFloorCopy(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				lr := &io.LimitedReader{R: tr.source(b, benchStream(size))}
				dst := &sink{}
				buf := make([]byte, DefaultBufferSize)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lr.N = int64(5 + size)
					if _, err := io.CopyBuffer(dst, lr, buf); err != nil {
						b.Fatal(err)
					}
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkReadFloorCopyAhead is the floor of a reader that reads ahead:
// io.CopyBuffer of the same bytes as BenchmarkReadFloorCopy, but as many
// whole frames at a time as fit in its 64 KiB buffer (one op is still one
// frame). A frame is then copied among its neighbours into a buffer 16
// times its size, where BenchmarkReadFloorCopy copies each one alone into
// the same warm 4 KiB: in memory that alone costs 4 KiB frames about a
// fifth more.
func BenchmarkReadFloorCopyAhead(b *testing.B) {
	for _, tr := range transports[:1] { // mem: over TCP every read is a syscall
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				lr := &io.LimitedReader{R: tr.source(b, benchStream(size))}
				dst := &sink{}
				buf := make([]byte, DefaultBufferSize)
				ahead := max(1, DefaultBufferSize/(5+size))
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += ahead {
					lr.N = int64(min(ahead, b.N-i) * (5 + size))
					if _, err := io.CopyBuffer(dst, lr, buf); err != nil {
						b.Fatal(err)
					}
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkReadFloorHand is the floor: the 5-byte header and the body read
// by hand with io.ReadFull from a bufio.Reader of the same size into a
// preallocated buffer.
func BenchmarkReadFloorHand(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				br := bufio.NewReaderSize(tr.source(b, benchStream(size)), DefaultBufferSize)
				var hdr [5]byte
				body := make([]byte, size)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						b.Fatal(err)
					}
					n := int(binary.LittleEndian.Uint32(hdr[:])) - 1
					if _, err := io.ReadFull(br, body[:n]); err != nil {
						b.Fatal(err)
					}
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkWrite: Writer.WriteFrame per op, Flush whenever 32 KiB are
// buffered (a server coalescing answers).
func BenchmarkWrite(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				w := NewWriter(tr.sink(b))
				payload := make([]byte, size)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := w.WriteFrame(1, payload); err != nil {
						b.Fatal(err)
					}
					if w.Buffered() >= 32<<10 {
						if err := w.Flush(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkWriteBeginEnd: the append path, payload appended into the
// output buffer (as an encoder would), same flushing as BenchmarkWrite.
func BenchmarkWriteBeginEnd(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				w := NewWriter(tr.sink(b))
				payload := make([]byte, size)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					buf := w.Begin(1)
					buf = append(buf, payload...)
					if err := w.End(buf); err != nil {
						b.Fatal(err)
					}
					if w.Buffered() >= 32<<10 {
						if err := w.Flush(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkWriteFloorCopy is the floor: io.CopyBuffer of the same bytes
// (prebuilt frames) to the destination, no framing work.
func BenchmarkWriteFloorCopy(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				var dst io.Writer = struct{ io.Writer }{tr.sink(b)} // hide ReadFrom
				lr := &io.LimitedReader{R: &loopReader{data: benchStream(size)}}
				buf := make([]byte, DefaultBufferSize)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lr.N = int64(5 + size)
					if _, err := io.CopyBuffer(dst, lr, buf); err != nil {
						b.Fatal(err)
					}
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkWriteFloorHand is the floor: header and payload appended by hand
// to a byte slice, written whenever 32 KiB are pending, like
// BenchmarkWrite but without the Writer.
func BenchmarkWriteFloorHand(b *testing.B) {
	for _, tr := range transports {
		for _, size := range benchSizes {
			b.Run(tr.name+"/"+sizeName(size), func(b *testing.B) {
				dst := tr.sink(b)
				payload := make([]byte, size)
				buf := make([]byte, 0, DefaultBufferSize+5+size)
				b.SetBytes(int64(5 + size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					buf = binary.LittleEndian.AppendUint32(buf, uint32(size+1))
					buf = append(buf, 1)
					buf = append(buf, payload...)
					if len(buf) >= 32<<10 {
						if _, err := dst.Write(buf); err != nil {
							b.Fatal(err)
						}
						buf = buf[:0]
					}
				}
				if _, err := dst.Write(buf); err != nil {
					b.Fatal(err)
				}
				reportFrames(b)
			})
		}
	}
}

// BenchmarkPingPong: one frame to an echo server over loopback TCP and its
// echo back, one at a time (a unary call's frames without rpc): the
// Readers start every frame with nothing buffered.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{64, 4 << 10, 64 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			client, server := tcpPair(b)
			go func() {
				r, w := NewReader(server), NewWriter(server)
				for {
					kind, p, err := r.Next()
					if err != nil {
						return
					}
					if w.WriteFrame(kind, p) != nil || w.Flush() != nil {
						return
					}
				}
			}()
			r, w := NewReader(client), NewWriter(client)
			payload := make([]byte, size)
			b.SetBytes(int64(2 * (5 + size)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.WriteFrame(1, payload); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				if _, p, err := r.Next(); err != nil || len(p) != size {
					b.Fatalf("echo: %d bytes, %v", len(p), err)
				}
			}
		})
	}
}
