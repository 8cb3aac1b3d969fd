package frame

import "math"

// Defaults of the options.
const (
	// DefaultMaxFrameSize is the largest length prefix accepted or written
	// unless WithMaxFrameSize says otherwise: 16 MiB. (The canonical runtime
	// refuses frames over 64 MiB; a lower limit here bounds the memory one
	// peer can make us commit.)
	DefaultMaxFrameSize = 16 << 20

	// DefaultBufferSize is the Reader's read-ahead limit and the size at
	// which the Writer's coalescing buffer is written out by itself: 64
	// KiB. Both buffers are pooled and held only while data flows (see
	// "Memory" and "Defaults" in the package doc): an idle connection does
	// not pay for them, and a Reader reaches the limit only by growth on a
	// busy stream. A frame larger than a quarter of it is read exactly into
	// a buffer of its own.
	DefaultBufferSize = 64 << 10

	// DefaultWritevThreshold is the payload size from which
	// Writer.WriteFrame stops copying the payload and writes it after the
	// pending bytes and its header, in one writev on a TCP or Unix socket
	// (two Writes on any other writer): 64 KiB.
	DefaultWritevThreshold = 64 << 10

	// minBufferSize is the smallest buffer size accepted.
	minBufferSize = 16

	// maxSize caps the maximum frame size and the buffer size: 2^32-1,
	// the largest length a u32 prefix can carry, where an int has 64
	// bits; where it has 32, 2^27-1 (128 MiB), so that the Reader's sums
	// and products of lengths (a header plus a length, a buffer grown
	// growFactor times and doubled) stay below math.MaxInt.
	maxSize = min(math.MaxUint32, math.MaxInt>>4)
)

// Option configures a Reader or a Writer (see [NewReader], [NewWriter]).
// Options that concern only one of them are ignored by the other. An
// Option is a value: the same one may configure any number of Readers and
// Writers, and package rpc passes Options through to its connections
// (rpc.WithFrameOptions). Options are given by the With functions of this
// package; package rpc's options have the same shape.
type Option interface{ applyFrame(*options) }

// optionFunc is an Option that sets options with a function.
type optionFunc func(*options)

func (f optionFunc) applyFrame(o *options) { f(o) }

type options struct {
	maxFrameSize    int
	bufferSize      int
	writevThreshold int
	http            bool
}

func buildOptions(opts []Option) options {
	o := options{
		maxFrameSize:    DefaultMaxFrameSize,
		bufferSize:      DefaultBufferSize,
		writevThreshold: DefaultWritevThreshold,
	}
	for _, f := range opts {
		if f != nil {
			f.applyFrame(&o)
		}
	}
	return o
}

// WithMaxFrameSize sets the largest accepted value of the length prefix
// (kind byte included in the default format). Reader.Next fails with
// ErrFrameTooLarge on a larger header before reading the body; the Writer
// refuses to write a larger frame. n <= 0 means DefaultMaxFrameSize (16 MiB);
// n is capped at 2^32-1, the largest length a u32 prefix can carry (at
// 2^27-1, 128 MiB, where an int has 32 bits).
func WithMaxFrameSize(n int) Option {
	return optionFunc(func(o *options) {
		switch {
		case n <= 0:
			n = DefaultMaxFrameSize
		case n > maxSize:
			n = maxSize
		}
		o.maxFrameSize = n
	})
}

// WithBufferSize sets the Reader's read-ahead limit (the largest buffer it
// reads a busy stream of frames into; frames larger than a quarter of it
// are read exactly into a buffer of their own) and the size at which the Writer's coalescing
// buffer is written out by itself. Default DefaultBufferSize (64 KiB);
// n <= 0 means the default, values below 16 are raised to 16, and values
// are capped as WithMaxFrameSize caps them. It sets no buffer up front:
// buffers are pooled and taken as bytes flow.
func WithBufferSize(n int) Option {
	return optionFunc(func(o *options) {
		switch {
		case n <= 0:
			n = DefaultBufferSize
		case n < minBufferSize:
			n = minBufferSize
		case n > maxSize:
			n = maxSize
		}
		o.bufferSize = n
	})
}

// WithWritevThreshold sets the payload size from which Writer.WriteFrame
// writes the payload without copying it into its buffer: with its header
// in one writev on a *net.TCPConn or *net.UnixConn, in two Writes on any
// other writer (see [Writer]). Default DefaultWritevThreshold
// (64 KiB); n <= 0 means the default. Reader ignores it.
func WithWritevThreshold(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			n = DefaultWritevThreshold
		}
		o.writevThreshold = n
	})
}

// WithHTTPFraming selects the ZAP-over-HTTP framing: a big-endian u32 length
// followed by that many bytes of message, with no kind byte (docs/wire.md §7).
// Reader.Next then always reports kind 0 and accepts a length of 0 (an empty
// message); Writer ignores the kind it is given. The default is the
// canonical transport frame: little-endian u32 length, kind byte, envelope.
func WithHTTPFraming() Option {
	return optionFunc(func(o *options) { o.http = true })
}
