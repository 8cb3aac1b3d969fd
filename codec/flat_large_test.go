//go:build amd64 || arm64

// The sizes below are int constants past 4 GiB: 64-bit platforms only.

package codec_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

// panicValue returns what f panics with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestAppendFlatPast4GiB: a message's size field and a text slot's offset
// and length have 32 bits. AppendFlat of a message of 4 GiB or more wrote
// its size modulo 4 GiB into the header, and AppendTail of a value 4 GiB
// past its slot wrote the offset modulo 4 GiB, both silently; they must
// panic with an error that wraps ErrBuilder, before appending anything.
// The buffers are mapped address space (internal/bigbuf) with the spare
// capacity for the messages, so nothing is allocated and only the pages
// written are touched.
func TestAppendFlatPast4GiB(t *testing.T) {
	const gib = 1 << 30
	space := bigbuf.New(t, 4*gib+64)
	checkPanic := func(t *testing.T, what string, f func()) {
		t.Helper()
		v := panicValue(f)
		err, ok := v.(error)
		if !ok || !errors.Is(err, codec.ErrBuilder) {
			t.Fatalf("%s: panic %v, want an error that wraps ErrBuilder", what, v)
		}
	}
	t.Run("AppendFlat", func(t *testing.T) {
		dst := space[:0]
		// 16 + 8 + tails: one byte past 4 GiB - 1, and far past it.
		for _, tails := range []int{4*gib - 24, 5 * gib} {
			checkPanic(t, "AppendFlat", func() { dst, _ = codec.AppendFlat(dst, 8, tails) })
			if len(dst) != 0 {
				t.Fatalf("AppendFlat appended %d bytes before it refused", len(dst))
			}
		}
		// The largest message fits.
		msg, o := codec.AppendFlat(dst, 8, 4*gib-25)
		if o != 16 || len(msg) != 24 {
			t.Fatalf("AppendFlat of 4 GiB - 1: fixed section at %d, length %d", o, len(msg))
		}
		if m, err := codec.Parse(msg[:4*gib-1]); err != nil || m.Size() != 4*gib-1 {
			t.Fatalf("AppendFlat of 4 GiB - 1: Parse %v, size %d", err, m.Size())
		}
	})
	t.Run("AppendTail", func(t *testing.T) {
		msg, o := codec.AppendFlat(space[:0], 8, 0)
		dst := msg[:o+4*gib] // the value would start 4 GiB past the slot at o
		checkPanic(t, "AppendTail", func() { dst = codec.AppendTail(dst, o, "zap") })
		if len(dst) != o+4*gib || dst[o] != 0 {
			t.Fatal("AppendTail wrote before it refused")
		}
		checkPanic(t, "AppendTailBytes", func() { dst = codec.AppendTailBytes(dst, o, []byte("zap")) })
		// One byte nearer, it fits.
		dst = codec.AppendTail(dst[:o+4*gib-1], o, "zap")
		if len(dst) != o+4*gib+2 || dst[o] != 0xFF {
			t.Fatalf("AppendTail 4 GiB - 1 past its slot: length %d, offset byte %#x", len(dst), dst[o])
		}
	})
}

// TestGeneratedHelpersPast32Bits: the other helpers of generated code
// (records with nested objects and lists) wrote sizes, offsets and counts
// that do not fit their 32-bit words modulo 2³² (2³¹ for the signed
// offsets), silently; they must panic with an error that wraps
// ErrBuilder, writing nothing. The buffers are mapped address space
// (internal/bigbuf): only the pages written are touched.
func TestGeneratedHelpersPast32Bits(t *testing.T) {
	const gib = 1 << 30
	space := bigbuf.New(t, 4*gib+64)
	zeroAt := func(t *testing.T, what string, p []byte) {
		t.Helper()
		for i, c := range p {
			if c != 0 {
				t.Fatalf("%s wrote byte %d before it refused", what, i)
			}
		}
	}
	for _, tc := range []struct {
		name string
		f    func()
		at   int // where nothing may be written, 16 bytes from there
	}{
		{"PutHeader of 4 GiB", func() { codec.PutHeader(space[:4*gib], 0, 16) }, 0},
		{"PutObjectSlot 2 GiB ahead", func() { codec.PutObjectSlot(space, 16, 16+2*gib) }, 16},
		{"PutObjectSlot 2 GiB + 1 behind", func() { codec.PutObjectSlot(space, 2*gib+17, 16) }, 2*gib + 17},
		{"PutListSlot 2 GiB ahead", func() { codec.PutListSlot(space, 16, 16+2*gib, 1) }, 16},
		{"PutListSlot of 2^32 elements", func() { codec.PutListSlot(space, 16, 24, 1<<32) }, 16},
		{"AppendBytesElement of 4 GiB", func() { codec.AppendBytesElement(space[:0], space[:4*gib]) }, 0},
		{"AppendTextElement of 4 GiB", func() { codec.AppendTextElement(space[:0], unsafe.String(&space[0], 4*gib)) }, 0},
		{"FinishElement of 4 GiB", func() { codec.FinishElement(space[:4+4*gib], 4) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := panicValue(tc.f)
			if err, ok := v.(error); !ok || !errors.Is(err, codec.ErrBuilder) {
				t.Fatalf("panic %v, want an error that wraps ErrBuilder", v)
			}
			zeroAt(t, tc.name, space[tc.at:tc.at+16])
		})
	}
	// Just inside the limits, they write.
	codec.PutObjectSlot(space, 16, 16+2*gib-1)
	if got := space[16:20]; got[0] != 0xFF || got[3] != 0x7F {
		t.Fatalf("PutObjectSlot 2 GiB - 1 ahead wrote % x", got)
	}
	codec.PutObjectSlot(space, 2*gib+16, 16)
	if got := space[2*gib+16 : 2*gib+20]; got[0] != 0 || got[3] != 0x80 {
		t.Fatalf("PutObjectSlot 2 GiB behind wrote % x", got)
	}
}
