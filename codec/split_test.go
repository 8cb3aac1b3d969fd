package codec_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/zapcodec/zapcodec/codec"
)

// splitSample returns a small message with a text root field.
func splitSample(t testing.TB, text string) []byte {
	t.Helper()
	var b codec.Builder
	b.Reset(nil)
	o := b.StartObject(8)
	o.SetText(0, text)
	b.SetRoot(o.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), msg...)
}

// header returns a 16-byte header with the given version and size.
func header(version uint16, size uint32) []byte {
	h := []byte("ZAP\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00")
	binary.LittleEndian.PutUint16(h[4:], version)
	binary.LittleEndian.PutUint32(h[12:], size)
	return h
}

func TestSplitBackToBack(t *testing.T) {
	a, b := splitSample(t, "first"), splitSample(t, "second, longer")
	stream := append(append(append([]byte(nil), a...), b...), 0xAA)
	msg, rest, err := codec.Split(stream)
	if err != nil || !bytes.Equal(msg, a) || cap(msg) != len(a) {
		t.Fatalf("first: %x (cap %d), %v; want %x", msg, cap(msg), err, a)
	}
	if m, err := codec.Parse(msg); err != nil || m.Root().Text(0) != "first" {
		t.Fatalf("Parse(first) = %q, %v", m.Root().Text(0), err)
	}
	msg, rest, err = codec.Split(rest)
	if err != nil || !bytes.Equal(msg, b) || !bytes.Equal(rest, []byte{0xAA}) {
		t.Fatalf("second: %x, rest %x, %v", msg, rest, err)
	}
	// Appending to msg copies: the byte after it is untouched.
	_ = append(msg, 1)
	if rest[0] != 0xAA {
		t.Fatal("append to msg wrote over rest")
	}
	// The last byte cannot start a message: 0xAA is not 'Z'.
	if _, _, err := codec.Split(rest); !errors.Is(err, codec.ErrMagic) {
		t.Fatalf("Split(%x) = %v, want ErrMagic", rest, err)
	}
	// A message exactly the size of b: rest is empty, not nil-checked.
	if msg, rest, err := codec.Split(a); err != nil || len(msg) != len(a) || len(rest) != 0 {
		t.Fatalf("Split(one message) = %d, %d, %v", len(msg), len(rest), err)
	}
}

func TestSplitErrors(t *testing.T) {
	msg := splitSample(t, "x")
	for _, tc := range []struct {
		name   string
		b      []byte
		err    error
		offset int
		reason string
	}{
		{"nil", nil, codec.ErrShort, 0, "need 16 bytes, have 0"},
		{"magic prefix", []byte("ZA"), codec.ErrShort, 2, "need 16 bytes, have 2"},
		{"magic and version", header(2, 64)[:6], codec.ErrShort, 6, "need 16 bytes, have 6"},
		{"header short", msg[:15], codec.ErrShort, 15, "need 16 bytes, have 15"},
		{"body short", msg[:len(msg)-1], codec.ErrShort, len(msg) - 1, "have"},
		{"huge size field", header(1, 0xFFFFFFFF), codec.ErrShort, 16, "message of 4294967295 bytes (its size field), have 16"},
		{"bad magic short", []byte("ZB"), codec.ErrMagic, 1, "found 5a 42"},
		{"bad magic", []byte("HTTP/1.1 200 OK\r\n"), codec.ErrMagic, 0, "found 48 54 54 50"},
		{"bad version short", header(3, 16)[:6], codec.ErrVersion, 4, "version 3"},
		{"bad version low byte", header(0x30, 16)[:5], codec.ErrVersion, 4, "version 48"},
		{"version low byte", header(2, 16)[:5], codec.ErrShort, 5, "have 5"},
		{"bad version", header(0, 16), codec.ErrVersion, 4, "version 0"},
		{"size below header", header(1, 15), codec.ErrTooSmall, 12, "size 15"},
		{"size zero", append(header(1, 0), make([]byte, 32)...), codec.ErrTooSmall, 12, "size 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, rest, err := codec.Split(tc.b)
			var pe *codec.ParseError
			if !errors.Is(err, tc.err) || !errors.As(err, &pe) || pe.Offset != tc.offset ||
				!strings.Contains(pe.Reason, tc.reason) {
				t.Fatalf("Split(%x) = %v (%+v), want %v at %d, reason with %q", tc.b, err, pe, tc.err, tc.offset, tc.reason)
			}
			if msg != nil || !bytes.Equal(rest, tc.b) {
				t.Fatalf("failed Split returned msg %x, rest %x", msg, rest)
			}
		})
	}
	// A header of exactly 16 bytes with size 16 is a whole (empty) message.
	if msg, rest, err := codec.Split(header(1, 16)); err != nil || len(msg) != 16 || len(rest) != 0 {
		t.Fatalf("Split(empty message) = %d, %d, %v", len(msg), len(rest), err)
	}
}

// TestSplitAgreesWithParse: Split succeeds exactly where Parse does, with
// the same size, and fails with Parse's sentinel except where Parse's
// ErrTooSmall is Split's ErrShort (more bytes may come).
func TestSplitAgreesWithParse(t *testing.T) {
	msg := splitSample(t, "agree")
	for n := range len(msg) + 1 {
		b := msg[:n]
		m, perr := codec.Parse(b)
		got, _, serr := codec.Split(b)
		switch {
		case (perr == nil) != (serr == nil):
			t.Fatalf("len %d: Parse %v, Split %v", n, perr, serr)
		case perr == nil && m.Size() != len(got):
			t.Fatalf("len %d: Parse size %d, Split %d", n, m.Size(), len(got))
		case perr != nil && !errors.Is(serr, codec.ErrShort):
			t.Fatalf("len %d: Split %v, want ErrShort (Parse %v)", n, serr, perr)
		}
	}
}

func TestScanMessages(t *testing.T) {
	msgs := [][]byte{splitSample(t, "a"), splitSample(t, strings.Repeat("b", 300)), splitSample(t, "")}
	stream := bytes.Join(msgs, nil)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"data+err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			sc := bufio.NewScanner(r())
			sc.Split(codec.ScanMessages)
			i := 0
			for ; sc.Scan(); i++ {
				if i >= len(msgs) || !bytes.Equal(sc.Bytes(), msgs[i]) {
					t.Fatalf("message %d: %x", i, sc.Bytes())
				}
			}
			if err := sc.Err(); err != nil || i != len(msgs) {
				t.Fatalf("%d messages, err %v", i, err)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		sc := bufio.NewScanner(bytes.NewReader(stream[:len(stream)-1]))
		sc.Split(codec.ScanMessages)
		n := 0
		for sc.Scan() {
			n++
		}
		err := sc.Err()
		var pe *codec.ParseError
		if n != 2 || !errors.Is(err, codec.ErrShort) || !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &pe) {
			t.Fatalf("%d messages, err %v", n, err)
		}
		if want := len(msgs[2]) - 1; pe.Offset != want {
			t.Fatalf("offset %d, want %d (in the last message)", pe.Offset, want)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		sc := bufio.NewScanner(io.MultiReader(bytes.NewReader(msgs[0]), strings.NewReader("GET / HTTP/1.1\r\n")))
		sc.Split(codec.ScanMessages)
		n := 0
		for sc.Scan() {
			n++
		}
		if err := sc.Err(); n != 1 || !errors.Is(err, codec.ErrMagic) {
			t.Fatalf("%d messages, err %v", n, err)
		}
	})
	t.Run("size field past the buffer", func(t *testing.T) {
		// A header that claims 4 GiB: the scanner's buffer grows with what
		// it read, up to its maximum, then the scan stops.
		sc := bufio.NewScanner(io.MultiReader(bytes.NewReader(header(1, 0xFFFFFFFF)), bytes.NewReader(make([]byte, 1<<20))))
		sc.Buffer(nil, 4096)
		sc.Split(codec.ScanMessages)
		if sc.Scan() || !errors.Is(sc.Err(), bufio.ErrTooLong) {
			t.Fatalf("scan of a 4 GiB claim: %v", sc.Err())
		}
	})
}
